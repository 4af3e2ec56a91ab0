"""Subject endpoints: list and create (pinned to a schema), tree, versions, export, erasure; thin
views over selectors/services, lists cursor-paginated (:mod:`memory.api.pagination`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from memory import selectors
from memory.api.base import TenantScopedView
from memory.api.errors import ServiceUnavailable
from memory.api.fields import AsOfField, ExternalIdField, as_of_found
from memory.api.openapi import problems
from memory.api.pagination import Pager, paged
from memory.engine.schema import SchemaError
from memory.engine.tree import Tree
from memory.models import OpRecord, Subject, TreeVersion
from memory.services import NotFoundError, ServiceError
from memory.services.ingest import external_id_validate
from memory.services.schemas import SchemaConflict
from memory.services.subjects import op_record_masked, subject_erase, subject_get_or_create
from personatree_site.ops.readiness import erasure_broker_problem


class TreeParams(serializers.Serializer):
    as_of = AsOfField(required=False, allow_null=True, default=None)


def tree_params(query_params) -> dict:
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

    @extend_schema(
        parameters=[TreeParams],
        responses=TreeOut,
        summary="The subject's tree (the tiers this key may read), now or as of a version or time",
        description="404 not_found (field as_of) when the subject has no version as_of.",
    )
    def get(self, request, external_id: str):
        subject = self.get_subject(external_id)
        as_of = tree_params(request.query_params)["as_of"]
        with as_of_found():
            number, tree = selectors.tree_at_visible(subject, as_of, tiers=self.tiers())
        data = {
            "subject": subject.external_id,
            "version": number,
            "schema_id": subject.schema_id,
            "schema_version": subject.schema_version,
            "tree": tree.to_dict(),
        }
        return Response(self.TreeOut(data).data)


class SubjectOut(serializers.Serializer):
    external_id = serializers.CharField()
    schema_id = serializers.CharField()
    schema_version = serializers.IntegerField()
    head_version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SubjectIn(serializers.Serializer):
    external_id = ExternalIdField()
    schema_id = serializers.CharField(
        max_length=100,
        required=False,
        help_text="A shipped schema or one of the tenant's own (GET /v1/schemas); absent: the "
        "tenant's default.",
    )
    schema_version = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, help_text="Required with schema_id."
    )
    recreate_erased = serializers.BooleanField(
        required=False, default=False, help_text="Start a new subject under an erased subject's id."
    )


class SubjectListView(TenantScopedView):
    """GET the tenant's subjects, by external id, a page at a time; POST creates one pinned to a schema."""

    required_scopes = {"GET": ("read",), "POST": ("ingest",)}

    @paged(
        "SubjectList",
        {"subjects": SubjectOut(many=True)},
        operation_id="v1_subjects_list",
        summary="List the tenant's subjects by external id, a page at a time",
    )
    def get(self, request):
        return self.page(self.owned(Subject), SubjectOut, member="subjects", field="external_id", kind=str)

    @extend_schema(
        request=SubjectIn,
        responses={
            201: SubjectOut,
            200: SubjectOut,
            **problems(
                {
                    404: "not_found (field schema_id): no schema of the tenant by that id and version.",
                    409: "subject_erased (send recreate_erased), or schema_conflict: the subject exists "
                    "pinned to another schema.",
                }
            ),
        },
        summary="Create a subject pinned to a schema (the tenant's default when none is named)",
        description="201 created; 200 when the subject exists pinned to that schema (or none was "
        "named). 404 not_found (field schema_id) for a schema the tenant cannot pin: unknown, or another "
        "tenant's. 409 schema_conflict when the subject exists pinned to another schema (it moves only "
        "through a schema migration); 409 subject_erased for an erased subject's id.",
    )
    def post(self, request):
        valid = self.valid_body(SubjectIn)
        external_id_validate(valid["external_id"])
        schema_id, schema_version = valid.get("schema_id"), valid.get("schema_version")
        if schema_id is None and schema_version is not None:
            raise ServiceError("schema_id is required with schema_version.", field="schema_id")
        if schema_id is not None and schema_version is not None:
            try:  # unknown and another tenant's look the same
                selectors.schema_get(self.tenant.pk, schema_id, schema_version)
            except SchemaError as exc:  # the body names a schema that is not there: a 404
                raise NotFoundError(
                    f"Unknown schema {schema_id} v{schema_version}.", field="schema_id"
                ) from exc
        subject, created = subject_get_or_create(
            tenant=self.tenant,
            external_id=valid["external_id"],
            schema_id=schema_id,
            schema_version=schema_version,
            recreate_erased=valid["recreate_erased"],
        )
        pinned = (subject.schema_id, subject.schema_version)
        if not created and schema_id is not None and pinned != (schema_id, schema_version):
            raise SchemaConflict(
                f"The subject exists, pinned to {subject.schema_id} v{subject.schema_version}; "
                "it moves to another schema only through a schema migration.",
                field="schema_id",
            )
        return Response(SubjectOut(subject).data, status=201 if created else 200)


