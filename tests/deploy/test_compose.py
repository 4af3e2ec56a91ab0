"""docker/compose.yaml: valid for Compose (checked by `docker-compose config`, no engine needed),
complete (every tier of docs/DEPLOY.md), and in step with the settings files."""

from __future__ import annotations

import os
import subprocess
from urllib.parse import urlsplit

import pytest
import yaml

from tests.deploy.conftest import (
    DOCKER_DIR,
    NOT_SETTINGS,
    ROOT,
    required_production_env,
    settings_env_names,
    string_constant,
)

COMPOSE = DOCKER_DIR / "compose.yaml"
SECRETS = {
    "DJANGO_SECRET_KEY": "x" * 50,
    "DJANGO_ALLOWED_HOSTS": "memory.example.com",
    "POSTGRES_PASSWORD": "pg-secret",
    "MINIO_ROOT_PASSWORD": "minio-secret",
    "REDIS_PASSWORD": "redis-secret",
    "FLOWER_BASIC_AUTH": "ops:flower-secret",
    "RAY_AUTH_TOKEN": "ray-secret",
}
TIERS = {
    "postgres",
    "redis",
    "etcd",
    "minio",
    "milvus",
    "ray-head",
    "ray-worker",
    "memlistener-deploy",
    "migrate",
    "web",
    "worker-ingest",
    "worker-index",
    "beat",
    "flower",
}


def _compose(bin_: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in SECRETS}
    return subprocess.run(
        [bin_, "--project-directory", str(DOCKER_DIR), "-f", str(COMPOSE), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=DOCKER_DIR,
    )


@pytest.fixture(scope="module")
def resolved(docker_compose_bin) -> dict:
    """The compose model after interpolation and anchors, as docker-compose itself resolves it."""
    proc = _compose(docker_compose_bin, "--profile", "gpu", "config", env=SECRETS)
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)


def _django_services(model: dict) -> dict[str, dict]:
    return {
        name: svc
        for name, svc in model["services"].items()
        if "DJANGO_SETTINGS_MODULE" in (svc.get("environment") or {})
    }


def test_compose_config_is_valid_for_compose(resolved):
    assert TIERS <= set(resolved["services"]), TIERS - set(resolved["services"])


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_a_secret(docker_compose_bin, missing):
    env = {k: v for k, v in SECRETS.items() if k != missing}
    proc = _compose(docker_compose_bin, "config", "-q", env=env)
    assert proc.returncode != 0
    assert f"set {missing}" in proc.stderr


def test_gpu_worker_is_opt_in_and_reserves_gpus(resolved):
    profiled = {name: svc["profiles"] for name, svc in resolved["services"].items() if svc.get("profiles")}
    assert profiled == {"ray-worker-gpu": ["gpu"], "prometheus": ["metrics"]}
    gpu = resolved["services"]["ray-worker-gpu"]
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert any("gpu" in d["capabilities"] for d in devices)


def test_django_services_set_only_variables_the_settings_read(resolved):
    services = _django_services(resolved)
    assert {"web", "migrate", "worker-ingest", "worker-index", "beat", "flower"} <= set(services)
    known = settings_env_names() | set(NOT_SETTINGS)
    for name, svc in services.items():
        unknown = set(svc["environment"]) - known
        assert not unknown, f"{name} sets variables no settings file reads: {sorted(unknown)}"


def test_django_services_set_every_required_production_variable(resolved):
    required = required_production_env()
    assert {"DJANGO_SECRET_KEY", "DATABASE_URL"} <= required  # the parser found production.py's reads
    for name, svc in _django_services(resolved).items():
        env = svc["environment"]
        assert env["DJANGO_SETTINGS_MODULE"] == "personatree_site.settings.production", name
        missing = {v for v in required if not env.get(v)}
        assert not missing, f"{name} lacks required production variables {sorted(missing)}"


