#!/usr/bin/env bash
# The local full stack: Postgres + Redis (the machine's own), milvus-lite server, the Ray Serve
# MemListener app, a Celery worker and the Django server, all on 127.0.0.1, run by honcho
# from Procfile.stack. Wiring: docker/stack.env (every value overridable from the environment).
#
#   scripts/stack.sh up      start in the background, wait until every tier answers
#   scripts/stack.sh demo    run `manage.py demo` over HTTP against the running stack
#   scripts/stack.sh down    stop the stack (honcho stops each process group)
#   scripts/stack.sh run     foreground (Ctrl-C stops everything)
#   scripts/stack.sh status  which tiers answer
#   scripts/stack.sh env     print the resolved wiring
set -euo pipefail
cd "$(dirname "$0")/.."

set -a
# shellcheck source=../docker/stack.env
. docker/stack.env
set +a

PY="$STACK_VENV/bin/python"
PIDFILE="$STACK_DIR/honcho.pid"
LOG="$STACK_DIR/stack.log"

log() { printf '[stack] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

ensure_services() {
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    log "PostgreSQL is down: starting the machine's cluster"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
    for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
  fi
  pg_isready -h 127.0.0.1 -p 5432 -q || die "PostgreSQL does not answer on 127.0.0.1:5432"
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    log "Redis is down: starting it"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
  fi
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || die "Redis does not answer on 127.0.0.1:6379"
}

ensure_database() {
  local exists
  exists=$(psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$STACK_DB'")
  if [[ "$exists" != "1" ]]; then
    log "creating database $STACK_DB"
    createdb -h 127.0.0.1 -U postgres "$STACK_DB"
  fi
  "$PY" manage.py migrate --noinput >/dev/null
}

# The Serve config the stack runs: STACK_SERVE_CONFIG with its HTTP proxy on 127.0.0.1:STACK_SERVE_PORT
# and STACK_SERVE_ARGS_JSON merged into every application's args (docker/serve_config.py).
write_serve_config() {
  [[ -f "$STACK_SERVE_CONFIG" ]] || die "no Serve config at $STACK_SERVE_CONFIG (STACK_SERVE_CONFIG)"
  "$PY" docker/serve_config.py "$STACK_SERVE_CONFIG" "$STACK_DIR/serve.yaml" \
    --host 127.0.0.1 --port "$STACK_SERVE_PORT" --args-json "$STACK_SERVE_ARGS_JSON"
}

running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

# Prints which tiers answer; exit status 0 only when all do.
probe() {
  "$PY" - <<'EOF'
import json, os, socket, sys, urllib.error, urllib.request

def http(url):
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return None, ""

def tcp(port):
    try:
        socket.create_connection(("127.0.0.1", port), 2).close()
        return True
    except OSError:
        return False

env = os.environ
status, body = http(f"http://127.0.0.1:{env['STACK_SERVE_PORT']}/-/routes")
checks = {
    "milvus": tcp(int(env["STACK_MILVUS_PORT"])),
    "memlistener": status == 200 and "/memlistener" in body,
    "web": (http(f"http://127.0.0.1:{env['STACK_WEB_PORT']}/api/schema/")[0] or 600) < 500,
}
try:
    from celery import Celery
    replies = Celery(broker=env["CELERY_BROKER_URL"]).control.ping(timeout=2.0)
    checks["worker"] = any(f"stack-{env['STACK_WEB_PORT']}@" in name for r in replies for name in r)
except Exception:
    checks["worker"] = False
print(json.dumps(checks))
sys.exit(0 if all(checks.values()) else 1)
EOF
}

cmd_up() {
  running && die "already running (pid $(cat "$PIDFILE")); scripts/stack.sh down first"
  ensure_services
  mkdir -p "$STACK_DIR/milvus" "$PERSONATREE_DATA_DIR" "$RAY_TMPDIR"
  ensure_database
  write_serve_config
  log "starting honcho (log: $LOG)"
  setsid "$STACK_VENV/bin/honcho" -e /dev/null -f Procfile.stack start >"$LOG" 2>&1 < /dev/null &
  echo $! >"$PIDFILE"
  local deadline=$((SECONDS + STACK_TIMEOUT_S)) last=""
  while ((SECONDS < deadline)); do
    running || { tail -n 40 "$LOG" >&2; rm -f "$PIDFILE"; die "the stack exited while starting"; }
    if last=$(probe); then
      log "up: $last"
      log "web http://127.0.0.1:$STACK_WEB_PORT  memlistener http://127.0.0.1:$STACK_SERVE_PORT/memlistener"
      return 0
    fi
    sleep 2
  done
  log "not ready after ${STACK_TIMEOUT_S}s: $last"
  tail -n 40 "$LOG" >&2
  cmd_down
  exit 1
}

cmd_down() {
  if ! running; then log "not running"; rm -f "$PIDFILE"; return 0; fi
  local pid
  pid=$(cat "$PIDFILE")
  log "stopping honcho (pid $pid)"
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && die "honcho (pid $pid) did not stop; see $LOG"
  rm -f "$PIDFILE"
  log "stopped"
}

# The same demo as `make demo`, over HTTP against the running stack (it also reads the stack's
# database directly to print the op log, hence the stack's own environment).
cmd_demo() {
  running || die "the stack is not running: scripts/stack.sh up"
  "$PY" manage.py demo --url "http://127.0.0.1:$STACK_WEB_PORT" "$@"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  demo) shift; cmd_demo "$@" ;;
  run)
    ensure_services; mkdir -p "$STACK_DIR/milvus" "$PERSONATREE_DATA_DIR" "$RAY_TMPDIR"
    ensure_database; write_serve_config
    exec "$STACK_VENV/bin/honcho" -e /dev/null -f Procfile.stack start ;;
  status) probe ;;
  env) env | grep -E '^(STACK_|DJANGO_SETTINGS_MODULE|DATABASE_URL|CELERY_|CACHE_URL|PERSONATREE_|RAY_)' | sort ;;
  *) echo "usage: scripts/stack.sh up|down|demo|run|status|env" >&2; exit 2 ;;
esac
