"""OpenAPI links (how one answer feeds the next operation: generated clients and schemathesis's
stateful phase follow them) and ``x-refusals``, the 400s of a schema-valid request."""

from __future__ import annotations

SUBJECT_IN_BODY = {"external_id": "$response.body#/external_id"}
SUBJECT_OF_ANSWER = {"external_id": "$response.body#/subject"}
SUBJECT_IN_PATH = {"external_id": "$request.path.external_id"}
WEBHOOK_IN_BODY = {"public_id": "$response.body#/id"}
WEBHOOK_IN_PATH = {"public_id": "$request.path.public_id"}
KEY_IN_BODY = {"prefix": "$response.body#/prefix"}
LEAF_IN_BODY = {"external_id": "$response.body#/subject", "leaf_path": "$response.body#/path"}


def _link(operation_id: str, parameters: dict, description: str) -> dict:
    return {"operationId": operation_id, "parameters": dict(parameters), "description": description}


def _subject_reads(parameters: dict) -> dict:
    """Links from an answer naming a subject to what one does with it next."""
    return {
        "IngestMessages": _link("v1_subjects_messages_create", parameters, "Append messages."),
        "IngestStatus": _link("v1_subjects_ingest_retrieve", parameters, "Where its messages are."),
        "Flush": _link("v1_subjects_flush_create", parameters, "Close the partial window now."),
        "Tree": _link("v1_subjects_tree_retrieve", parameters, "Its current tree."),
        "Versions": _link("v1_subjects_versions_retrieve", parameters, "Its version history."),
        "Context": _link("v1_subjects_context_create", parameters, "Memory context for a query."),
        "Answer": _link("v1_subjects_answer_create", parameters, "An answer to a query."),
        "Export": _link("v1_subjects_export_retrieve", parameters, "Everything stored about it."),
    }


#: (method, path) -> {status: {link name: link}}.
LINKS: dict[tuple[str, str], dict[str, dict]] = {
    ("POST", "/v1/subjects"): {
        "201": _subject_reads(SUBJECT_IN_BODY),
        "200": _subject_reads(SUBJECT_IN_BODY),
    },
    ("POST", "/v1/subjects/{external_id}/messages"): {
        "202": {
            **_subject_reads(SUBJECT_OF_ANSWER),
            "Erase": _link("v1_subjects_destroy", SUBJECT_OF_ANSWER, "Erase the subject."),
        }
    },
    ("GET", "/v1/subjects/{external_id}/tree"): {
        "200": {
            "Versions": _link("v1_subjects_versions_retrieve", SUBJECT_IN_PATH, "Its version history."),
            "Export": _link("v1_subjects_export_retrieve", SUBJECT_IN_PATH, "Everything stored about it."),
        }
    },
    ("PUT", "/v1/subjects/{external_id}/tree/leaves/{leaf_path}"): {
        status: {
            "Leaf": _link("v1_subjects_tree_leaves_retrieve", LEAF_IN_BODY, "Read the leaf back."),
            "EmptyLeaf": _link("v1_subjects_tree_leaves_destroy", LEAF_IN_BODY, "Empty the leaf."),
            "Versions": _link("v1_subjects_versions_retrieve", SUBJECT_OF_ANSWER, "The version it made."),
        }
        for status in ("200", "202")
    },
    ("GET", "/v1/subjects/{external_id}/versions"): {
        "200": {
            "Export": _link("v1_subjects_export_retrieve", SUBJECT_OF_ANSWER, "Everything stored about it."),
        }
    },
    ("GET", "/v1/subjects/{external_id}/export"): {
        "200": {"Erase": _link("v1_subjects_destroy", SUBJECT_OF_ANSWER, "Erase the subject.")}
    },
    ("POST", "/v1/webhooks"): {
        "201": {
            "Webhook": _link("v1_webhooks_retrieve", WEBHOOK_IN_BODY, "Read the endpoint."),
            "ChangeWebhook": _link("v1_webhooks_partial_update", WEBHOOK_IN_BODY, "Change it."),
            "Deliveries": _link("v1_webhooks_deliveries_retrieve", WEBHOOK_IN_BODY, "Its deliveries."),
            "RotateSecret": _link("v1_webhooks_rotate_secret_create", WEBHOOK_IN_BODY, "A new secret."),
            "DeleteWebhook": _link("v1_webhooks_destroy", WEBHOOK_IN_BODY, "Delete it."),
        }
    },
    ("POST", "/v1/webhooks/{public_id}/rotate-secret"): {
        "200": {"Deliveries": _link("v1_webhooks_deliveries_retrieve", WEBHOOK_IN_PATH, "Its deliveries.")}
    },
    ("POST", "/v1/keys"): {
        "201": {
            "Key": _link("v1_keys_retrieve", KEY_IN_BODY, "Read the key."),
            "RotateKey": _link("v1_keys_rotate_create", KEY_IN_BODY, "Replace it by a new key."),
            "RevokeKey": _link("v1_keys_destroy", KEY_IN_BODY, "Revoke it."),
        }
    },
    ("POST", "/v1/keys/{prefix}/rotate"): {
        "201": {
            "Key": _link("v1_keys_retrieve", KEY_IN_BODY, "Read the new key."),
            "RevokeKey": _link("v1_keys_destroy", KEY_IN_BODY, "Revoke the new key."),
        }
    },
}