def test_django_services_point_at_the_compose_tiers(resolved):
    env = resolved["services"]["web"]["environment"]
    route = string_constant("serving.app", "ROUTE_PREFIX")
    assert env["PERSONATREE_MEMLISTENER_BACKEND"] == "ray"
    assert env["PERSONATREE_MEMLISTENER_URL"] == f"http://ray-head:8000{route}"
    assert env["PERSONATREE_MILVUS_URI"] == "http://milvus:19530"
    assert env["DATABASE_URL"].endswith("@postgres:5432/personatree")
    broker = urlsplit(env["CELERY_BROKER_URL"])
    assert (broker.scheme, broker.hostname, broker.port) == ("redis", "redis", 6379)
    assert broker.password == SECRETS["REDIS_PASSWORD"]


def test_one_worker_service_per_celery_queue(resolved):
    queues = {}
    for name, svc in resolved["services"].items():
        cmd = svc.get("command") or []
        if cmd[:4] == ["celery", "-A", "personatree_site", "worker"]:
            queues[name] = cmd[cmd.index("-Q") + 1]
    assert queues == {"worker-ingest": "ingest", "worker-index": "index", "worker-webhooks": "webhooks"}


def test_exactly_one_beat(resolved):
    beats = [n for n, svc in resolved["services"].items() if (svc.get("command") or [])[3:4] == ["beat"]]
    assert beats == ["beat"]


def test_images_are_pinned_and_ports_stay_on_loopback(resolved):
    for name, svc in resolved["services"].items():
        image = svc.get("image", "")
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        assert tag and tag != "latest", f"{name}: image {image!r} has no pinned tag"
        for port in svc.get("ports", []):
            published = port if isinstance(port, str) else port.get("host_ip", "")
            assert str(published).startswith("127.0.0.1"), f"{name} publishes {port} beyond loopback"


def test_built_services_use_our_dockerfiles(resolved):
    for name, svc in resolved["services"].items():
        build = svc.get("build")
        if build:
            assert (ROOT / build["dockerfile"]).is_file(), f"{name}: {build['dockerfile']} missing"


def test_memlistener_is_deployed_from_a_derived_config_on_the_port_django_calls(resolved):
    cmd = resolved["services"]["memlistener-deploy"]["command"]
    assert cmd[:2] == ["serve", "deploy"] and cmd[3:] == ["--address", "http://ray-head:8265"]
    assert cmd[2] == "serve/cpu.yaml"  # derived in the image from serving/config/cpu.yaml
    source = yaml.safe_load((ROOT / "serving" / "config" / "cpu.yaml").read_text())
    url = resolved["services"]["web"]["environment"]["PERSONATREE_MEMLISTENER_URL"]
    assert url.startswith(f"http://ray-head:{source['http_options']['port']}/")
    assert source["proxy_location"] == "HeadOnly"  # so the head's port is the one to call


def test_prometheus_is_opt_in_and_scrapes_the_worker_exporters_and_ray(resolved):
    services = resolved["services"]
    assert str(services["prometheus"]["ports"][0]).startswith("127.0.0.1:")
    for name in ("worker-ingest", "worker-index", "worker-webhooks"):
        assert services[name]["environment"]["PERSONATREE_WORKER_METRICS_PORT"] == "9808"
    for name in ("ray-head", "ray-worker", "ray-worker-gpu"):
        assert "--metrics-export-port=8080" in services[name]["command"], name


def test_the_listener_backend_is_chosen_by_an_environment_variable(docker_compose_bin):
    proc = _compose(
        docker_compose_bin, "config", env={**SECRETS, "PERSONATREE_MEMLISTENER_BACKEND": "extractive"}
    )
    assert proc.returncode == 0, proc.stderr
    model = yaml.safe_load(proc.stdout)
    for name in ("web", "worker-ingest", "worker-index"):
        assert model["services"][name]["environment"]["PERSONATREE_MEMLISTENER_BACKEND"] == "extractive"
