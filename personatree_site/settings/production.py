"""Production: Postgres, Redis broker, real Celery workers, Ray Serve MemListener, Milvus server.
Secrets have no defaults: a missing one, or a secret key that is no real secret, fails at start-up.
"""

import os

from django.core.checks.security import base as deploy_checks
from django.core.exceptions import ImproperlyConfigured

from memory.conf import environment_defaults
from personatree_site.ops.logging import logging_config

from .base import *  # noqa: F401,F403
from .base import INSECURE_LOCAL_KEY, MIDDLEWARE, PERSONATREE, env


def _refuse_weak_secret_key(key: str) -> str:
    """Django's own bar for a key (`check --deploy`, security.W009), enforced here at start-up."""
    weak = (
        len(key) < deploy_checks.SECRET_KEY_MIN_LENGTH
        or len(set(key)) < deploy_checks.SECRET_KEY_MIN_UNIQUE_CHARACTERS
        or key == INSECURE_LOCAL_KEY
        or key.startswith("django-insecure")
    )
    if weak:  # the value itself is never echoed
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not a real secret (empty, the development key, a django-insecure key, "
            f"under {deploy_checks.SECRET_KEY_MIN_LENGTH} characters or under "
            f"{deploy_checks.SECRET_KEY_MIN_UNIQUE_CHARACTERS} "
            'distinct ones); production refuses to start. Generate one with: python -c "from '
            'django.core.management.utils import get_random_secret_key as g; print(g())"'
        )
    return key


DEBUG = False
SECRET_KEY = _refuse_weak_secret_key(env.str("DJANGO_SECRET_KEY"))
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")
DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
# Behind PgBouncer in transaction pooling mode server-side cursors break (docs/DEPLOY.md).
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool(
    "DATABASE_DISABLE_SERVER_SIDE_CURSORS", default=False
)
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = False
CACHES = {"default": env.cache("CACHE_URL", default="redis://127.0.0.1:6379/1")}
# A Redis that does not answer must not hold each request for the system's connect timeout (the
# throttle then counts per process, memory/api/throttling.py): 1 s unless CACHE_URL sets its own
# (`?socket_connect_timeout=...&socket_timeout=...`).
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    _cache_options = CACHES["default"].setdefault("OPTIONS", {})
    _cache_options.setdefault("socket_connect_timeout", 1.0)
    _cache_options.setdefault("socket_timeout", 1.0)
environment_defaults(PERSONATREE, os.environ, MEMLISTENER_BACKEND="ray", LOG_FORMAT="json")
# One JSON object a line (request id, tenant id, hashed subject); PERSONATREE_LOG_FORMAT=plain for text.
LOGGING = logging_config(PERSONATREE["LOG_FORMAT"], env.str("DJANGO_LOG_LEVEL", default="INFO"))

# Static files (admin, API docs) served by the web process itself through WhiteNoise, from
# STATIC_ROOT collected at image build time, compressed and under content-hashed names.
MIDDLEWARE = list(MIDDLEWARE)
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
    "whitenoise.middleware.WhiteNoiseMiddleware",
)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
