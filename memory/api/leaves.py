"""One leaf of a subject's tree (its slashes as they are or as ``%2F``): read, set and empty, the
writes through the one write path as the API key's actor."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from memory import selectors
from memory.api.base import TenantScopedView
from memory.api.fields import MAX_VERSION, TextField, as_of_found
from memory.api.openapi import problems
from memory.api.subjects import TreeParams, tree_params
from memory.engine.gate import Reason
from memory.engine.schema import Leaf
from memory.models import Subject
from memory.services import ServiceError
from memory.services.tree import Actor, ApplyOutcome, leaf_delete, leaf_edit

#: Longest value the API passes to the gate; every leaf's budget is far below it (the gate
#: answers OVER_BUDGET with the leaf's budget), this only bounds what an audit row may hold.
MAX_VALUE_CHARS = 4000

LEAF_PATH = OpenApiParameter(
    "leaf_path",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="A leaf of the subject's schema, e.g. identity/occupation/current_role.",
    examples=[OpenApiExample("a public leaf", value="body/appearance/style")],
)


class GateRejected(ServiceError):
    """The gate refused the op (its reason and the audit row's id go in the error body)."""

    code = "gate_rejected"

    def __init__(self, message: str, *, reason: str, op_id: int, http_status: int = 400, code=None):
        super().__init__(message, field="value" if reason != Reason.DELETE_ON_EMPTY else None, code=code)
        self.http_status = http_status
        self.extra = {"reason": reason, "op_id": op_id}


class LeafOut(serializers.Serializer):
    subject = serializers.CharField()
    path = serializers.CharField()
    tier = serializers.CharField()
    budget = serializers.IntegerField(help_text="Longest value the leaf holds, in characters.")
    value = serializers.CharField(allow_null=True, help_text="null: the leaf is empty.")
    version = serializers.IntegerField(help_text="The tree version read (as_of or head).")


class LeafWriteOut(LeafOut):
    status = serializers.ChoiceField(
        choices=["applied", "unchanged", "pending_review"],
        help_text="pending_review: held for a moderator (the value is not set yet).",
    )
    op_id = serializers.IntegerField(help_text="The op record auditing this write.")


class BaseVersionIn(serializers.Serializer):
    base_version = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        max_value=MAX_VERSION,
        help_text="The head version the write is based on; 409 version_conflict if the subject moved on.",
    )


class LeafIn(BaseVersionIn):
    value = TextField(max_length=MAX_VALUE_CHARS, trim_whitespace=False)


def write_status(outcome: ApplyOutcome) -> tuple[str, int]:
    """A write's ``status`` and HTTP status: held for review (202), or done, with or without a version."""
    if outcome.pending_review:
        return "pending_review", 202
    return ("unchanged" if outcome.version is None else "applied"), 200


def write_schema(out: type[serializers.Serializer], summary: str, description: str, **kwargs):
    """``extend_schema`` of a write: 200 done, 202 held for review, 409 version_conflict."""
    conflict = problems({409: "version_conflict: base_version is not the head (current_version)."})
    responses = {200: out, 202: out, **conflict}
    return extend_schema(responses=responses, summary=summary, description=description, **kwargs)


class SubjectLeafView(TenantScopedView):
    required_scopes = {"GET": ("read",), "PUT": ("write",), "DELETE": ("write",)}

    def _subject_leaf(self, external_id: str, leaf_path: str) -> tuple[Subject, Leaf]:
        """The caller's subject and its schema's leaf at ``leaf_path``, which the caller's tiers
        must reach (404 unknown_leaf, 403)."""
        subject = self.get_subject(external_id)
        leaf = selectors.subject_schema(subject).leaf(leaf_path)
        if leaf is None:  # the path is not echoed: it may hold anything a URL can
            raise exceptions.NotFound("The subject's schema has no leaf at this path.", code="unknown_leaf")
        if leaf.tier not in self.tiers():
            raise exceptions.PermissionDenied(
                f"This leaf is in the {leaf.tier} tier: it needs scope read_special."
            )
        return subject, leaf

    def _body(self, subject: Subject, leaf: Leaf, value: str | None, version: int) -> dict:
        return {
            "subject": subject.external_id,
            "path": leaf.path,
            "tier": leaf.tier,
            "budget": leaf.budget,
            "value": value,
            "version": version,
        }

    @extend_schema(
        parameters=[LEAF_PATH, TreeParams],
        responses=LeafOut,
        summary="Read one leaf",
        description="404 unknown_leaf for a path the schema lacks; 404 not_found (field as_of) for a "
        "version the subject does not have; 403 for a special-tier leaf without read_special.",
    )
    def get(self, request, external_id: str, leaf_path: str):
        subject, leaf = self._subject_leaf(external_id, leaf_path)
        as_of = tree_params(request.query_params)["as_of"]
        with as_of_found():
            number, tree = selectors.tree_at(subject, as_of)
        if number != subject.head_version and leaf.path in selectors.special_in_history(
            subject, self.tiers()
        ):
            raise exceptions.PermissionDenied(
                "This leaf was in the special tier in an earlier schema: its older values need scope read_special."
            )
        return Response(LeafOut(self._body(subject, leaf, tree.get(leaf.path), number)).data)

    @write_schema(
        LeafWriteOut,
        "Set one leaf (through the gate, audited as this API key)",
        "400 gate_rejected with the gate's reason (OVER_BUDGET, EMPTY_VALUE, ...); 202 when the "
        "tenant's policy holds the edit for review; 409 version_conflict.",
        parameters=[LEAF_PATH],
        request=LeafIn,
    )
    def put(self, request, external_id: str, leaf_path: str):
        return self._write(external_id, leaf_path, LeafIn(data=request.data), leaf_edit)

    @write_schema(
        LeafWriteOut,
        "Empty one leaf (through the gate, audited as this API key)",
        "404 leaf_empty when the leaf holds nothing; 202 when the tenant's policy holds the delete "
        "for review; 409 version_conflict.",
        parameters=[LEAF_PATH, BaseVersionIn],
    )
    def delete(self, request, external_id: str, leaf_path: str):
        return self._write(external_id, leaf_path, BaseVersionIn(data=request.query_params), leaf_delete)

    def _write(self, external_id: str, leaf_path: str, data: serializers.Serializer, service) -> Response:
        """Run ``service`` (leaf_edit / leaf_delete) on the leaf with the validated ``data``."""
        subject, leaf = self._subject_leaf(external_id, leaf_path)
        data.is_valid(raise_exception=True)
        outcome: ApplyOutcome = service(
            subject=subject, path=leaf.path, actor=Actor.for_api_key(self.api_key), **data.validated_data
        )
        (record,) = outcome.records  # one op in, one audit row out
        if outcome.rejected and record.reason_code == Reason.DELETE_ON_EMPTY:
            raise GateRejected(
                "The leaf is already empty.",
                reason=record.reason_code,
                op_id=record.pk,
                http_status=404,
                code="leaf_empty",
            )
        if outcome.rejected and record.reason_code != Reason.NO_CHANGE:
            raise GateRejected(record.detail, reason=record.reason_code, op_id=record.pk)
        status, http_status = write_status(outcome)
        value = selectors.tree_current(subject).get(leaf.path)
        body = {
            **self._body(subject, leaf, value, outcome.head_version),
            "status": status,
            "op_id": record.pk,
        }
        return Response(LeafWriteOut(body).data, status=http_status)
