"""``POST /v1/subjects/<external_id>/search`` (scope ``read``): the view validates and calls
:func:`memory.services.search.memories_search`; evidence needs ``read_special``.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.fields import AsOfField
from memory.api.query import EvidenceOut
from memory.services.query import MAX_QUERY_CHARS
from memory.services.search import DEFAULT_LIMIT, MAX_LIMIT, memories_search


@extend_schema_field(
    {"type": "string", "format": "date-time", "description": "ISO 8601 datetime (naive = UTC)."}
)
class DateTimeIn(AsOfField):
    """An ISO 8601 datetime (naive = UTC); a version number is refused (and not documented)."""

    default_error_messages = {**AsOfField.default_error_messages, "invalid": "Must be an ISO 8601 datetime."}

    def to_internal_value(self, data):
        if isinstance(data, int) or (isinstance(data, str) and data.strip().isdigit()):
            self.fail("invalid")
        return super().to_internal_value(data)


class SearchIn(serializers.Serializer):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, trim_whitespace=True)
    prefix = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=300,
        help_text="Only leaves whose path starts with it, e.g. health/ (evidence is not filtered by it).",
    )
    since = DateTimeIn(
        required=False,
        allow_null=True,
        default=None,
        help_text="Only leaves set and evidence said at or after it.",
    )
    until = DateTimeIn(
        required=False, allow_null=True, default=None, help_text="Only leaves set and evidence said until it."
    )
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT)

    def validate(self, attrs):
        if attrs["since"] is not None and attrs["until"] is not None and attrs["since"] > attrs["until"]:
            raise serializers.ValidationError({"since": "since is after until."})
        return attrs


class LeafHitOut(serializers.Serializer):
    path = serializers.CharField()
    tier = serializers.CharField()
    value = serializers.CharField()
    score = serializers.FloatField(help_text="0.7 x cosine + 0.3 x share of the query's words held")
    set_at = serializers.DateTimeField(allow_null=True, help_text="When the current value was set")


class EvidenceHitOut(serializers.Serializer):
    id = serializers.CharField()
    source = EvidenceOut.EvidenceSourceOut()
    text = serializers.CharField()
    score = serializers.FloatField(help_text="RRF score of the hybrid (dense + BM25) search")


class SearchOut(serializers.Serializer):
    subject = serializers.CharField()
    query = serializers.CharField()
    version = serializers.IntegerField(help_text="The head version searched")
    leaves = LeafHitOut(many=True)
    evidence = EvidenceHitOut(many=True)
    evidence_status = serializers.ChoiceField(
        choices=["ok", "withheld", "unavailable"],
        help_text="withheld: the key lacks read_special; unavailable: the index is down (see notices)",
    )
    notices = serializers.ListField(child=serializers.CharField())
    timings_ms = serializers.DictField(child=serializers.FloatField())


class SubjectSearchView(TenantScopedView):
    required_scopes = ("read",)

    @extend_schema(
        request=SearchIn,
        responses={200: SearchOut},
        examples=[
            OpenApiExample(
                "health since March",
                value={"query": "knee injury", "prefix": "health/", "since": "2026-03-01T00:00:00Z"},
                request_only=True,
            )
        ],
        summary="Search the subject's memory: ranked leaf values and evidence",
        description="Leaves of the tiers the key may read, ranked by cosine and word overlap with the "
        "query, optionally under a path prefix and set in a time range; evidence (raw dialogue) by one "
        "hybrid search in the same time range, only for keys with read_special.",
    )
    def post(self, request, external_id: str):
        subject = self.get_subject(external_id)
        return Response(memories_search(subject=subject, tiers=self.tiers(), **self.valid_body(SearchIn)))
