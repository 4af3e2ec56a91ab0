"""Test settings: real PostgreSQL unless DATABASE_URL says otherwise (locking and concurrency tests
need it; PERSONATREE_TEST_DB names a run's own database), eager Celery unless a test starts a real
worker, fast password hashing.
"""

import os

from memory.conf import environment_defaults

from .base import *  # noqa: F401,F403
from .base import DATABASES, INSTALLED_APPS, PERSONATREE, env

# The evaluation harness (`manage.py evaluate`, evaluation/apps.py): local and test runs only;
# production does not install it.
INSTALLED_APPS = [*INSTALLED_APPS, "evaluation.apps.EvaluationConfig"]

DATABASES["default"] = env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/test")
DATABASES["default"]["TEST"] = {"NAME": env.str("PERSONATREE_TEST_DB", default="test_personatree")}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)  # a worker process sets false
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
REST_FRAMEWORK = {**REST_FRAMEWORK}  # noqa: F405
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {"api_key": "100000/min"}
# Evidence indexing loads an embedder and a Milvus Lite file (one process per file): off unless a
# test turns it on with its own temporary Milvus file (tests/memory/recall does).
environment_defaults(PERSONATREE, os.environ, MEMLISTENER_BACKEND="recorded", EVIDENCE_INDEXING=False)
