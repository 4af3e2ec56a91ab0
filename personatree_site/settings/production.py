"""Production: Postgres, Redis broker, real Celery workers, Ray Serve MemListener, Milvus server.

Secrets have no defaults here: a missing variable fails at start-up.
"""

from .base import *  # noqa: F401,F403
from .base import PERSONATREE, env

DEBUG = False
SECRET_KEY = env.str("DJANGO_SECRET_KEY")
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
PERSONATREE["MEMLISTENER_BACKEND"] = env.str("PERSONATREE_MEMLISTENER_BACKEND", default="ray")

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