class VersionOut(serializers.Serializer):
    number = serializers.IntegerField()
    parent = serializers.IntegerField(source="parent.number", allow_null=True, default=None)
    created_by = serializers.CharField()
    chunk_id = serializers.IntegerField(allow_null=True)
    note = serializers.CharField()
    created_at = serializers.DateTimeField()


class SubjectVersionsView(TenantScopedView):
    """GET the subject's version history, newest first, a page at a time."""

    required_scopes = ("read",)

    @paged(
        "SubjectVersions",
        {
            "subject": serializers.CharField(),
            "head_version": serializers.IntegerField(),
            "versions": VersionOut(many=True),
        },
        summary="The subject's version history, newest first, a page at a time",
    )
    def get(self, request, external_id: str):
        subject = self.get_subject(external_id)
        return self.page(
            selectors.versions_list(subject=subject).select_related("parent"),
            VersionOut,
            member="versions",
            field="number",
            key="before",
            subject=subject.external_id,
            head_version=subject.head_version,
        )


class _Visible:
    """The part of a tree a key may see: its tiers of the subject's schema and, in older versions
    and the op log, no value written while its leaf was special (``special_in_history``)."""

    def __init__(self, subject, tiers):
        self.schema, self.tiers, self.head = selectors.subject_schema(subject), tiers, subject.head_version
        self.hidden = selectors.special_in_history(subject, tiers)
        self.paths = [
            leaf.path for leaf in self.schema.leaves if leaf.tier in tiers and leaf.path not in self.hidden
        ]

    def tree(self, snapshot: dict, number: int | None = None) -> dict:
        hidden = () if number is None or number == self.head else self.hidden
        tree = Tree.from_dict(snapshot)
        return selectors.tree_visible(tree, self.schema, tiers=self.tiers, hidden=hidden).to_dict()


class ExportVersionOut(VersionOut):
    tree = serializers.SerializerMethodField()

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_tree(self, version) -> dict:
        return self.context["visible"].tree(version.snapshot, version.number)


class ExportOpOut(serializers.Serializer):
    class ActorOut(serializers.Serializer):
        kind = serializers.CharField(source="actor_kind")
        name = serializers.CharField(source="actor_name")
        model_id = serializers.CharField()
        model_version = serializers.CharField()
        prompt_version = serializers.CharField()

    class SourceOut(serializers.Serializer):
        chunk_id = serializers.IntegerField(allow_null=True)
        start_seq = serializers.IntegerField(source="source_start_seq", allow_null=True)
        end_seq = serializers.IntegerField(source="source_end_seq", allow_null=True)

    id = serializers.IntegerField()
    version = serializers.IntegerField(source="version.number", allow_null=True, default=None)
    base_version = serializers.IntegerField(allow_null=True)
    op = serializers.CharField(source="op_type")
    path = serializers.CharField()
    old_value = serializers.CharField(allow_null=True)
    new_value = serializers.CharField(allow_null=True)
    status = serializers.CharField()
    reason = serializers.CharField(source="reason_code")
    detail = serializers.CharField()
    actor = ActorOut(source="*")
    source = SourceOut(source="*")
    confidence = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_note = serializers.CharField()


