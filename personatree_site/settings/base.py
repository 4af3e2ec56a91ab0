"""Settings shared by every environment.

Every value comes from an environment variable through the one reader below
(django-environ). The embedded default (SQLite, eager Celery, Milvus Lite on a
file, the local GGUF MemListener) needs no variables at all; production
switches each tier by env vars only (see docs/DEPLOY.md and README).
"""

from pathlib import Path

import environ

from personatree_site.ops.logging import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent


class LiteralEnv(environ.Env):
    """django-environ without its `$NAME` proxy expansion.

    django-environ reads a value that starts with `$` as the name of another
    variable, so a generated secret or password that happens to start with `$`
    fails with "Set the <rest of the secret> environment variable" (and prints
    the secret). Our values are data: a leading `$` is kept as written.
    """

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        raw = self.ENVIRON.get(f"{self.prefix}{var}")
        if isinstance(raw, str) and raw.startswith("$"):
            return raw if cast is None else self.parse_value(raw, cast)
        return super().get_value(var, cast=cast, default=default, parse_default=parse_default)


env = LiteralEnv()
# A .env file next to manage.py is read when present (never required).
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env.str("PERSONATREE_DATA_DIR", default=str(BASE_DIR / "var")))

# The development key: production.py refuses it (and any other weak key).
INSECURE_LOCAL_KEY = "insecure-local-only-key-change-me"
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=INSECURE_LOCAL_KEY)
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI's files for /api/docs/, served as static files: no CDN, so the page works on an
    # air-gapped install.
    "drf_spectacular_sidecar",
    "memory",
    "workers.apps.WorkersConfig",
    # Logging context (request id into Celery headers) and tracing, set up once per process.
    "personatree_site.ops.apps.OpsConfig",
]

MIDDLEWARE = [
    # First: answers /healthz, /readyz, /metrics before the HTTPS redirect and the host check
    # (probes call by pod IP over HTTP), and times every other request (docs/DEPLOY.md, "Operations").
    "personatree_site.ops.middleware.OpsMiddleware",
    # The request id (X-Request-ID) of every log line and the access log (docs/DEPLOY.md, "Logs").
    "personatree_site.ops.logging.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "personatree_site.urls"
WSGI_APPLICATION = "personatree_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'personatree.sqlite3'}"),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=0)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = env.str("DJANGO_STATIC_ROOT", default=str(DATA_DIR / "static"))

# --- REST API -----------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memory.api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": ["memory.api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api_key": env.str("PERSONATREE_THROTTLE_RATE", default="600/min")},
    "EXCEPTION_HANDLER": "memory.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "PersonaTree API",
    "DESCRIPTION": "Long-term memory backend: ingest conversations, read a versioned PersonaTree, recall evidence.",
    "VERSION": "0.1.0",
    "LICENSE": {"name": "Apache-2.0", "url": "https://www.apache.org/licenses/LICENSE-2.0"},
    # Relative: the API is served by the host that serves the document (docs/openapi.json).
    "SERVERS": [{"url": "/", "description": "The host serving this document."}],
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
CACHES = {
    "default": env.cache("CACHE_URL", default="locmemcache://personatree"),
}

# --- Celery (ingestion workers) ---------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="memory://")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=None) or None
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)}
# Queues come from each task's @pt_task(queue=...) through one router.
CELERY_TASK_ROUTES = ["workers.base.route_task"]
# Workers log through LOGGING above (JSON in production), not through Celery's own root handler.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Periodic sweep (run beat, or `celery worker -B`): flushes idle windows, re-dispatches pending/expired chunks.
CELERY_BEAT_SCHEDULE = {
    "personatree-sweep": {
        "task": "workers.sweep",
        "schedule": env.float("PERSONATREE_SWEEP_SECONDS", default=30.0),
        "options": {"queue": "ingest"},
    },
    "personatree-flush-evidence": {
        "task": "workers.flush_evidence",
        "schedule": env.float("PERSONATREE_EVIDENCE_FLUSH_SECONDS", default=300.0),
        "options": {"queue": "index"},
    },
    # Retries the evidence purge of erased subjects whose purge is not recorded (Milvus was down).
    "personatree-reconcile-erasures": {
        "task": "workers.reconcile_erasures",
        "schedule": env.float("PERSONATREE_ERASURE_RECONCILE_SECONDS", default=300.0),
        "options": {"queue": "index"},
    },
    # Re-sends webhook deliveries left pending by a lost task; closes those out of attempts.
    "personatree-sweep-webhooks": {
        "task": "workers.sweep_webhooks",
        "schedule": env.float("PERSONATREE_WEBHOOK_SWEEP_SECONDS", default=300.0),
        "options": {"queue": "webhooks"},
    },
    # Re-queues indexing of applied chunks whose messages are not confirmed in the evidence index.
    "personatree-reconcile-indexing": {
        "task": "workers.reconcile_indexing",
        "schedule": env.float("PERSONATREE_INDEX_RECONCILE_SECONDS", default=300.0),
        "options": {"queue": "index"},
    },
}

