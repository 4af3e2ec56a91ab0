"""Where the evaluation harness is installed: `manage.py evaluate` works with the default (local)
settings and the test settings, and production neither installs nor imports the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import get_commands
from django.core.management.utils import get_random_secret_key

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import sys, django; django.setup(); from django.conf import settings; "
    "from django.core.management import get_commands; "
    "print(sorted(m for m in sys.modules if m == 'evaluation' or m.startswith('evaluation.')), "
    "'evaluate' in get_commands(), "
    "[a for a in settings.INSTALLED_APPS if a.startswith('evaluation')])"
)


def _run(settings_module: str, extra: dict[str, str]) -> str:
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": settings_module, **extra},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def _production_env() -> dict[str, str]:
    env = {}
    for line in (ROOT / "docker" / "production.env.example").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            env[name] = value
    env["DJANGO_SECRET_KEY"] = get_random_secret_key()
    return env


def test_test_settings_install_the_command():
    assert "evaluation.apps.EvaluationConfig" in settings.INSTALLED_APPS
    assert get_commands()["evaluate"] == "evaluation"


def test_default_local_settings_find_the_command(tmp_path):
    out = _run("personatree_site.settings.local", {"PERSONATREE_DATA_DIR": str(tmp_path)})
    assert "True ['evaluation.apps.EvaluationConfig']" in out, out


def test_production_neither_installs_nor_imports_it():
    assert _run("personatree_site.settings.production", _production_env()) == "[] False []"
