"""A subject's history: one leaf's values, the diff of two versions, a revert (through the one
write path, as the API key's actor)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from memory import selectors
from memory.api.base import TenantScopedView
from memory.api.fields import MAX_VERSION
from memory.api.leaves import LEAF_PATH, BaseVersionIn, SubjectLeafView, write_schema, write_status
from memory.api.pagination import paged
from memory.engine.tree import diff
from memory.models import OpRecord, Subject
from memory.services import NotFoundError
from memory.services.tree import Actor, tree_revert


class LeafChangeOut(serializers.Serializer):
    class LeafActorOut(serializers.Serializer):
        kind = serializers.CharField(source="actor_kind", help_text="model, admin, api_key or system")
        name = serializers.CharField(source="actor_name")
        model_id = serializers.CharField()

    version = serializers.IntegerField(source="version.number", allow_null=True, default=None)
    op = serializers.CharField(source="op_type", help_text="ADD, UPDATE or DELETE")
    previous = serializers.CharField(source="old_value", allow_null=True)
    value = serializers.CharField(source="new_value", allow_null=True, help_text="null: the leaf was emptied")
    actor = LeafActorOut(source="*")
    source_text = serializers.CharField(help_text="The user's sentence the value came from (model ops)")
    chunk_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()


class ChangeOut(serializers.Serializer):
    path = serializers.CharField()
    op = serializers.CharField(help_text="ADD, UPDATE or DELETE")
    old = serializers.CharField(allow_null=True)
    new = serializers.CharField(allow_null=True)


def _version(subject: Subject, number: int, field: str) -> None:
    if number > min(subject.head_version, MAX_VERSION):
        raise NotFoundError(
            f"The subject has no version {number} (head is {subject.head_version}).", field=field
        )


class LeafHistoryView(SubjectLeafView):
    required_scopes = {"GET": ("read",)}
    http_method_names = ["get", "head", "options"]

    @paged(
        "LeafHistory",
        {
            "subject": serializers.CharField(),
            "path": serializers.CharField(),
            "changes": LeafChangeOut(many=True),
        },
        parameters=(LEAF_PATH,),
        summary="Every value one leaf had, oldest first, with version, op, actor and source sentence",
        description="404 unknown_leaf for a path the schema lacks; 403 for a special-tier leaf, or one "
        "that held special-tier values, without read_special.",
    )
    def get(self, request, external_id: str, leaf_path: str):
        subject, leaf = self._subject_leaf(external_id, leaf_path)
        tiers = self.tiers()
        if leaf.path in selectors.special_in_history(subject, tiers):
            raise exceptions.PermissionDenied(
                "This leaf held special-tier values: it needs scope read_special."
            )
        ops = selectors.ops_visible(
            OpRecord.objects.filter(subject=subject, path=leaf.path, status=OpRecord.Status.APPLIED),
            [leaf.path],
            tiers=tiers,
        ).select_related("version")
        return self.page(ops, LeafChangeOut, member="changes", subject=subject.external_id, path=leaf.path)


class VersionDiffView(TenantScopedView):
    required_scopes = ("read",)

    @extend_schema(
        responses=inline_serializer(
            "VersionDiff",
            {
                "subject": serializers.CharField(),
                "a": serializers.IntegerField(),
                "b": serializers.IntegerField(),
                "changes": ChangeOut(many=True),
            },
        ),
        summary="The changes turning version a into version b (leaves the key may see)",
        description="404 not_found (field a or b) for a version the subject does not have; 0 is the "
        "empty tree before the first version.",
    )
    def get(self, request, external_id: str, a: int, b: int):
        subject = self.get_subject(external_id)
        _version(subject, a, "a")
        _version(subject, b, "b")
        tiers = self.tiers()
        _, tree_a = selectors.tree_at_visible(subject, a, tiers=tiers)
        _, tree_b = selectors.tree_at_visible(subject, b, tiers=tiers)
        changes = [c.to_dict() for c in diff(tree_a, tree_b)]
        return Response({"subject": subject.external_id, "a": a, "b": b, "changes": changes})


class RevertOut(serializers.Serializer):
    subject = serializers.CharField()
    reverted_to = serializers.IntegerField()
    status = serializers.ChoiceField(
        choices=["applied", "unchanged", "pending_review"],
        help_text="unchanged: the head already equals that version; pending_review: held for a moderator",
    )
    head_version = serializers.IntegerField()
    changes = ChangeOut(many=True, help_text="What the revert changes (leaves the key may see)")


class VersionRevertView(TenantScopedView):
    required_scopes = ("write",)

    @write_schema(
        RevertOut,
        "Revert to version n: a new version with its tree (through the gate, audited)",
        "404 not_found for a version the subject does not have; 403 when the revert would change a leaf "
        "the key may not see; 202 when the tenant's policy holds it for review; 409 version_conflict.",
        request=BaseVersionIn,
    )
    def post(self, request, external_id: str, number: int):
        subject = self.get_subject(external_id)
        _version(subject, number, "number")
        base_version = self.valid_body(BaseVersionIn)["base_version"]
        tiers = self.tiers()
        _, target = selectors.tree_at(subject, number)
        changes = diff(selectors.tree_current(subject), target)
        schema, hidden = selectors.subject_schema(subject), selectors.special_in_history(subject, tiers)

        def blocked(path: str) -> bool:
            leaf = schema.leaf(path)
            return path in hidden or (leaf is not None and leaf.tier not in tiers)

        if any(blocked(c.path) for c in changes):
            raise exceptions.PermissionDenied(
                "The revert changes special-tier leaves: it needs scope read_special."
            )
        outcome = tree_revert(
            subject=subject,
            to_version=number,
            actor=Actor.for_api_key(self.api_key),
            base_version=base_version,
        )
        status, http_status = write_status(outcome)
        body = {
            "subject": subject.external_id,
            "reverted_to": number,
            "status": status,
            "head_version": outcome.head_version,
            "changes": [c.to_dict() for c in changes if schema.leaf(c.path) is not None],
        }
        return Response(RevertOut(body).data, status=http_status)
