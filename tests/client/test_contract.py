"""The Python client follows the committed OpenAPI document (``docs/openapi.json``).

Each result type of the client is paired with the schema it is read from; its fields must be that
schema's properties, no more and no fewer, except those listed here with why (``raw`` holds the
whole answer, so a field the client leaves out is still readable). A field added, renamed or
removed on either side fails this test until the other side follows. The request bodies the
client writes (a message) and the values it types as literals (roles, modes, scopes, event
types) are checked the same way.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
import typing

import personatree_client
import pytest
from personatree_client import admin, models, results

from memory.management.commands.openapi import document_path

#: Client fields that are no schema property: the whole answer, and what the client adds itself.
CLIENT_ONLY = {"raw", "batches"}

#: client type -> (schema, {property the client does not copy into a field: why}).
PAIRS: dict[type, tuple[str, dict[str, str]]] = {
    models.Receipt: ("AcceptedOut", {}),
    models.IngestResult: ("IngestOut", {}),
    models.ChunkFailure: ("ChunkFailureOut", {}),
    models.IngestStatus: ("IngestStatusOut", {}),
    models.ChunkSpan: ("FlushedChunkOut", {}),
    results.Tree: ("TreeOut", {}),
    results.Version: ("VersionOut", {}),
    results.Export: ("SubjectExport", {"next": "pages are followed by the client"}),
    results.Erasure: ("SubjectErased", {}),
    results.RenderedContext: ("RenderedOut", {}),
    results.Context: ("ContextOut", {}),
    results.Answer: ("AnswerOut", {}),
    results.SubjectSummary: ("SubjectOut", {}),
    results.Leaf: ("LeafWriteOut", {}),
    admin.ApiKey: ("KeyCreatedOut", {}),
    admin.WebhookEndpoint: ("EndpointWithSecretOut", {}),
    admin.DeliveryAttempt: ("AttemptOut", {}),
    admin.WebhookDelivery: ("DeliveryOut", {}),
}
#: Pairs for types another part of the client adds (checked when the client has them).
OPTIONAL_PAIRS = {
    "SearchResult": ("SearchOut", {"timings_ms": "kept in raw: server-side timings"}),
    "LeafHit": ("LeafHitOut", {}),
    "Revert": ("RevertOut", {}),
    "Change": ("ChangeOut", {}),
}
#: Client result types (``from_json``) read from no one schema, and why; every other one is paired.
UNPAIRED = {
    "FlushResult": "two schemas in one answer: chunks_created (FlushedChunkOut) and the status (IngestStatusOut)",
    "LeafChange": "LeafChangeOut with its actor flattened into actor_kind and actor_name",
    "ImportJob": "ImportOut; the client does not read bytes, ingested_at, location, started_at",
    "RequeuedChunk": "ChunkOut (memory/api/chunks.py)",
    "EvidenceHit": "EvidenceHitOut with its source flattened",
}

#: client literal type -> the schema of the values the server accepts or answers.
LITERALS = {
    models.Role: ("RoleEnum", None),
    models.Mode: ("ModeEnum", None),
    admin.Scope: ("ScopesEnum", None),
    admin.EventType: ("EventTypesEnum", None),
}


@pytest.fixture(scope="module")
def schemas() -> dict:
    return json.loads(document_path().read_text(encoding="utf-8"))["components"]["schemas"]


def _pairs() -> list[tuple[type, str, dict[str, str]]]:
    pairs = [(cls, schema, omitted) for cls, (schema, omitted) in PAIRS.items()]
    for name, (schema, omitted) in OPTIONAL_PAIRS.items():
        cls = getattr(results, name, None)
        if cls is not None:
            pairs.append((cls, schema, omitted))
    return pairs


@pytest.mark.parametrize(("cls", "schema", "omitted"), _pairs(), ids=lambda v: getattr(v, "__name__", ""))
def test_client_result_fields_are_the_schema_properties(schemas, cls, schema, omitted):
    assert schema in schemas, f"{cls.__name__} is read from {schema}, which the document no longer has"
    properties = set(schemas[schema].get("properties", {}))
    fields = {f.name for f in dataclasses.fields(cls)} - CLIENT_ONLY
    assert not fields - properties, f"{cls.__name__} has fields {schema} lacks: {sorted(fields - properties)}"
    missing = properties - fields - set(omitted)
    assert not missing, f"{schema} has properties {cls.__name__} lacks: {sorted(missing)}"
    assert not set(omitted) - properties, f"omitted {sorted(set(omitted) - properties)} are not in {schema}"


def test_every_client_result_type_is_paired_with_a_schema():
    """A result type added to the client is paired above (or listed in UNPAIRED, saying why)."""
    paired = {cls.__name__ for cls in PAIRS} | set(OPTIONAL_PAIRS) | set(UNPAIRED)
    found = set()
    for module in pkgutil.iter_modules(personatree_client.__path__):
        mod = importlib.import_module(f"personatree_client.{module.name}")
        for name, obj in vars(mod).items():
            if dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__ and hasattr(obj, "from_json"):
                found.add(name)
    assert not found - paired, f"client result types paired with no schema: {sorted(found - paired)}"


def test_client_message_is_the_documented_message(schemas):
    message = models.Message(role="user", content="hi", ts="2026-01-01T00:00:00Z", session_id="s1")
    assert set(message.to_json()) == set(schemas["MessageIn"]["properties"])
    assert set(schemas["MessageIn"].get("required", ())) <= set(message.to_json())


@pytest.mark.parametrize(("literal", "schema"), [(k, v[0]) for k, v in LITERALS.items()], ids=str)
def test_client_literals_are_the_documented_enums(schemas, literal, schema):
    assert set(typing.get_args(literal)) == set(schemas[schema]["enum"]), schema
