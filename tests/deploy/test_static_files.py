"""The web image serves /static/ itself: its collectstatic build step runs as written in
docker/web.Dockerfile (same variables, production settings), and the production settings serve
the result through WhiteNoise under hashed names, over plain HTTP as compose starts it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from tests.deploy.conftest import DOCKER_DIR, ROOT

_SERVE = """
import django
from django.templatetags.static import static
from django.test import Client
django.setup()
url = static("admin/css/base.css")
resp = Client().get(url)
body = b"".join(resp.streaming_content) if resp.streaming else resp.content
print(url, resp.status_code, len(body), resp.headers.get("Cache-Control", ""), sep="|")
gz = Client().get(url, HTTP_ACCEPT_ENCODING="gzip")
print("encoding", gz.headers.get("Content-Encoding", ""))
"""


def _collectstatic_step() -> dict[str, str]:
    """The variables the Dockerfile's collectstatic RUN line sets."""
    parser = DockerfileParser(path=str(DOCKER_DIR / "web.Dockerfile"))
    (run,) = [
        i["value"] for i in parser.structure if i["instruction"] == "RUN" and "collectstatic" in i["value"]
    ]
    head = run.split("python manage.py collectstatic")[0]
    env = dict(re.findall(r"([A-Z_]+)=(\S+)", head))
    assert "DJANGO_SECRET_KEY" in env, run
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("static")
    env = {
        **_collectstatic_step(),
        "DJANGO_SETTINGS_MODULE": "personatree_site.settings.production",
        "DJANGO_STATIC_ROOT": str(root),
    }
    env["DATABASE_URL"] = f"sqlite:///{root.parent / 'build.sqlite3'}"
    proc = _run(["manage.py", "collectstatic", "--noinput"], env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return root, env


def test_the_image_build_step_collects_the_admin_and_api_docs_assets(collected):
    root, _ = collected
    assert (root / "admin" / "css" / "base.css").is_file()
    assert (root / "drf_spectacular_sidecar").is_dir()  # Swagger UI, no CDN
    assert (root / "staticfiles.json").is_file()  # the manifest of hashed names
    assert list((root / "admin" / "css").glob("base.*.css.gz"))  # compressed at build time


def test_production_serves_static_files_over_plain_http(collected):
    _, env = collected
    proc = _run(
        ["-c", _SERVE],
        {**env, "DJANGO_ALLOWED_HOSTS": "testserver", "DJANGO_SECURE_SSL_REDIRECT": "false"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, second = proc.stdout.strip().splitlines()[-2:]
    url, status, size, cache = first.split("|")
    assert re.fullmatch(r"/static/admin/css/base\.[0-9a-f]{12}\.css", url), url
    assert status == "200" and int(size) > 1000, first
    assert "immutable" in cache or "max-age=315360000" in cache, first
    assert second == "encoding gzip"
