"""docker/k8s/monitoring.yaml scrapes every process that exports metrics and alerts like compose;
docker/k8s/rayservice-cpu.yaml is the CPU variant of the MemListener's RayService."""

from __future__ import annotations

import pytest
import yaml

from serving.config import AppConfig
from tests.deploy.conftest import DOCKER_DIR, ROOT

K8S = DOCKER_DIR / "k8s"


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def _containers(doc: dict) -> list[dict]:
    return doc["spec"]["template"]["spec"]["containers"]


@pytest.fixture(scope="module")
def monitoring() -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in _docs("monitoring.yaml")}


def test_the_prometheus_rule_is_the_compose_alert_file(monitoring):
    alerts = yaml.safe_load((DOCKER_DIR / "prometheus" / "alerts.yml").read_text())
    rule = monitoring["personatree"]
    assert rule["kind"] == "PrometheusRule"
    assert rule["spec"]["groups"] == alerts["groups"]


def test_pod_monitors_select_the_pods_and_ports_of_the_manifests(monitoring):
    deployments = {d["metadata"]["name"]: d for d in _docs("personatree.yaml") if d["kind"] == "Deployment"}
    web = monitoring["personatree-web"]["spec"]
    assert web["selector"]["matchLabels"] == deployments["personatree-web"]["spec"]["selector"]["matchLabels"]
    assert web["podMetricsEndpoints"][0]["path"] == "/metrics"
    assert any(p.get("name") == "http" for p in _containers(deployments["personatree-web"])[0]["ports"])
    (names,) = [
        e["values"] for e in monitoring["personatree-workers"]["spec"]["selector"]["matchExpressions"]
    ]
    config = next(d for d in _docs("personatree.yaml") if d["kind"] == "ConfigMap")["data"]
    for name in names:
        (worker,) = _containers(deployments[name])
        assert {"name": "metrics", "containerPort": int(config["PERSONATREE_WORKER_METRICS_PORT"])} in worker[
            "ports"
        ]


@pytest.mark.parametrize("manifest", ["rayservice.yaml", "rayservice-cpu.yaml"])
def test_every_ray_node_exports_metrics_on_the_scraped_port(manifest):
    (svc,) = _docs(manifest)
    cluster = svc["spec"]["rayClusterConfig"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for group in groups:
        assert group["rayStartParams"]["metrics-export-port"] == "8080"
        (container,) = group["template"]["spec"]["containers"]
        assert {"containerPort": 8080, "name": "metrics"} in container["ports"]


def test_the_cpu_rayservice_serves_the_cpu_config_from_the_image():
    (svc,) = _docs("rayservice-cpu.yaml")
    (gpu,) = _docs("rayservice.yaml")
    assert svc["metadata"]["name"] == gpu["metadata"]["name"]  # same Service for Django
    (app,) = yaml.safe_load(svc["spec"]["serveConfigV2"])["applications"]
    (cpu,) = yaml.safe_load((ROOT / "serving" / "config" / "cpu.yaml").read_text())["applications"]
    assert app["import_path"] == cpu["import_path"] and app["route_prefix"] == cpu["route_prefix"]
    ours = AppConfig.model_validate(app["args"]).model_dump(exclude={"num_replicas"})
    assert ours == AppConfig.model_validate(cpu["args"]).model_dump(exclude={"num_replicas"})
    cluster = svc["spec"]["rayClusterConfig"]
    for group in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]:
        spec = group["template"]["spec"]
        (container,) = spec["containers"]
        assert container["image"].rsplit("/", 1)[-1] == "personatree-memlistener-cpu:0.1.0"
        assert "nvidia.com/gpu" not in container["resources"]["limits"]
        assert all(
            "persistentVolumeClaim" not in v for v in spec.get("volumes", [])
        )  # the model is in the image
    # model_path is relative to the image's WORKDIR /app, where the build assembles the model
    assert (
        "--output /app/var/models/memlistener.gguf" in (DOCKER_DIR / "memlistener-cpu.Dockerfile").read_text()
    )


def test_the_gpu_rayservice_says_how_its_model_volume_is_filled():
    text = (K8S / "rayservice.yaml").read_text()
    assert "personatree-memlistener-models" in text and "kubectl cp" in text
