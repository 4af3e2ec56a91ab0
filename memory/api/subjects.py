"""Subject endpoints: current tree, version list, export, erasure. Thin views over selectors/services."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from memory import selectors
from memory.api.base import TenantScopedView
from memory.api.errors import ServiceUnavailable
from memory.api.fields import AsOfField
from memory.services import ServiceError
from memory.services.subjects import subject_erase, subject_export
from personatree_site.ops.readiness import erasure_broker_problem

#: Seconds an erasure refused for a broker outage tells the client to wait (``Retry-After``).
BROKER_RETRY_AFTER_S = 30


def _tiers_for(view: TenantScopedView) -> tuple[str, ...]:
    return selectors.ALL_TIERS if view.has_scope("read_special") else selectors.PUBLIC_TIERS


class TreeParams(serializers.Serializer):
    as_of = AsOfField(required=False, allow_null=True, default=None)


def _tree_params(query_params) -> dict:
    """``?as_of=`` (empty = head) checked by the same field as the query API's body."""
    raw = query_params.get("as_of")
    data = TreeParams(data={"as_of": raw} if raw else {})
    data.is_valid(raise_exception=True)
    return data.validated_data


class SubjectTreeView(TenantScopedView):
    """GET the subject's tree (current, or ``?as_of=<version|datetime>``)."""

    required_scopes = ("read",)

    class TreeOut(serializers.Serializer):
        subject = serializers.CharField()
        version = serializers.IntegerField()
        schema_id = serializers.CharField()
        schema_version = serializers.IntegerField()
        tree = serializers.DictField(child=serializers.CharField())

    @extend_schema(parameters=[TreeParams], responses=TreeOut)
    def get(self, request, external_id: str):
        subject = self.get_subject(external_id)
        as_of = _tree_params(request.query_params)["as_of"]
        try:
            number, tree = selectors.tree_at(subject, as_of)
        except LookupError as exc:
            raise ServiceError(str(exc), field="as_of", code="not_found") from exc
        schema = selectors.subject_schema(subject)
        data = {
            "subject": subject.external_id,
            "version": number,
            "schema_id": subject.schema_id,
            "schema_version": subject.schema_version,
            "tree": selectors.tree_visible(tree, schema, tiers=_tiers_for(self)).to_dict(),
        }
        return Response(self.TreeOut(data).data)


class SubjectVersionsView(TenantScopedView):
    """GET the subject's version history, newest first (at most 500)."""

    required_scopes = ("read",)

    class VersionOut(serializers.Serializer):
        number = serializers.IntegerField()
        parent = serializers.IntegerField(source="parent.number", allow_null=True, default=None)
        created_by = serializers.CharField()
        chunk_id = serializers.IntegerField(allow_null=True)
        note = serializers.CharField()
        created_at = serializers.DateTimeField()

    @extend_schema(
        responses=inline_serializer(
            "SubjectVersions",
            {
                "subject": serializers.CharField(),
                "head_version": serializers.IntegerField(),
                "versions": VersionOut(many=True),
            },
        )
    )
    def get(self, request, external_id: str):
        subject = self.get_subject(external_id)
        versions = selectors.versions_list(subject=subject).select_related("parent")[:500]
        return Response(
            {
                "subject": subject.external_id,
                "head_version": subject.head_version,
                "versions": self.VersionOut(versions, many=True).data,
            }
        )


class SubjectExportView(TenantScopedView):
    """Everything the store holds about the subject, as JSON (tiers filtered by scope)."""

    required_scopes = ("read",)

    @extend_schema(
        responses=inline_serializer(
            "SubjectExport",
            {
                "subject": serializers.CharField(),
                "schema": serializers.DictField(),
                "head_version": serializers.IntegerField(),
                "tree": serializers.DictField(child=serializers.CharField()),
                "versions": serializers.ListField(child=serializers.DictField()),
                "ops": serializers.ListField(child=serializers.DictField()),
            },
        )
    )
    def get(self, request, external_id: str):
        subject = self.get_subject(external_id)
        return Response(subject_export(subject=subject, tiers=_tiers_for(self)))


def broker_check() -> None:
    """503 ``broker_unavailable`` (``Retry-After``) when an erasure could not queue its vector purge
    now (:func:`~personatree_site.ops.readiness.erasure_broker_problem`): nothing is erased."""
    problem = erasure_broker_problem()
    if problem is not None:
        raise ServiceUnavailable(
            f"broker unreachable before an erasure ({problem})",
            code="broker_unavailable",
            retry_after_s=BROKER_RETRY_AFTER_S,
        )


class SubjectDetailView(TenantScopedView):
    """DELETE erases the subject (messages, chunks, versions, op log, vectors) leaving a tombstone."""

    required_scopes = {"DELETE": ("erase",)}

    @extend_schema(
        responses=inline_serializer(
            "SubjectErased",
            {
                "erased": serializers.BooleanField(),
                "tombstone_id": serializers.IntegerField(),
                "counts": serializers.DictField(child=serializers.IntegerField()),
            },
        ),
        description="503 broker_unavailable (with Retry-After) when the task queue that purges the "
        "subject's vectors is down: nothing is erased, retry later.",
    )
    def delete(self, request, external_id: str):
        subject = self.get_subject(external_id)
        broker_check()
        tombstone = subject_erase(subject=subject, erased_by=f"api_key:{self.api_key.prefix}")
        return Response(
            {"erased": True, "tombstone_id": tombstone.pk, "counts": tombstone.counts}, status=200
        )
