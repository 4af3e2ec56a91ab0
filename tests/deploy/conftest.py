"""Helpers shared by the deployment tests: what the settings read, parsed from their source.

The settings files are the contract for every deployment file (compose, stack, env example):
a name the settings never read is a typo or a stale variable, and a production variable
without a default must be set everywhere production runs.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_DIR = ROOT / "personatree_site" / "settings"
DOCKER_DIR = ROOT / "docker"

# `env.str("NAME"`, `env.int( "NAME"`, `env("NAME"` ... as written in the settings files.
_ENV_CALL = re.compile(r"""\benv(?:\.\w+)?\(\s*["']([A-Z][A-Z0-9_]*)["']""")

# Variables Django services may carry that the settings files do not read, each with its reader.
NOT_SETTINGS = {
    "DJANGO_SETTINGS_MODULE": "read by Django (manage.py, wsgi.py, celery.py) to pick the settings module",
}


@cache
def settings_env_names() -> frozenset[str]:
    """Django's and Celery's variables as the settings files read them, and every PersonaTree setting
    (declared in memory/conf.py, read by ``conf.from_environ``)."""
    from memory import conf

    names: set[str] = set()
    for path in sorted(SETTINGS_DIR.glob("*.py")):
        names.update(_ENV_CALL.findall(path.read_text()))
    for section in conf.Settings.model_fields.values():
        names.update(f"PERSONATREE_{info.alias}" for info in section.annotation.model_fields.values())  # type: ignore[union-attr]
    return frozenset(names)


@cache
def required_production_env() -> frozenset[str]:
    """Names production.py reads with no default: start-up fails without them."""
    tree = ast.parse((SETTINGS_DIR / "production.py").read_text())
    required = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        is_env = (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "env"
        ) or (isinstance(func, ast.Name) and func.id == "env")
        if not is_env or not node.args or not isinstance(node.args[0], ast.Constant):
            continue
        if not any(k.arg == "default" for k in node.keywords):
            required.add(node.args[0].value)
    return frozenset(required)


def module_file(dotted: str) -> Path | None:
    """The repository file of a first-party module or package, or None."""
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_defines(dotted: str, name: str) -> bool:
    path = module_file(dotted)
    if path is None:
        return False
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
    return False


def string_constant(dotted: str, name: str) -> str | None:
    path = module_file(dotted)
    if path is None:
        return None
    for node in ast.parse(path.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and isinstance(node.value, ast.Constant)
        ):
            return node.value.value
    return None


#: Set (to anything but "" or "0") where the validator must be present, e.g. in CI: then its
#: absence fails the compose tests instead of skipping them.
REQUIRE_COMPOSE_ENV = "PERSONATREE_REQUIRE_DOCKER_COMPOSE"


def docker_compose_or_skip() -> str:
    """The docker-compose binary; skip the calling test (with the reason) where it is absent.

    Only `.ci/run` installs it (Debian's package, no engine needed): on a fresh clone `make test`
    reports the compose tests as skipped, not as errors. With PERSONATREE_REQUIRE_DOCKER_COMPOSE
    set its absence fails them instead.
    """
    path = shutil.which("docker-compose")
    if path is None:
        reason = (
            "docker-compose not found on PATH: it validates docker/compose.yaml without an engine "
            "(.ci/run installs it; locally: apt-get install -y --no-install-recommends docker-compose)"
        )
        if os.environ.get(REQUIRE_COMPOSE_ENV, "") not in ("", "0"):
            pytest.fail(f"{reason}; {REQUIRE_COMPOSE_ENV} is set, so it is required")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def docker_compose_bin() -> str:
    return docker_compose_or_skip()
