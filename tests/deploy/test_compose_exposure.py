"""docker/compose.yaml exposes nothing without a secret (issue 15): only web and Flower are
published, on the host's loopback; Redis needs a password (and every Redis URL carries it), Flower
HTTP basic auth, and Ray's dashboard / job API a token, each from the environment with no default.
Read from the file itself: no docker-compose needed (tests/deploy/test_compose.py checks the same
file as Compose resolves it, where docker-compose is installed)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import yaml

from tests.deploy.conftest import DOCKER_DIR

COMPOSE = DOCKER_DIR / "compose.yaml"
EXAMPLE = DOCKER_DIR / "production.env.example"
RAY_SERVICES = ("ray-head", "ray-worker", "ray-worker-gpu", "memlistener-deploy")


@pytest.fixture(scope="module")
def model() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _required(value: str, name: str) -> bool:
    """``value`` is exactly the compose interpolation of ``name`` that refuses to start without it."""
    return value.startswith(f"${{{name}:?")


def test_only_web_flower_and_prometheus_are_published_and_only_on_loopback(model):
    published = {name: svc["ports"] for name, svc in model["services"].items() if svc.get("ports")}
    assert set(published) == {"web", "flower", "prometheus"}
    assert model["services"]["prometheus"]["profiles"] == ["metrics"]  # opt-in
    for name, ports in published.items():
        for port in ports:
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_redis_requires_a_password_from_the_environment(model):
    redis = model["services"]["redis"]
    command = redis["command"]
    assert "--requirepass" in command
    assert _required(command[command.index("--requirepass") + 1], "REDIS_PASSWORD")
    # The healthcheck authenticates and is healthy only on PONG (redis-cli exits 0 on NOAUTH).
    assert _required(redis["environment"]["REDISCLI_AUTH"], "REDIS_PASSWORD")
    assert "PONG" in " ".join(redis["healthcheck"]["test"])


@pytest.mark.parametrize("name", ["CELERY_BROKER_URL", "CACHE_URL"])
def test_every_redis_url_carries_the_password(model, name):
    url = model["x-django-env"][name]
    parts = urlsplit(url.replace("${REDIS_PASSWORD:?set REDIS_PASSWORD}", "PW"))
    assert (parts.scheme, parts.hostname, parts.port, parts.password) == ("redis", "redis", 6379, "PW"), url


def test_flower_requires_basic_auth_from_the_environment(model):
    command = model["services"]["flower"]["command"]
    auth = [arg for arg in command if arg.startswith("--basic-auth=")]
    assert len(auth) == 1 and _required(auth[0].removeprefix("--basic-auth="), "FLOWER_BASIC_AUTH")


def test_every_ray_process_uses_token_auth(model):
    env = model["x-ray-env"]
    assert env["RAY_AUTH_MODE"] == "token" and _required(env["RAY_AUTH_TOKEN"], "RAY_AUTH_TOKEN")
    for name in RAY_SERVICES:
        assert model["services"][name].get("environment") == env, f"{name} lacks the Ray token"


def test_the_example_environment_documents_the_new_secrets_empty():
    values = dict(
        line.split("=", 1) for line in EXAMPLE.read_text().splitlines() if line and not line.startswith("#")
    )
    for name in ("REDIS_PASSWORD", "FLOWER_BASIC_AUTH", "RAY_AUTH_TOKEN"):
        assert values.get(name) == "", f"{name} missing from {EXAMPLE.name} or filled in"
    assert all(urlsplit(values[n]).password for n in ("CELERY_BROKER_URL", "CACHE_URL"))