def links_for(method: str, path: str) -> dict[str, dict]:
    """``{status: links}`` for the operation (a new copy each time: the generator edits in place)."""
    return {
        status: {name: {**link, "parameters": dict(link["parameters"])} for name, link in links.items()}
        for status, links in LINKS.get((method.upper(), path), {}).items()
    }


# --- refusals the JSON Schema cannot state ---------------------------------------------------------


#: A 400 that a request matching the operation's schema can still get, because the rule behind it
#: cannot be written in OpenAPI 3.0's JSON Schema: it depends on stored state, on another field of
#: the same request, or on a validator of the engine. Listed in the operation as ``x-refusals``
#: (``code`` and the ``field`` it names, a prefix for nested fields) so clients and the contract
#: test (tests/fuzz/contract.py) know them; any other 400 to a schema-valid request is a defect.
def _refusal(code: str, field: str, rule: str) -> dict:
    return {"code": code, "field": field, "rule": rule}


PUBLIC_URL = _refusal("invalid_url", "url", "the URL must reach a public address (checked by name)")
SCHEMA_PAIR = "schema_id and schema_version go together"

REFUSALS: dict[tuple[str, str], list[dict]] = {
    ("POST", "/v1/schemas"): [
        _refusal(
            "invalid",
            "document",
            "the engine's schema validation (docs/SCHEMAS.md), a reserved shipped id, a version that is "
            "not the next one",
        ),
    ],
    ("POST", "/v1/schema-migrations"): [
        _refusal("invalid_mapping", "document", "the engine's mapping validation"),
        _refusal("unknown_schema", "document", "source and target must be schemas the tenant has"),
        _refusal("invalid", "document", "source and target as {id, version}; an id already used"),
    ],
    ("POST", "/v1/webhooks"): [PUBLIC_URL],
    ("PATCH", "/v1/webhooks/{public_id}"): [PUBLIC_URL],
    ("POST", "/v1/subjects"): [
        _refusal("invalid", "schema_id", SCHEMA_PAIR),
        _refusal("invalid", "schema_version", SCHEMA_PAIR),
    ],
    ("POST", "/v1/subjects/{external_id}/messages"): [
        _refusal("duplicate_key", "messages", "idempotency keys are unique within one call"),
    ],
    ("POST", "/v1/imports"): [
        _refusal("invalid", "file", "the JSONL is required: the ndjson body or the form's file part"),
        _refusal(
            "invalid_import_line", "line", "every line is a record the backfill reads (docs/BACKFILL.md)"
        ),
        _refusal("empty_import", "body", "at least one line"),
        _refusal("invalid", "source", "source is at most 200 characters"),
    ],
    ("POST", "/v1/subjects/{external_id}/search"): [_refusal("invalid", "since", "since is not after until")],
    ("PUT", "/v1/subjects/{external_id}/tree/leaves/{leaf_path}"): [
        _refusal("gate_rejected", "value", "the write gate: the leaf's own budget, an empty value"),
    ],
}


def refusals_for(method: str, path: str) -> list[dict]:
    return [dict(r) for r in REFUSALS.get((method.upper(), path), [])]
