"""Without the docker-compose validator the compose tests skip with their reason (a fresh clone's
`make test`); where it is installed (CI: .ci/run) they run; PERSONATREE_REQUIRE_DOCKER_COMPOSE
turns its absence into a failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.conftest import REQUIRE_COMPOSE_ENV, ROOT, docker_compose_or_skip


@pytest.fixture
def no_compose_path(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv(REQUIRE_COMPOSE_ENV, raising=False)
    return empty


def test_absent_validator_skips_with_the_reason(no_compose_path):
    with pytest.raises(pytest.skip.Exception, match="docker-compose not found on PATH"):
        docker_compose_or_skip()


def test_absent_validator_fails_where_it_is_required(no_compose_path, monkeypatch):
    monkeypatch.setenv(REQUIRE_COMPOSE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=REQUIRE_COMPOSE_ENV):
        docker_compose_or_skip()


def test_present_validator_is_used(no_compose_path):
    fake = no_compose_path / "docker-compose"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    assert docker_compose_or_skip() == str(fake)


def test_compose_tests_report_skipped_not_errors_without_the_validator(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in (REQUIRE_COMPOSE_ENV, "PYTEST_ADDOPTS")}
    env["PATH"] = str(Path(sys.executable).parent)  # the virtualenv only: no docker-compose
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/deploy/test_compose.py",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "error" not in proc.stdout.splitlines()[-1]
    assert " skipped" in proc.stdout.splitlines()[-1]
    assert "docker-compose not found on PATH" in proc.stdout
