"""docker/k8s/personatree.yaml: the Django tiers on Kubernetes beside the KubeRay RayService.

Loaded with PyYAML (no cluster needed): the expected kinds, probes on every long-running
container, exactly one beat that never overlaps itself, pinned images with resources, and every
environment variable one that the settings read, the required ones present in every Django pod."""

from __future__ import annotations

import pytest
import yaml

from serving.chat_compat import CHAT_PATH
from tests.deploy.conftest import (
    DOCKER_DIR,
    NOT_SETTINGS,
    ROOT,
    module_defines,
    required_production_env,
    settings_env_names,
    string_constant,
)

MANIFEST = DOCKER_DIR / "k8s" / "personatree.yaml"
RAYSERVICE = DOCKER_DIR / "k8s" / "rayservice.yaml"


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def _one(docs, kind: str, name: str) -> dict:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def _pod_specs(docs):
    for d in docs:
        if d["kind"] in ("Deployment", "Job"):
            yield d["metadata"]["name"], d["spec"]["template"]["spec"]


def _containers(docs):
    for name, spec in _pod_specs(docs):
        for c in spec.get("initContainers", []) + spec["containers"]:
            yield f"{name}/{c['name']}", c


@pytest.fixture(scope="module")
def config_map(docs) -> dict[str, str]:
    return _one(docs, "ConfigMap", "personatree-config")["data"]


def test_manifest_has_every_django_tier(docs):
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds == [
        ("ConfigMap", "personatree-config"),
        ("Deployment", "personatree-beat"),
        ("Deployment", "personatree-web"),
        ("Deployment", "personatree-worker-index"),
        ("Deployment", "personatree-worker-ingest"),
        ("Deployment", "personatree-worker-webhooks"),
        ("Job", "personatree-migrate-0-1-0"),
        ("Service", "personatree-web"),
    ]
    assert all(d["apiVersion"] for d in docs)


def test_exactly_one_beat_that_never_overlaps_itself(docs):
    beat = _one(docs, "Deployment", "personatree-beat")
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    beats = [n for n, c in _containers(docs) if c.get("command", [])[3:4] == ["beat"]]
    assert beats == ["personatree-beat/beat"]


def test_one_worker_deployment_per_queue_running_our_celery_app(docs):
    queues = {}
    for name, c in _containers(docs):
        cmd = c.get("command", [])
        if cmd[:4] == ["celery", "-A", "personatree_site", "worker"]:
            queues[name] = cmd[cmd.index("-Q") + 1]
    assert queues == {
        "personatree-worker-ingest/worker": "ingest",
        "personatree-worker-index/worker": "index",
        "personatree-worker-webhooks/worker": "webhooks",
    }
    assert module_defines("personatree_site.celery", "app")


def test_migrations_run_in_a_job_and_web_waits_for_them(docs):
    job = _one(docs, "Job", "personatree-migrate-0-1-0")
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")
    web = _one(docs, "Deployment", "personatree-web")["spec"]["template"]["spec"]
    (wait,) = web["initContainers"]
    assert wait["command"][:3] == ["python", "manage.py", "migrate"] and "--check" in wait["command"]
    assert wait["image"] == web["containers"][0]["image"] == migrate["image"]


