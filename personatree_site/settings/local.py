"""Embedded default for a laptop or `make demo`: SQLite, eager Celery, Milvus Lite on a file."""

from .base import *  # noqa: F401,F403
from .base import DATA_DIR, env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
DATA_DIR.mkdir(parents=True, exist_ok=True)
