"""requirements/lock.txt: the fully pinned set `make venv`, CI and the images install with.

Every dependency pyproject.toml declares (core and every extra the Makefile installs) and the
client's are pinned there to one exact version that satisfies the declared range; the Makefile and
the images (but vLLM's, which pins its own torch and transformers) install with `-c` of it."""

from __future__ import annotations

import re
import tomllib

import pytest
from dockerfile_parse import DockerfileParser
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.deploy.conftest import DOCKER_DIR, ROOT

LOCK = ROOT / "requirements" / "lock.txt"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CLIENT = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())
MAKEFILE = (ROOT / "Makefile").read_text()
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.!+]*)$")
UNLOCKED_IMAGES = {"memlistener-gpu": "vLLM pins its own CUDA torch and transformers 5.x"}


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for number, line in enumerate(LOCK.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = PIN.match(line.strip())
        assert match, f"lock.txt line {number} is not an exact pin: {line!r}"
        name = canonicalize_name(match[1])
        assert name not in pins, f"lock.txt pins {name} twice"
        pins[name] = Version(match[2])
    return pins


def _makefile_extras() -> list[str]:
    match = re.search(r"^EXTRAS \?= (\S+)$", MAKEFILE, re.MULTILINE)
    assert match, "the Makefile sets no EXTRAS"
    return match[1].split(",")


def _declared() -> list[str]:
    extras = PYPROJECT["project"]["optional-dependencies"]
    reqs = list(PYPROJECT["project"]["dependencies"]) + list(CLIENT["project"]["dependencies"])
    for extra in _makefile_extras():
        reqs += extras[extra]
    return reqs


def test_lock_pins_exact_versions_and_no_paths():
    pins = _pins()
    assert len(pins) > 50
    text = LOCK.read_text()
    assert "file:" not in text and " @ " not in text and "/work/" not in text
    assert "personatree" not in pins and "personatree-client" not in pins  # installed from the checkout


def test_every_extra_the_makefile_installs_is_an_extra_and_every_extra_is_installed():
    assert set(_makefile_extras()) == set(PYPROJECT["project"]["optional-dependencies"])


@pytest.mark.parametrize("requirement", _declared())
def test_every_declared_dependency_is_locked_within_its_range(requirement):
    req = Requirement(requirement)
    pins = _pins()
    name = canonicalize_name(req.name)
    assert name in pins, f"{req.name} is declared but not in requirements/lock.txt (make lock)"
    assert req.specifier.contains(pins[name], prereleases=True), (
        f"lock.txt pins {req.name}=={pins[name]}, outside {req.specifier} (make lock)"
    )


def test_makefile_installs_with_the_lock():
    assert re.search(r"^LOCK := requirements/lock\.txt$", MAKEFILE, re.MULTILINE)
    installs = re.findall(r"^\t\$\(PIP\) install (.*)$", MAKEFILE, re.MULTILINE)
    project = [line for line in installs if "-e " in line]
    assert len(project) == 2 and all("-c $(LOCK)" in line for line in project), installs
    stamp = re.search(r"^\$\(STAMP\): (.*)\|", MAKEFILE, re.MULTILINE)
    assert stamp and "$(LOCK)" in stamp[1], "a new lock must reinstall the virtualenv"


@pytest.mark.parametrize("path", sorted(DOCKER_DIR.glob("*.Dockerfile")), ids=lambda p: p.name)
def test_images_install_with_the_lock(path):
    structure = DockerfileParser(path=str(path)).structure
    runs = [x["value"] for x in structure if x["instruction"] == "RUN"]
    pip_lines = [
        seg for run in runs for seg in re.split(r"&&", run) if re.search(r"\bpip (install|wheel)\b", seg)
    ]
    assert pip_lines, f"{path.name} installs nothing"
    image = path.name.removesuffix(".Dockerfile")
    if image in UNLOCKED_IMAGES:
        assert all(" -c " not in seg for seg in pip_lines)
        assert "requirements/lock.txt" in path.read_text()  # the comment saying why
        return
    copies = [x["value"] for x in structure if x["instruction"] == "COPY"]
    dests = [c.split()[-1] for c in copies if c.split()[0] == "requirements/lock.txt"]
    locks = {d + "lock.txt" if d.endswith("/") else d for d in dests}
    assert locks, f"{path.name} does not COPY requirements/lock.txt"
    for seg in pip_lines:
        constraint = re.search(r"\s-c\s+(\S+)", seg)
        assert constraint, f"{path.name}: pip without the lock: {seg.strip()}"
        assert constraint[1] in locks, f"{path.name}: -c {constraint[1]} is not the copied lock {locks}"
