"""Embedded default for a laptop or `make demo`: SQLite, eager Celery, Milvus Lite on a file."""

import os

from memory.conf import environment_defaults
from serving.minilm_onnx import cache_dir

from .base import *  # noqa: F401,F403
from .base import DATA_DIR, INSTALLED_APPS, PERSONATREE, env

# The evaluation harness (`manage.py evaluate`, evaluation/apps.py): local and test runs only;
# production does not install it.
INSTALLED_APPS = [*INSTALLED_APPS, "evaluation.apps.EvaluationConfig"]

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405 - from base
    # Write-ahead log: one fsync per commit and readers do not wait for a writer; synchronous=FULL
    # keeps every commit that answered (an accepted message) through a power loss.
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = (  # noqa: F405
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
    )

DEBUG = env.bool("DJANGO_DEBUG", default=True)
DATA_DIR.mkdir(parents=True, exist_ok=True)
# /metrics is on for local/dev runs (off by default elsewhere; docs/DEPLOY.md, "Operations").
environment_defaults(
    PERSONATREE,
    os.environ,
    METRICS_ENABLED=True,
    # the schemas' embedded leaf texts (no user data): once per machine, not per data directory
    MEMLISTENER_LEAF_VECTORS_DIR=str(cache_dir("leaf-vectors")),
)