class SubjectExportView(TenantScopedView):
    """Everything the store holds about the subject, as JSON (tiers filtered by scope), a page at a time.

    Every page holds the subject, its schema, head version and current tree, and the next
    ``page_size`` versions (oldest first) and ``page_size`` op records (in write order); ``next``
    is null once both are exhausted.
    """

    required_scopes = ("read",)

    class SchemaOut(serializers.Serializer):
        id = serializers.CharField()
        version = serializers.IntegerField()

    @paged(
        "SubjectExport",
        {
            "subject": serializers.CharField(),
            "schema": SchemaOut(),
            "head_version": serializers.IntegerField(),
            "tree": serializers.DictField(child=serializers.CharField()),
            "versions": ExportVersionOut(many=True),
            "ops": ExportOpOut(many=True),
        },
        summary="Everything stored about the subject (tiers this key may read), a page at a time",
    )
    def get(self, request, external_id: str):
        subject = self.get_subject(external_id)
        pager = Pager(request, "export", {"version": int, "op": int})
        visible = _Visible(subject, self.tiers())
        versions, more_versions = pager.take(
            selectors.versions_list(subject=subject).select_related("parent"), "number", key="version"
        )
        ops, more_ops = pager.take(
            selectors.ops_visible(
                OpRecord.objects.filter(subject=subject), visible.paths, tiers=visible.tiers
            ).select_related("version"),
            "id",
            key="op",
        )
        position = {
            "version": versions[-1].number if versions else pager.after("version", 0),
            "op": ops[-1].pk if ops else pager.after("op", 0),
        }
        return Response(
            {
                "subject": subject.external_id,
                "schema": {"id": subject.schema_id, "version": subject.schema_version},
                "head_version": subject.head_version,
                "tree": visible.tree(subject.head.snapshot if subject.head_id else {}),
                "versions": ExportVersionOut(
                    TreeVersion.objects.load_snapshots(versions), many=True, context={"visible": visible}
                ).data,
                "ops": ExportOpOut([op_record_masked(op) for op in ops], many=True).data,
                "next": pager.next_link(position if more_versions or more_ops else None),
            }
        )


class SubjectDetailView(TenantScopedView):
    """GET one subject (its schema pin and head version); DELETE erases it (messages, chunks,
    versions, op log, vectors) leaving a tombstone."""

    required_scopes = {"GET": ("read",), "DELETE": ("erase",)}

    @extend_schema(responses=SubjectOut, summary="One subject: its schema pin and head version")
    def get(self, request, external_id: str):
        return Response(SubjectOut(self.get_subject(external_id)).data)

    @extend_schema(
        responses={
            200: inline_serializer(
                "SubjectErased",
                {
                    "erased": serializers.BooleanField(),
                    "tombstone_id": serializers.IntegerField(),
                    "counts": serializers.DictField(child=serializers.IntegerField()),
                },
            ),
            **problems({503: "broker_unavailable: the task queue is down; nothing was erased."}),
        },
        summary="Erase the subject (messages, versions, op log, vectors), leaving a tombstone",
        description="503 broker_unavailable (with Retry-After) when the task queue that purges the "
        "subject's vectors is down: nothing is erased, retry later.",
    )
    def delete(self, request, external_id: str):
        subject = self.get_subject(external_id)
        problem = erasure_broker_problem()  # the vectors' purge cannot be queued: nothing is erased
        if problem is not None:
            raise ServiceUnavailable(
                f"broker unreachable before an erasure ({problem})", code="broker_unavailable"
            )
        tombstone = subject_erase(subject=subject, erased_by=f"api_key:{self.api_key.prefix}")
        return Response(
            {"erased": True, "tombstone_id": tombstone.pk, "counts": tombstone.counts}, status=200
        )
