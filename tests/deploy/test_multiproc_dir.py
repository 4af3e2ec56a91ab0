"""Images that set PROMETHEUS_MULTIPROC_DIR create that directory for their user: prometheus_client
writes there from the first metric of any process (a migrate, a pool process), not only gunicorn's."""

from __future__ import annotations

import re

import pytest

from tests.deploy.conftest import DOCKER_DIR


@pytest.mark.parametrize("name", ["web.Dockerfile", "worker.Dockerfile"])
def test_the_multiprocess_directory_exists_and_belongs_to_the_app_user(name):
    text = (DOCKER_DIR / name).read_text()
    (path,) = re.findall(r"PROMETHEUS_MULTIPROC_DIR=(\S+)", text)
    assert re.search(rf"mkdir -p [^\n]*{re.escape(path)}", text), f"{name} never creates {path}"
    assert re.search(rf"chown -R app:app [^\n]*{re.escape(path)}", text), f"{name}: {path} not owned by app"
