"""Task options that come from the settings (the dispatch time limits, the webhook retry budget) are
read when Celery reads them, not when Django imports the workers app: a bad PERSONATREE_* value is
reported by the system check (personatree.E00x) instead of crashing the start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from memory import conf
from workers.dispatcher import DISPATCH_BUDGET_S, dispatch
from workers.webhooks import deliver_webhook

ROOT = Path(__file__).resolve().parents[2]
BAD = {"MEMLISTENER_TIMEOUT_S": 0, "WEBHOOK_MAX_ATTEMPTS": 0}


def test_the_limits_in_effect_are_the_settings_ones(settings):
    timeout = conf.get().listener.timeout_s
    assert dispatch.soft_time_limit == timeout + DISPATCH_BUDGET_S + 60
    assert dispatch.time_limit == dispatch.soft_time_limit + 30
    assert deliver_webhook.max_retries == conf.get().webhooks.max_attempts - 1
    settings.PERSONATREE = {**settings.PERSONATREE, "MEMLISTENER_TIMEOUT_S": 30.0, "WEBHOOK_MAX_ATTEMPTS": 3}
    assert (dispatch.soft_time_limit, dispatch.time_limit) == (30.0 + DISPATCH_BUDGET_S + 60, 180.0)
    assert deliver_webhook.max_retries == 2


def test_a_bad_setting_fails_where_it_is_used_and_in_the_system_check(settings):
    settings.PERSONATREE = {**settings.PERSONATREE, **BAD}
    with pytest.raises(conf.SettingsError, match="PERSONATREE_MEMLISTENER_TIMEOUT_S"):
        dispatch.soft_time_limit  # noqa: B018  (the read is the test)
    with pytest.raises(conf.SettingsError, match="PERSONATREE_WEBHOOK_MAX_ATTEMPTS"):
        deliver_webhook.max_retries  # noqa: B018
    with pytest.raises(SystemCheckError) as caught:
        call_command("check")
    assert "personatree.E002" in str(caught.value) and "personatree.E003" in str(caught.value)


def test_django_starts_with_bad_settings_and_the_check_reports_them():
    """A fresh process (the modules imported by Django's start, not reloaded here: reloading would
    re-create classes other tests hold): ``manage.py check`` gets past the import of workers.tasks,
    workers.dispatcher and workers.webhooks and reports both values, without a traceback."""
    env = {**os.environ, **{f"PERSONATREE_{key}": str(value) for key, value in BAD.items()}}
    env.setdefault("DJANGO_SETTINGS_MODULE", "personatree_site.settings.test")
    code = (
        "import sys, django; django.setup(); "
        "import workers.tasks, workers.dispatcher, workers.webhooks; "
        "from django.core.management import call_command; call_command('check')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert "personatree.E002" in done.stderr and "PERSONATREE_MEMLISTENER_TIMEOUT_S=0" in done.stderr
    assert "personatree.E003" in done.stderr and "PERSONATREE_WEBHOOK_MAX_ATTEMPTS=0" in done.stderr
    assert "SettingsError" not in done.stderr  # the check's report, not an import-time crash
