"""The server entry points (issue 15): ``wsgi.py`` and ``celery.py`` default to the production
settings when ``DJANGO_SETTINGS_MODULE`` is unset, and production refuses to start without a real
secret key, so a server started bare never runs with DEBUG on and the development key.
``manage.py`` (development, tests) keeps the local settings as its default."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.management.utils import get_random_secret_key

from tests.deploy.conftest import ROOT

LOCAL_KEY = "insecure-local-only-key-change-me"

PRODUCTION_ENV = {
    "DJANGO_ALLOWED_HOSTS": "memory.example.com",
    "DATABASE_URL": "postgres://personatree:pw@127.0.0.1:5432/personatree",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
}

SHOW = (
    "from django.conf import settings; "
    "print(os.environ['DJANGO_SETTINGS_MODULE'], settings.DEBUG, settings.SECRET_KEY == {local!r})"
)
ENTRY_POINTS = {
    "wsgi": "import os, personatree_site.wsgi; " + SHOW,
    "celery": "import os; from personatree_site.celery import app; app.conf.broker_url; " + SHOW,
}


def _python(code: str, env: dict[str, str], tmp_path) -> subprocess.CompletedProcess[str]:
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    # No DJANGO_SETTINGS_MODULE (pytest sets one) and no .env-style leftovers of the caller.
    return subprocess.run(
        [sys.executable, "-c", code.format(local=LOCAL_KEY)],
        cwd=ROOT,
        env={**base, "PERSONATREE_DATA_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_without_a_settings_module_a_server_refuses_to_start_without_a_secret_key(entry, tmp_path):
    proc = _python(ENTRY_POINTS[entry], PRODUCTION_ENV, tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert "DJANGO_SECRET_KEY" in proc.stderr


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_without_a_settings_module_a_server_runs_the_production_settings(entry, tmp_path):
    env = {**PRODUCTION_ENV, "DJANGO_SECRET_KEY": get_random_secret_key()}
    proc = _python(ENTRY_POINTS[entry], env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["personatree_site.settings.production", "False", "False"]


@pytest.mark.parametrize(
    "key",
    ["", LOCAL_KEY, "django-insecure-" + "k" * 50, "too-short-a-key", "ab" * 30],
    ids=["empty", "local-default", "django-insecure", "short", "few-distinct-characters"],
)
def test_production_refuses_a_key_that_is_not_a_real_secret(key, tmp_path):
    env = {
        **PRODUCTION_ENV,
        "DJANGO_SECRET_KEY": key,
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.production",
    }
    proc = _python("import django; django.setup()", env, tmp_path)
    assert proc.returncode != 0
    assert "DJANGO_SECRET_KEY" in proc.stderr and "get_random_secret_key" in proc.stderr
    if key:
        assert key not in proc.stderr  # the refused value is not echoed


def test_manage_py_keeps_the_local_settings_as_its_default(tmp_path):
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            SHOW.replace("{local!r}", repr(LOCAL_KEY)).replace(
                "from django.conf", "import os; from django.conf"
            ),
        ],
        cwd=ROOT,
        env={**base, "PERSONATREE_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-3:] == ["personatree_site.settings.local", "True", "True"]
