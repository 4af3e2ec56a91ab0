"""The local full stack (`make stack`: scripts/stack.sh + Procfile.stack + docker/stack.env).

Unit part: the wiring is made only of variables the settings read, and the caller's shell never
leaks into it. Integration part: the real stack on 127.0.0.1 (machine Postgres and Redis DB 5,
milvus-lite server, Ray Serve MemListener, Celery worker with beat, Django), driven through its
HTTP API from message ingest to a new tree version, then stopped with nothing left running.
The MemListener runs the real Serve app and config with the stand-in engine (`derived` mode)
so the test measures wiring, not a model's speed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import uuid

import httpx
import pytest

from tests.deploy.conftest import NOT_SETTINGS, ROOT, settings_env_names

STACK = ROOT / "scripts" / "stack.sh"
LEAKY = ("DJANGO_", "DATABASE_", "CELERY_", "CACHE_", "PERSONATREE_", "STACK_", "RAY_")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(LEAKY)}
    return {**env, **extra}


def _stack(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STACK), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def _wiring(**overrides: str) -> dict[str, str]:
    proc = _stack("env", env=_clean_env(**overrides))
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())


def test_stack_wiring_uses_only_variables_the_settings_read():
    app_vars = {k for k in _wiring() if k.startswith(LEAKY[:5])} - set(NOT_SETTINGS)
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "PERSONATREE_MILVUS_URI"} <= app_vars
    assert app_vars <= settings_env_names(), app_vars - settings_env_names()


def test_stack_wiring_follows_stack_variables_and_ignores_the_callers_shell():
    wiring = _wiring(STACK_DB="pt_x", STACK_REDIS_DB="7", STACK_MILVUS_PORT="1234", STACK_SERVE_PORT="4321")
    assert wiring["DATABASE_URL"] == "postgres://postgres@127.0.0.1:5432/pt_x"
    assert wiring["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/7"
    assert wiring["CELERY_TASK_ALWAYS_EAGER"] == "false"
    assert wiring["PERSONATREE_MILVUS_URI"] == "http://127.0.0.1:1234"
    assert wiring["PERSONATREE_MEMLISTENER_BACKEND"] == "ray"
    assert wiring["PERSONATREE_MEMLISTENER_URL"] == "http://127.0.0.1:4321/memlistener"
    leaked = _stack(
        "env",
        env={
            **_clean_env(),
            "DATABASE_URL": "sqlite:///nope",
            "DJANGO_SETTINGS_MODULE": "personatree_site.settings.test",
        },
    )
    assert "sqlite" not in leaked.stdout
    assert "DJANGO_SETTINGS_MODULE=personatree_site.settings.local" in leaked.stdout


def test_procfile_runs_every_tier():
    honcho = ROOT / ".venv" / "bin" / "honcho"
    proc = subprocess.run(
        [str(honcho), "-f", "Procfile.stack", "check"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "(milvus, memlistener, worker, web)" in proc.stderr + proc.stdout
    worker = next(
        line for line in (ROOT / "Procfile.stack").read_text().splitlines() if line.startswith("worker:")
    )
    assert "-Q ingest,index,webhooks" in worker and "--beat" in worker


def test_unknown_command_is_a_clear_error():
    proc = _stack("bogus", env=_clean_env())
    assert proc.returncode == 2
    assert "usage: scripts/stack.sh" in proc.stderr


# --- integration: the real stack ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = _clean_env(
        STACK_DIR=str(tmp_path_factory.mktemp("stack")),
        STACK_DB="test_pt_deploy_stack",
        STACK_REDIS_DB="5",
        STACK_WEB_PORT=str(_free_port()),
        STACK_MILVUS_PORT=str(_free_port()),
        STACK_SERVE_PORT=str(_free_port()),
        STACK_SERVE_ARGS_JSON=json.dumps({"engine": {"kind": "standin", "standin_mode": "derived"}}),
        STACK_TIMEOUT_S="240",
        RAY_TMPDIR=f"/tmp/pt-deploy-{uuid.uuid4().hex[:6]}",
    )
    subprocess.run(["redis-cli", "-n", "5", "flushdb"], check=False, capture_output=True)
    subprocess.run(
        ["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", env["STACK_DB"]],
        check=False,
        capture_output=True,
    )
    up = _stack("up", env=env, timeout=300)
    if up.returncode != 0:
        _stack("down", env=env)
        pytest.fail(f"scripts/stack.sh up failed:\n{up.stderr[-4000:]}")
    try:
        yield env
    finally:
        _stack("down", env=env, timeout=120)
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
        subprocess.run(["redis-cli", "-n", "5", "flushdb"], check=False, capture_output=True)
        subprocess.run(
            ["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", env["STACK_DB"]],
            check=False,
            capture_output=True,
        )


@pytest.mark.integration
def test_every_tier_answers(stack):
    proc = _stack("status", env=stack)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == {"milvus": True, "memlistener": True, "web": True, "worker": True}


@pytest.mark.integration
def test_milvus_server_accepts_clients(stack):
    from pymilvus import MilvusClient

    client = MilvusClient(uri=f"http://127.0.0.1:{stack['STACK_MILVUS_PORT']}")
    assert isinstance(client.list_collections(), list)
    client.close()


@pytest.mark.integration
def test_memlistener_answers_over_ray_serve_http(stack):
    from serving.client import RayServeClient
    from serving.protocol import ListenerJob

    client = RayServeClient(f"http://127.0.0.1:{stack['STACK_SERVE_PORT']}/memlistener", timeout_s=60)
    job = ListenerJob(
        job_id="deploy-1",
        subject_id="s1",
        base_version=0,
        schema_id="personatree-default",
        schema_version=1,
        tree={},
        turns=[{"role": "user", "content": "I moved to Lisbon last month."}],
    )
    (result,) = client.run([job])
    client.close()
    assert result.error is None
    assert result.job_id == "deploy-1" and result.ops


@pytest.mark.integration
def test_messages_flow_through_worker_and_memlistener_into_a_tree_version(stack):
    key = subprocess.run(
        [".venv/bin/python", "manage.py", "create_tenant", f"deploy-{uuid.uuid4().hex[:8]}"],
        cwd=ROOT,
        env={**stack, **_wiring(**{k: v for k, v in stack.items() if k.startswith("STACK_")})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert key.returncode == 0, key.stderr
    base = f"http://127.0.0.1:{stack['STACK_WEB_PORT']}/v1/subjects/alice"
    headers = {"Authorization": f"Bearer {key.stdout.strip()}"}
    turns = [
        ("user", "Hi, I'm Alice. I work as a nurse in Porto."),
        ("assistant", "Nice to meet you, Alice."),
        ("user", "I started swimming because my knee hurts when I run."),
        ("assistant", "Swimming is gentle on the knees."),
        ("user", "I also have a cat called Miso."),
        ("assistant", "Miso is a lovely name."),
    ]
    messages = [{"role": r, "content": c, "idempotency_key": f"m{i}"} for i, (r, c) in enumerate(turns)]
    with httpx.Client(headers=headers, timeout=30) as http:
        posted = http.post(f"{base}/messages", json={"messages": messages})
        assert posted.status_code == 202, posted.text
        deadline, status = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            status = http.get(f"{base}/ingest").json()
            if status.get("applied_through_seq", 0) >= len(turns) or status.get("failures"):
                break
            time.sleep(1)
        assert not status.get("failures"), status
        assert status.get("applied_through_seq", 0) >= len(turns), status
        tree = http.get(f"{base}/tree")
        assert tree.status_code == 200, tree.text
        body = tree.json()
        assert body.get("version", 0) >= 1, body


@pytest.mark.integration
def test_make_demo_runs_against_the_stack(stack):
    proc = _stack("demo", "--no-answers", "--wait", "120", env=stack, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Final tree" in proc.stdout
    assert f"redis://127.0.0.1:6379/{stack['STACK_REDIS_DB']}" in proc.stdout  # a real broker, not eager


@pytest.mark.integration
def test_down_stops_every_process(stack):
    pidfile = os.path.join(stack["STACK_DIR"], "honcho.pid")
    pid = int(open(pidfile).read())
    ports = [int(stack[k]) for k in ("STACK_WEB_PORT", "STACK_MILVUS_PORT", "STACK_SERVE_PORT")]
    proc = _stack("down", env=stack, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    time.sleep(2)
    assert [p for p in ports if _listening(p)] == []
    leftovers = subprocess.run(
        ["pgrep", "-f", stack["RAY_TMPDIR"]], capture_output=True, text=True
    ).stdout.split()
    assert leftovers == [], f"Ray processes left running: {leftovers}"
