"""The llama.cpp disk prompt cache after an erasure (issue 15): off by default, and emptied by
every erasure when it is on, through diskcache so a serving process that has it open keeps working."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memory.services.erasure import purge_prompt_cache
from memory.services.subjects import subject_erase

diskcache = pytest.importorskip("diskcache")
ROOT = Path(__file__).resolve().parents[3]
CANARY = "Zqx-prompt-cache-canary"


def files_with(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def seed(root: Path) -> diskcache.Cache:
    server = diskcache.Cache(str(root / "memlistener-1234"))  # held open, as the serving process does
    server[(1, 2, 3)] = f"user: my cat is {CANARY}".encode()
    server[(1, 2, 4)] = f"user: a long prompt {CANARY} ".encode() * 5000  # stored as its own file
    assert server.get((1, 2, 3))
    return server


def test_purge_empties_every_model_cache_while_a_server_holds_it_open(tmp_path):
    server = seed(tmp_path)
    other = diskcache.Cache(str(tmp_path / "other-model-99"))
    other["k"] = CANARY.encode()
    other.close()
    assert files_with(tmp_path, CANARY)
    assert purge_prompt_cache(str(tmp_path)) == 3
    assert files_with(tmp_path, CANARY) == []  # database, write-ahead log and value files
    assert server.get((1, 2, 3)) is None
    server[(9,)] = b"refilled"  # the server's handle still works
    assert server[(9,)] == b"refilled"
    server.close()
    assert purge_prompt_cache("") == 0 and purge_prompt_cache(str(tmp_path / "absent")) == 0


@pytest.mark.django_db
def test_an_erasure_empties_the_configured_cache(
    settings, tmp_path, subject, django_capture_on_commit_callbacks
):
    settings.PERSONATREE = {**settings.PERSONATREE, "MEMLISTENER_PROMPT_CACHE_DIR": str(tmp_path)}
    server = seed(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        subject_erase(subject=subject, erased_by="test")
    assert files_with(tmp_path, CANARY) == []
    server.close()


def test_the_disk_prompt_cache_is_off_by_default():
    env = {k: v for k, v in os.environ.items() if k != "PERSONATREE_MEMLISTENER_PROMPT_CACHE_DIR"}
    code = "from personatree_site.settings import base; print(repr(base.PERSONATREE['MEMLISTENER_PROMPT_CACHE_DIR']))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "''"
    serve = yaml.safe_load((ROOT / "serving" / "config" / "cpu.yaml").read_text())
    assert "prompt_cache_dir" not in str(serve)