def test_web_probes_hit_the_ops_health_route(docs):
    spec = _one(docs, "Deployment", "personatree-web")["spec"]["template"]["spec"]
    (web,) = spec["containers"]
    port_names = {p["name"] for p in web["ports"]}
    ops = (ROOT / "personatree_site" / "ops" / "middleware.py").read_text()
    paths = {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    for probe, path in paths.items():
        get = web[probe]["httpGet"]
        assert get["path"] == path and f'"{path}"' in ops, probe  # answered by OpsMiddleware
        assert get["port"] in port_names


def test_every_long_running_container_has_a_liveness_probe(docs):
    for name, spec in _pod_specs(docs):
        if name.startswith("personatree-migrate"):
            continue
        for c in spec["containers"]:
            assert "livenessProbe" in c, f"{name}/{c['name']} has no liveness probe"


def test_workers_ping_themselves_and_beat_watches_its_schedule_file(docs):
    for name in ("personatree-worker-ingest", "personatree-worker-index"):
        (c,) = _one(docs, "Deployment", name)["spec"]["template"]["spec"]["containers"]
        probe = " ".join(c["livenessProbe"]["exec"]["command"])
        assert "inspect ping" in probe and "celery@$HOSTNAME" in probe, name
    (beat,) = _one(docs, "Deployment", "personatree-beat")["spec"]["template"]["spec"]["containers"]
    schedule = beat["command"][beat["command"].index("--schedule") + 1]
    probe = beat["livenessProbe"]["exec"]["command"]
    assert probe[:2] == ["python", "-c"] and f"'{schedule}*'" in probe[2]
    compile(probe[2], "<beat probe>", "exec")  # the probe is valid Python
    mounts = {m["mountPath"] for m in beat["volumeMounts"]}
    assert any(schedule.startswith(m + "/") for m in mounts), "the schedule must live on a mounted volume"


def test_images_are_ours_pinned_and_every_container_has_resources(docs):
    for name, c in _containers(docs):
        repo, _, tag = c["image"].rpartition("/")[2].partition(":")
        assert tag and tag != "latest", f"{name}: {c['image']}"
        assert repo in ("personatree-web", "personatree-worker"), f"{name}: {c['image']}"
        assert tag == "0.1.0"  # the tag compose builds (docker/compose.yaml)
        resources = c.get("resources") or {}
        for part in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources.get(part, {})), f"{name}: {part} unset"


def test_pods_run_as_non_root(docs):
    for name, spec in _pod_specs(docs):
        ctx = spec["securityContext"]
        assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] != 0, name


def test_selectors_match_their_pods(docs):
    for d in docs:
        if d["kind"] == "Deployment":
            selector = d["spec"]["selector"]["matchLabels"]
            assert selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
    service = _one(docs, "Service", "personatree-web")
    web = _one(docs, "Deployment", "personatree-web")["spec"]["template"]
    assert service["spec"]["selector"].items() <= web["metadata"]["labels"].items()
    ports = {p["name"] for p in web["spec"]["containers"][0]["ports"]}
    assert all(p["targetPort"] in ports for p in service["spec"]["ports"])


def test_env_names_are_read_by_the_settings_and_required_ones_are_set(docs, config_map):
    known = settings_env_names() | set(NOT_SETTINGS)
    assert set(config_map) - known == set(), "ConfigMap sets names no settings file reads"
    assert config_map["DJANGO_SETTINGS_MODULE"] == "personatree_site.settings.production"
    for name, c in _containers(docs):
        refs = [e["configMapRef"]["name"] for e in c.get("envFrom", [])]
        assert refs == ["personatree-config"], name
        env = {e["name"]: e for e in c.get("env", [])}
        assert set(env) - known == set(), f"{name} sets names no settings file reads"
        for var, entry in env.items():
            ref = entry["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "personatree-secrets" and ref["key"] == var, name
        provided = set(config_map) | {
            v for v, e in env.items() if not e["valueFrom"]["secretKeyRef"].get("optional")
        }
        missing = required_production_env() - provided
        assert not missing, f"{name} lacks required production variables {sorted(missing)}"


def test_tiers_point_at_the_rayservice_and_its_chat_route(config_map):
    rayservice = yaml.safe_load(RAYSERVICE.read_text())
    serve_svc = f"http://{rayservice['metadata']['name']}-serve-svc:8000"
    route = string_constant("serving.app", "ROUTE_PREFIX")
    assert config_map["PERSONATREE_MEMLISTENER_BACKEND"] == "ray"
    assert config_map["PERSONATREE_MEMLISTENER_URL"] == f"{serve_svc}{route}"
    assert config_map["PERSONATREE_RESPONDER_BACKEND"] == "openai"
    # The openai client appends /chat/completions to its base URL: the Serve app's chat route.
    base = config_map["PERSONATREE_OPENAI_BASE_URL"]
    assert base + "/chat/completions" == f"{serve_svc}{route}{CHAT_PATH}"
    assert config_map["PERSONATREE_OPENAI_MODEL"]
