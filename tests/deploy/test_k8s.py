"""docker/k8s/rayservice.yaml: a KubeRay RayService whose Serve config is our real app."""

from __future__ import annotations

import tomllib

import pytest
import yaml

from serving.config import AppConfig
from tests.deploy.conftest import DOCKER_DIR, ROOT, module_defines, string_constant

MANIFEST = DOCKER_DIR / "k8s" / "rayservice.yaml"


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


@pytest.fixture(scope="module")
def rayservice(docs) -> dict:
    (svc,) = [d for d in docs if d["kind"] == "RayService"]
    return svc


def test_manifest_has_the_expected_kinds(docs):
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [("ray.io/v1", "RayService")]


def test_serve_config_deploys_our_app_with_valid_args(rayservice):
    serve = yaml.safe_load(rayservice["spec"]["serveConfigV2"])
    (app,) = serve["applications"]
    module, _, attr = app["import_path"].partition(":")
    assert module_defines(module, attr), app["import_path"]
    assert app["route_prefix"] == string_constant("serving.app", "ROUTE_PREFIX")
    config = AppConfig.model_validate(app["args"])  # extra="forbid": a stale field fails here
    assert config.engine.kind == "vllm"
    assert config.num_gpus == 1


def test_serve_args_are_the_gpu_config_but_for_the_replica_count(rayservice):
    (app,) = yaml.safe_load(rayservice["spec"]["serveConfigV2"])["applications"]
    (gpu,) = yaml.safe_load((ROOT / "serving" / "config" / "gpu.yaml").read_text())["applications"]
    assert app["import_path"] == gpu["import_path"] and app["route_prefix"] == gpu["route_prefix"]
    ours = AppConfig.model_validate(app["args"]).model_dump(exclude={"num_replicas"})
    assert ours == AppConfig.model_validate(gpu["args"]).model_dump(exclude={"num_replicas"})


def test_ray_version_matches_the_pinned_ray(rayservice):
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (pin,) = [r for r in extras["serve"] if r.startswith("ray[serve]")]
    assert pin.split("==")[1] == rayservice["spec"]["rayClusterConfig"]["rayVersion"]


def _pods(rayservice):
    cluster = rayservice["spec"]["rayClusterConfig"]
    yield "head", cluster["headGroupSpec"]["template"]["spec"]
    for group in cluster["workerGroupSpecs"]:
        yield group["groupName"], group["template"]["spec"]


def test_pods_are_non_root_with_pinned_images(rayservice):
    for name, spec in _pods(rayservice):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] != 0, name
        for container in spec["containers"]:
            tag = container["image"].rsplit("/", 1)[-1].partition(":")[2]
            assert tag and tag != "latest", f"{name}: {container['image']}"


def test_gpu_workers_request_one_gpu_per_replica(rayservice):
    serve = yaml.safe_load(rayservice["spec"]["serveConfigV2"])
    per_replica = AppConfig.model_validate(serve["applications"][0]["args"]).num_gpus
    groups = rayservice["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    (gpu,) = [g for g in groups if g["groupName"] == "gpu"]
    limits = gpu["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert float(limits["nvidia.com/gpu"]) >= per_replica
    assert gpu["minReplicas"] <= gpu["replicas"] <= gpu["maxReplicas"]
