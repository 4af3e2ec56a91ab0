"""docker/compose.yaml works when started (issue 17): plain HTTP unless a TLS proxy is configured,
a responder that answers without a model in the web image, a healthcheck on every long-running
service, current Postgres and Redis, and the web image's own HTTP healthcheck. Read from the file
itself (tests/deploy/test_compose.py checks the model docker-compose resolves, where installed)."""

from __future__ import annotations

import re

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from serving.chat_compat import CHAT_PATH
from tests.deploy.conftest import DOCKER_DIR, ROOT

COMPOSE = DOCKER_DIR / "compose.yaml"
# One-shot services: they exit, so there is nothing to probe.
ONE_SHOT = {"migrate", "memlistener-deploy"}
# Long-running services without a healthcheck, each with the reason.
NO_HEALTHCHECK = {"flower": "an operator's dashboard behind basic auth; nothing depends on it"}


@pytest.fixture(scope="module")
def model() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _default(value: str, name: str) -> str:
    """The default of a `${NAME:-default}` interpolation (fails on anything else)."""
    match = re.fullmatch(r"\$\{" + name + r":-(.*)\}", value)
    assert match, f"{name} is {value!r}, not ${{{name}:-default}}"
    return match.group(1)


def test_https_redirect_is_off_unless_asked_for(model):
    assert (
        _default(model["x-django-env"]["DJANGO_SECURE_SSL_REDIRECT"], "DJANGO_SECURE_SSL_REDIRECT") == "false"
    )
    # The documented .env does not turn it back on by default (behind a TLS proxy: set it true).
    example = (DOCKER_DIR / "production.env.example").read_text()
    assert not re.search(r"^DJANGO_SECURE_SSL_REDIRECT=true", example, re.M)


def test_the_responder_answers_through_the_memlistener_deployment(model):
    env = model["x-django-env"]
    assert _default(env["PERSONATREE_RESPONDER_BACKEND"], "PERSONATREE_RESPONDER_BACKEND") == "openai"
    base = _default(env["PERSONATREE_OPENAI_BASE_URL"], "PERSONATREE_OPENAI_BASE_URL")
    # The openai client posts to <base>/chat/completions: the Serve app's chat route.
    assert base + "/chat/completions" == env["PERSONATREE_MEMLISTENER_URL"] + CHAT_PATH
    assert _default(env["PERSONATREE_OPENAI_MODEL"], "PERSONATREE_OPENAI_MODEL")


def test_every_long_running_service_has_a_healthcheck(model):
    for name, svc in model["services"].items():
        if name in ONE_SHOT or name in NO_HEALTHCHECK:
            continue
        check = svc.get("healthcheck")
        assert check and check.get("test"), f"{name} has no healthcheck"
        assert not check.get("disable"), name
    assert {"web", "worker-ingest", "worker-index", "beat", "ray-head", "ray-worker"} <= set(
        model["services"]
    )


def test_workers_ping_their_own_node_and_beat_watches_its_schedule(model):
    for name in ("worker-ingest", "worker-index"):
        test = " ".join(model["services"][name]["healthcheck"]["test"])
        assert "inspect ping" in test and "celery@$$HOSTNAME" in test, name  # $$: compose's escape
    beat = model["services"]["beat"]
    schedule = beat["command"][beat["command"].index("--schedule") + 1]
    test = beat["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"], test
    compile(test[3], "<beat check>", "exec")  # valid Python
    assert f"'{schedule}*'" in test[3]


def test_ray_nodes_use_the_public_health_routes(model):
    head = " ".join(model["services"]["ray-head"]["healthcheck"]["test"])
    assert "/api/gcs_healthz" in head
    for name in ("ray-worker", "ray-worker-gpu"):
        assert "/api/local_raylet_healthz" in " ".join(model["services"][name]["healthcheck"]["test"]), name
    for name in ("ray-worker", "ray-worker-gpu", "memlistener-deploy"):
        assert model["services"][name]["depends_on"]["ray-head"]["condition"] == "service_healthy", name


@pytest.mark.parametrize(("service", "major"), [("postgres", 17), ("redis", 8)])
def test_store_and_broker_images_are_current(model, service, major):
    image = model["services"][service]["image"]
    tag = image.partition(":")[2]
    assert int(tag.split(".")[0].split("-")[0]) >= major, image


def test_web_image_checks_health_over_http():
    parser = DockerfileParser(path=str(DOCKER_DIR / "web.Dockerfile"))
    (check,) = [i["value"] for i in parser.structure if i["instruction"] == "HEALTHCHECK"]
    assert "/healthz" in check and "127.0.0.1:8000" in check
    cmd = parser.cmd
    # The port the check calls is the one gunicorn binds: on the command line or in its config file.
    conf = (ROOT / "personatree_site" / "ops" / "gunicorn_conf.py").read_text()
    assert "0.0.0.0:8000" in cmd or ("gunicorn_conf" in cmd and '"0.0.0.0:8000"' in conf)


def test_compose_deploys_an_autoscaling_serve_config(model):
    cmd = model["services"]["memlistener-deploy"]["command"]
    assert "${SERVE_CONFIG:-serve/cpu.yaml}" in cmd
    source = yaml.safe_load((ROOT / "serving" / "config" / "cpu.yaml").read_text())
    (app,) = source["applications"]
    scaling = app["args"]["autoscaling"]
    assert scaling["max_replicas"] > scaling["min_replicas"] >= 1
    assert "num_replicas" not in app["args"]
