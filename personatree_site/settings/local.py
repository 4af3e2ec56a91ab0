"""Embedded default for a laptop or `make demo`: SQLite, eager Celery, Milvus Lite on a file."""

import os

from memory.conf import environment_defaults

from .base import *  # noqa: F401,F403
from .base import DATA_DIR, INSTALLED_APPS, PERSONATREE, env

# The evaluation harness (`manage.py evaluate`, evaluation/apps.py): local and test runs only;
# production does not install it.
INSTALLED_APPS = [*INSTALLED_APPS, "evaluation.apps.EvaluationConfig"]

DEBUG = env.bool("DJANGO_DEBUG", default=True)
DATA_DIR.mkdir(parents=True, exist_ok=True)
# /metrics is on for local/dev runs (off by default elsewhere; docs/DEPLOY.md, "Operations").
environment_defaults(PERSONATREE, os.environ, METRICS_ENABLED=True)
