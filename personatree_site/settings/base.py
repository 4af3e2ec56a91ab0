"""Settings shared by every environment, every value from an environment variable (PERSONATREE_*
through memory/conf.py); the embedded default needs none (docs/DEPLOY.md).
"""

import os
from pathlib import Path

import environ

from memory import conf
from personatree_site.ops.logging import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent


class LiteralEnv(environ.Env):
    """django-environ without `$NAME` expansion: a secret starting with `$` is data (expanded, it shows)."""

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        raw = self.ENVIRON.get(f"{self.prefix}{var}")
        if isinstance(raw, str) and raw.startswith("$"):
            return raw if cast is None else self.parse_value(raw, cast)
        return super().get_value(var, cast=cast, default=default, parse_default=parse_default)


env = LiteralEnv()
# A .env file next to manage.py is read when present (never required).
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env.str("PERSONATREE_DATA_DIR", default=str(BASE_DIR / "var")))

# Every PERSONATREE_* setting is declared once in memory/conf.py (a bad value: personatree.E00x).
PERSONATREE = conf.from_environ(os.environ, data_dir=DATA_DIR, base_dir=BASE_DIR)

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
    # First: the ops paths skip the HTTPS redirect and the host check (ops/middleware.py).
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
    "DEFAULT_THROTTLE_RATES": {"api_key": PERSONATREE["THROTTLE_RATE"]},
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
    # A write's outcome (leaf edit, revert) under one name; other `status` enums keep theirs.
    "ENUM_NAME_OVERRIDES": {"WriteStatusEnum": ["applied", "unchanged", "pending_review"]},
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


# Run by beat (or `celery worker -B`): personatree-<task> sends workers.<task> to its queue every
# PERSONATREE[<key>] seconds; the tasks' modules (workers/) say what each one does.
CELERY_BEAT_SCHEDULE = {
    "personatree-" + task.replace("_", "-"): {
        "task": f"workers.{task}",
        "schedule": PERSONATREE[seconds_key],
        "options": {"queue": queue},
    }
    for task, seconds_key, queue in (
        ("sweep", "SWEEP_SECONDS", "ingest"),
        ("flush_evidence", "EVIDENCE_FLUSH_SECONDS", "index"),
        ("reconcile_erasures", "ERASURE_RECONCILE_SECONDS", "index"),
        ("sweep_webhooks", "WEBHOOK_SWEEP_SECONDS", "webhooks"),
        ("reconcile_indexing", "INDEX_RECONCILE_SECONDS", "index"),
    )
}


# Request size: the API's own limit (memory/api/parsers.py, a JSON 413) is MAX_REQUEST_BYTES; Django's
# DATA_UPLOAD_MAX_MEMORY_SIZE (an HTML 400 from Django itself) must sit above it, or the documented
# limits are unreachable: 1 MiB above ours (0: no limit, as ours).
_MAX_REQUEST_BYTES = PERSONATREE["MAX_REQUEST_BYTES"]
DATA_UPLOAD_MAX_MEMORY_SIZE = (
    _MAX_REQUEST_BYTES + 1024 * 1024
    if isinstance(_MAX_REQUEST_BYTES, int) and _MAX_REQUEST_BYTES > 0
    else None
)

# Logs: plain lines, or one JSON object a line with PERSONATREE_LOG_FORMAT=json (production's default).
LOGGING = logging_config(PERSONATREE["LOG_FORMAT"], env.str("DJANGO_LOG_LEVEL", default="INFO"))