# --- PersonaTree --------------------------------------------------------------------
# Request size. The API's own limit (memory/api/parsers.py, a JSON 413) is big enough for a call at
# both ingest limits even when every character takes 4 UTF-8 bytes, plus 1 KiB of JSON per message.
# Django's DATA_UPLOAD_MAX_MEMORY_SIZE (an HTML 400 from Django itself, 2.5 MB by default) must
# sit above it, or the documented limits are unreachable: it is derived from ours, 1 MiB above.
# 0 means no limit (as MAX_MESSAGES_PER_CALL = 0 does, which makes the derived default 0).
_MAX_MESSAGES_PER_CALL = env.int("PERSONATREE_MAX_MESSAGES_PER_CALL", default=500)
_MAX_MESSAGE_CHARS = env.int("PERSONATREE_MAX_MESSAGE_CHARS", default=20000)
_MAX_REQUEST_BYTES = env.int(
    "PERSONATREE_MAX_REQUEST_BYTES", default=_MAX_MESSAGES_PER_CALL * (4 * _MAX_MESSAGE_CHARS + 1024)
)
DATA_UPLOAD_MAX_MEMORY_SIZE = _MAX_REQUEST_BYTES + 1024 * 1024 if _MAX_REQUEST_BYTES > 0 else None

# Validated into typed sections by memory/conf.py (`memory.conf.get()`), the only reader; the
# defaults below are the only defaults (a missing key is a start-up error, personatree.E00x).
PERSONATREE = {
    # Chunking: user/assistant pairs per chunk (the paper's best w), idle flush seconds.
    "CHUNK_PAIRS": env.int("PERSONATREE_CHUNK_PAIRS", default=3),
    "IDLE_FLUSH_SECONDS": env.int("PERSONATREE_IDLE_FLUSH_SECONDS", default=300),
    # Ingest payload limits (413 above them; MAX_REQUEST_BYTES below).
    "MAX_MESSAGES_PER_CALL": _MAX_MESSAGES_PER_CALL,
    "MAX_MESSAGE_CHARS": _MAX_MESSAGE_CHARS,
    "MAX_REQUEST_BYTES": _MAX_REQUEST_BYTES,
    # Dispatcher batching across subjects.
    "BATCH_MAX_JOBS": env.int("PERSONATREE_BATCH_MAX_JOBS", default=16),
    "BATCH_MAX_WAIT_MS": env.int("PERSONATREE_BATCH_MAX_WAIT_MS", default=200),
    "CHUNK_MAX_ATTEMPTS": env.int("PERSONATREE_CHUNK_MAX_ATTEMPTS", default=5),
    # A claimed chunk whose worker vanished is re-claimable after this lease (keep > model timeout).
    "CHUNK_LEASE_SECONDS": env.int("PERSONATREE_CHUNK_LEASE_SECONDS", default=600),
    # MemListener: "extractive" (rules, no model), "local" (llama.cpp in process), "ray" (Ray Serve HTTP),
    # "openai" (compatible endpoint),
    # "recorded" (replays MEMLISTENER_RECORDING_PATH; tests), "standin" (zero-latency stand-in; benchmarks).
    # The embedded default is the extractive listener: on 2 CPU cores it beat the local GGUF models
    # on grounded coverage at a fraction of the time (docs/MEMLISTENER.md, "Model choice").
    "MEMLISTENER_BACKEND": env.str("PERSONATREE_MEMLISTENER_BACKEND", default="extractive"),
    "MEMLISTENER_RECORDING_PATH": env.str(
        "PERSONATREE_MEMLISTENER_RECORDING_PATH",
        default=str(BASE_DIR / "tests" / "fixtures" / "recordings" / "memlistener.jsonl"),
    ),
    "MEMLISTENER_STANDIN_MODE": env.str("PERSONATREE_MEMLISTENER_STANDIN_MODE", default="no_op"),
    "MEMLISTENER_STANDIN_LATENCY_MS": env.float("PERSONATREE_MEMLISTENER_STANDIN_LATENCY_MS", default=0.0),
    "MEMLISTENER_MAX_TOKENS": env.int("PERSONATREE_MEMLISTENER_MAX_TOKENS", default=256),
    # Longest op list the constrained output allows (the local CPU model rambles past a few ops).
    "MEMLISTENER_MAX_OPS": env.int("PERSONATREE_MEMLISTENER_MAX_OPS", default=6),
    # llama.cpp disk cache of the static prompt prefix (~5k tokens), kept across restarts. Off by default:
    # it keeps every prompt (the subjects' turns, as tokens); when set, every erasure empties it
    # (memory/services/erasure.py). Without it llama.cpp still reuses the previous prompt's prefix in
    # RAM, so only a restart recomputes the prefix.
    "MEMLISTENER_PROMPT_CACHE_DIR": env.str("PERSONATREE_MEMLISTENER_PROMPT_CACHE_DIR", default=""),
    # "pointing" (candidate leaves + sentence ids) or "full_enum" (every leaf; GPU models); empty:
    # the engine's default (pointing, except the stand-in and recordings, which are full-enum).
    "MEMLISTENER_PROMPT_MODE": env.str("PERSONATREE_MEMLISTENER_PROMPT_MODE", default=""),
    "MEMLISTENER_CANDIDATE_K": env.int("PERSONATREE_MEMLISTENER_CANDIDATE_K", default=8),
    "MEMLISTENER_CANDIDATE_THRESHOLD": env.float("PERSONATREE_MEMLISTENER_CANDIDATE_THRESHOLD", default=0.30),
    # Over-long input is cut to these caps (characters) before the model call; 0 = no cap.
    "MEMLISTENER_MAX_TURN_CHARS": env.int("PERSONATREE_MEMLISTENER_MAX_TURN_CHARS", default=6000),
    "MEMLISTENER_MAX_CHUNK_CHARS": env.int("PERSONATREE_MEMLISTENER_MAX_CHUNK_CHARS", default=16000),
    "MEMLISTENER_URL": env.str("PERSONATREE_MEMLISTENER_URL", default="http://127.0.0.1:8000/memlistener"),
    "MEMLISTENER_TIMEOUT_S": env.float("PERSONATREE_MEMLISTENER_TIMEOUT_S", default=300.0),
    "LOCAL_MODEL_PATH": env.str(
        "PERSONATREE_LOCAL_MODEL_PATH", default=str(DATA_DIR / "models" / "memlistener.gguf")
    ),
    "OPENAI_BASE_URL": env.str("PERSONATREE_OPENAI_BASE_URL", default=""),
    "OPENAI_API_KEY": env.str("PERSONATREE_OPENAI_API_KEY", default=""),
    "OPENAI_MODEL": env.str("PERSONATREE_OPENAI_MODEL", default=""),
    # Answers (/answer): extractive (the supporting leaf clauses and evidence sentences, quoted and cited;
    # no model) or model (the responder below); compared by bench/compare_answers.py.
    "ANSWER_MODE": env.str("PERSONATREE_ANSWER_MODE", default="extractive"),
    # Responder (query expansion, model answers): same backends as the MemListener.
    "RESPONDER_BACKEND": env.str("PERSONATREE_RESPONDER_BACKEND", default="local"),
    "RESPONDER_MAX_TOKENS": env.int("PERSONATREE_RESPONDER_MAX_TOKENS", default=256),
    # Evidence index.
    "MILVUS_URI": env.str("PERSONATREE_MILVUS_URI", default=str(DATA_DIR / "milvus.db")),
    "MILVUS_TOKEN": env.str("PERSONATREE_MILVUS_TOKEN", default=""),
    "MILVUS_COLLECTION": env.str("PERSONATREE_MILVUS_COLLECTION", default="evidence"),
    "MILVUS_TIMEOUT_S": env.float("PERSONATREE_MILVUS_TIMEOUT_S", default=10.0),
    # Small indexing batches are flushed (growing segments sealed) after this many idle seconds in the
    # writing process (0 = never); the beat task below flushes every EVIDENCE_FLUSH_SECONDS as a backstop.
    "EVIDENCE_FLUSH_IDLE_S": env.float("PERSONATREE_EVIDENCE_FLUSH_IDLE_S", default=10.0),
    "EMBEDDER": env.str("PERSONATREE_EMBEDDER", default="minilm"),  # minilm | bge-m3 (path below)
    "EMBEDDER_PATH": env.str("PERSONATREE_EMBEDDER_PATH", default=""),
    "RERANKER_PATH": env.str("PERSONATREE_RERANKER_PATH", default=""),
    # How deep recall sends its hybrid searches (memory/recall/search.py): batch | threads | overlap
    # (batch: fastest on a quiet 2-core host; overlap: fastest when the CPU is contended; bench_query).
    "RECALL_STRATEGY": env.str("PERSONATREE_RECALL_STRATEGY", default="batch"),
    "ROUTER_THRESHOLD": env.float("PERSONATREE_ROUTER_THRESHOLD", default=0.5),
    # Evidence indexing on version_applied / purge on subject_erased (off only for tests that skip the index).
    "EVIDENCE_INDEXING": env.bool("PERSONATREE_EVIDENCE_INDEXING", default=True),
    "RESPONDER_RECORDING_PATH": env.str("PERSONATREE_RESPONDER_RECORDING_PATH", default=""),
    # Governance defaults (a tenant's policy overrides them).
    "REVIEW_SPECIAL_TIER": env.bool("PERSONATREE_REVIEW_SPECIAL_TIER", default=True),
    "REVIEW_MASS_DELETE_OVER": env.int("PERSONATREE_REVIEW_MASS_DELETE_OVER", default=3),
    # Webhooks (docs/WEBHOOKS.md): attempts per delivery, per-attempt timeout, and whether endpoints
    # may target loopback/private/link-local addresses (off: SSRF; on only for trusted networks, tests).
    "WEBHOOK_MAX_ATTEMPTS": env.int("PERSONATREE_WEBHOOK_MAX_ATTEMPTS", default=6),
    "WEBHOOK_TIMEOUT_S": env.float("PERSONATREE_WEBHOOK_TIMEOUT_S", default=10.0),
    "WEBHOOK_ALLOW_PRIVATE_TARGETS": env.bool("PERSONATREE_WEBHOOK_ALLOW_PRIVATE_TARGETS", default=False),
    # Per tenant: endpoints it may register (409 above), deliveries POSTed at once (others wait).
    "WEBHOOK_MAX_ENDPOINTS_PER_TENANT": env.int("PERSONATREE_WEBHOOK_MAX_ENDPOINTS_PER_TENANT", default=20),
    "WEBHOOK_MAX_CONCURRENT_PER_TENANT": env.int("PERSONATREE_WEBHOOK_MAX_CONCURRENT_PER_TENANT", default=4),
    # Operations (personatree_site/ops, docs/DEPLOY.md "Operations"): /metrics is off unless enabled
    # (local.py turns it on); with a token set it also needs `Authorization: Bearer <token>`.
    "METRICS_ENABLED": env.bool("PERSONATREE_METRICS_ENABLED", default=False),
    "METRICS_TOKEN": env.str("PERSONATREE_METRICS_TOKEN", default=""),
    # Per-check timeout of /readyz's network checks (broker, Milvus, Ray Serve), run side by side.
    "READYZ_TIMEOUT_S": env.float("PERSONATREE_READYZ_TIMEOUT_S", default=1.0),
}

# Logs: plain lines here, one JSON object a line with PERSONATREE_LOG_FORMAT=json (production's
# default); every line carries the request id, tenant id and hashed subject (personatree_site/ops/logging.py).
LOGGING = logging_config(
    env.str("PERSONATREE_LOG_FORMAT", default="plain"), env.str("DJANGO_LOG_LEVEL", default="INFO")
)
