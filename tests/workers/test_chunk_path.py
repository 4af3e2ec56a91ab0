"""The chunk's path from ``POST messages`` to a new version, as docs/ARCHITECTURE.md lists it ("The
path of one chunk"), measured on the embedded default: eager Celery, the extractive listener.

At each moment the chunk takes a new form (cut into a chunk row, made a listener job, read into a
pointing context, written as pointer items, mapped to ops, gated, written as a version) the files
of ``memory/``, ``workers/`` and ``serving/`` holding a frame on the call stack are recorded
(``sys.setprofile``). Their union, in order of first appearance, is the path; a file that returns
to a stack after another file took the chunk from it would be a module called back by a module it
called. The request middleware (``personatree_site/ops``) wraps every request and is not counted.

The dialogue is written for this test (no benchmark text).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.urls import reverse

from memory import conf
from memory.engine.schema import default_schema
from memory.models import Chunk, TreeVersion
from serving.client import ClientConfig, get_listener_client, reset_listener_clients

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memory", "workers", "serving")

#: (file, function) entered when the chunk takes a new form.
MOMENTS = {
    ("memory/services/ingest.py", "_build_locked"): "cut into a chunk row",
    ("workers/dispatcher.py", "build_jobs"): "made a listener job",
    ("serving/facts.py", "prepare"): "read into a pointing context",
    ("serving/engines/extractive.py", "fact_pointers"): "written as pointer items",
    ("memory/engine/pointing.py", "ops_from_pointers"): "mapped to ops",
    ("memory/engine/gate.py", "gate"): "gated",
    ("memory/services/tree_store.py", "write_applies"): "written as a version",
}

#: The path docs/ARCHITECTURE.md names, in order.
PATH = [
    "memory/api/ingest.py",
    "memory/services/ingest.py",
    "workers/dispatcher.py",
    "serving/listener.py",
    "serving/facts.py",
    "serving/engines/extractive.py",
    "memory/engine/pointing.py",
    "memory/engine/gate.py",
    "memory/services/tree.py",
    "memory/services/tree_store.py",
]

TURNS = [
    ("user", "I moved to Lisbon last week and I work as a nurse at the children's hospital."),
    ("assistant", "That sounds like a big change. How is it going?"),
    ("user", "Great so far. My dog Biscuit loves the beach near our flat."),
    ("assistant", "Lovely! Does Biscuit swim?"),
    ("user", "He does, every morning before my shift."),
    ("assistant", "What a routine."),
]


def _product_file(filename: str) -> str | None:
    try:
        rel = Path(filename).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    return rel if rel.split("/", 1)[0] in PACKAGES else None


def _stack(frame) -> list[str]:
    """The product files of the stack, outermost first, consecutive frames of one file as one."""
    files: list[str] = []
    while frame is not None:
        rel = _product_file(frame.f_code.co_filename)
        if rel is not None and (not files or files[-1] != rel):
            files.append(rel)
        frame = frame.f_back
    return files[::-1]


@contextmanager
def recorded_stacks():
    """``{moment: [stack, ...]}`` of the calls made while entered (this thread only)."""
    stacks: dict[str, list[list[str]]] = {}
    files: dict[str, str | None] = {}

    def profile(frame, event, _arg):
        if event != "call":
            return
        name = frame.f_code.co_filename
        rel = files[name] if name in files else files.setdefault(name, _product_file(name))
        moment = MOMENTS.get((rel, frame.f_code.co_name)) if rel is not None else None
        if moment is not None:
            stacks.setdefault(moment, []).append(_stack(frame))

    sys.setprofile(profile)
    try:
        yield stacks
    finally:
        sys.setprofile(None)


def test_one_chunk_changes_hands_in_the_files_the_architecture_names(tenant, make_api_client, settings):
    settings.PERSONATREE = {**settings.PERSONATREE, "MEMLISTENER_BACKEND": "extractive"}
    reset_listener_clients()
    schema = default_schema()
    # the listener loaded before the profile is on: the measured call runs the chunk, not the loading
    get_listener_client(conf.listener_client_config(ClientConfig)).warm(schema.id, schema.version)
    client, _key = make_api_client(tenant, scopes=("ingest", "read"))
    messages = [
        {"role": role, "content": text, "idempotency_key": f"k{i}"} for i, (role, text) in enumerate(TURNS)
    ]
    try:
        with recorded_stacks() as stacks:
            response = client.post(
                reverse("subject-messages", args=["path"]), {"messages": messages}, format="json"
            )
    finally:
        reset_listener_clients()
    assert response.status_code == 202, response.content
    assert Chunk.objects.get().status == Chunk.Status.APPLIED
    assert TreeVersion.objects.filter(chunk__isnull=False).count() == 1

    assert set(stacks) == set(MOMENTS.values()), "every moment ran"
    path: list[str] = []
    for seen in stacks.values():
        for stack in seen:
            path += [f for f in stack if f not in path]
            called_back = [f for i, f in enumerate(stack) if f in stack[:i]]
            assert called_back == [], f"{called_back} re-entered on {stack}"
    assert path == PATH
