"""Query API: memory context and answers. Evidence is raw dialogue, unclassified, so it counts as the
special tier: without ``read_special`` deep mode answers from the tree (``recall.status`` withheld)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from memory.api.base import TenantScopedView
from memory.api.fields import AsOfField, as_of_found
from memory.api.openapi import problems
from memory.services.query import (
    DEFAULT_TOKEN_BUDGET,
    MAX_QUERY_CHARS,
    MAX_TOKEN_BUDGET,
    MODES,
    answer_build,
    context_build,
)


class QueryIn(serializers.Serializer):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, trim_whitespace=True)
    mode = serializers.ChoiceField(choices=MODES, default="auto")
    as_of = AsOfField(required=False, allow_null=True, default=None)
    token_budget = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_TOKEN_BUDGET, default=DEFAULT_TOKEN_BUDGET
    )


class RouterOut(serializers.Serializer):
    class SignalsOut(serializers.Serializer):
        cue = serializers.FloatField(required=False)
        cues_matched = serializers.ListField(child=serializers.CharField(), required=False)
        overlap = serializers.FloatField(required=False)
        gap = serializers.FloatField(required=False)
        query_words = serializers.IntegerField(required=False)
        covered_words = serializers.ListField(child=serializers.CharField(), required=False)
        leaves = serializers.IntegerField(required=False)

    mode = serializers.CharField(help_text="fast or deep")
    score = serializers.FloatField(allow_null=True, help_text="null when the caller chose the mode")
    threshold = serializers.FloatField(required=False)
    reason = serializers.CharField()
    signals = SignalsOut(required=False)


class RenderedOut(serializers.Serializer):
    text = serializers.CharField()
    paths = serializers.ListField(child=serializers.CharField())
    tokens = serializers.IntegerField()


class EvidenceOut(serializers.Serializer):
    class EvidenceSourceOut(serializers.Serializer):
        start_seq = serializers.IntegerField()
        end_seq = serializers.IntegerField()
        ts = serializers.DateTimeField(allow_null=True)
        session = serializers.CharField(allow_null=True)

    id = serializers.CharField()
    source = EvidenceSourceOut()
    text = serializers.CharField()
    score = serializers.FloatField()
    fused_score = serializers.FloatField()
    rerank_score = serializers.FloatField(allow_null=True)
    queries = serializers.ListField(child=serializers.CharField())
    tokens = serializers.IntegerField()


class RecallOut(serializers.Serializer):
    class ExpansionOut(serializers.Serializer):
        status = serializers.CharField(help_text="ok, unavailable or unreadable")
        detail = serializers.CharField(required=False)
        model_id = serializers.CharField(required=False)
        tree_paths = serializers.ListField(child=serializers.CharField(), required=False)

    status = serializers.CharField(help_text="ok, unavailable (index down) or withheld (no read_special)")
    fallback = serializers.CharField(required=False, help_text="fast: answered from the tree only")
    detail = serializers.CharField(required=False)
    queries = serializers.ListField(child=serializers.CharField(), required=False)
    expansion = ExpansionOut(required=False)
    reranked = serializers.BooleanField(required=False)
    candidates = serializers.IntegerField(required=False)
    evidence_cutoff_seq = serializers.IntegerField(required=False, allow_null=True)


class ContextOut(serializers.Serializer):
    subject = serializers.CharField()
    query = serializers.CharField()
    mode = serializers.CharField()
    mode_used = serializers.CharField(
        help_text="fast or deep (deep falls back to fast when the index is down)"
    )
    version = serializers.IntegerField(help_text="Tree version used (as_of or head)")
    router = RouterOut()
    context = RenderedOut(help_text="The rendered leaves visible to this key")
    evidence = EvidenceOut(many=True, help_text="Raw-dialogue snippets: only for keys with read_special")
    recall = RecallOut(allow_null=True, help_text="Deep mode's recall; null in fast mode")
    token_budget = serializers.IntegerField()
    tokens = serializers.IntegerField()
    notices = serializers.ListField(child=serializers.CharField())
    timings_ms = serializers.DictField(child=serializers.FloatField(), help_text="Milliseconds per stage")


class AnswerOut(ContextOut):
    class ModelOut(serializers.Serializer):
        model_id = serializers.CharField()
        prompt_version = serializers.CharField()
        prompt_tokens = serializers.IntegerField(allow_null=True)
        completion_tokens = serializers.IntegerField(allow_null=True)

    class CitationOut(serializers.Serializer):
        kind = serializers.CharField(help_text="leaf or evidence")
        cite = serializers.CharField(help_text="the leaf path, or 'evidence N' (N: rank in evidence)")
        quote = serializers.CharField()
        score = serializers.FloatField()

    answer = serializers.CharField()
    model = ModelOut(help_text="model_id 'extractive' for a quoted answer (no model call)")
    citations = CitationOut(many=True, help_text="extractive answers: the quoted passages; else empty")


REQUEST_EXAMPLES = [
    OpenApiExample(
        "fast", value={"query": "What does the user do for work?", "mode": "fast"}, request_only=True
    ),
    OpenApiExample(
        "auto with budget",
        value={"query": "Why did I switch to swimming last spring?", "mode": "auto", "token_budget": 1500},
        request_only=True,
    ),
    OpenApiExample(
        "audit as of version",
        value={"query": "Where do I live?", "mode": "deep", "as_of": 12},
        request_only=True,
    ),
]
CONTEXT_EXAMPLE = OpenApiExample(
    "deep context",
    response_only=True,
    value={
        "subject": "user-42",
        "query": "Why did I switch to swimming?",
        "mode": "auto",
        "mode_used": "deep",
        "version": 7,
        "router": {
            "mode": "deep",
            "score": 1.0,
            "threshold": 0.5,
            "reason": "episodic/temporal/causal cue ['why']",
            "signals": {"cue": 1.0, "overlap": 0.5},
        },
        "context": {
            "text": "## behavioral\nsport/current: swimming; knee trouble",
            "paths": ["behavioral/sport/current"],
            "tokens": 12,
        },
        "evidence": [
            {
                "id": "3f1c...",
                "source": {
                    "start_seq": 40,
                    "end_seq": 41,
                    "ts": "2024-04-02T10:00:00+00:00",
                    "session": "s3",
                },
                "text": "user: my knee hurts after running...",
                "score": 0.032,
                "fused_score": 0.032,
                "rerank_score": None,
                "queries": ["Why did I switch to swimming?"],
                "tokens": 18,
            }
        ],
        "recall": {
            "status": "ok",
            "queries": ["Why did I switch to swimming?", "knee injury running"],
            "expansion": {"status": "ok"},
            "reranked": False,
            "candidates": 9,
            "evidence_cutoff_seq": None,
        },
        "token_budget": 4000,
        "tokens": 30,
        "notices": [],
        "timings_ms": {"tree_ms": 0.4, "recall_search_ms": 31.0, "total_ms": 240.0},
    },
)


class _QueryView(TenantScopedView):
    required_scopes = ("read",)

    def _args(self, request, external_id: str) -> dict:
        subject = self.get_subject(external_id)
        return {"subject": subject, "tiers": self.tiers(), **self.valid_body(QueryIn)}


class SubjectContextView(_QueryView):
    @extend_schema(
        request=QueryIn,
        responses={200: ContextOut},
        examples=[*REQUEST_EXAMPLES, CONTEXT_EXAMPLE],
        summary="Memory context for a query (fast, deep or routed)",
    )
    def post(self, request, external_id: str):
        args = self._args(request, external_id)
        with as_of_found():
            return Response(context_build(**args))


class SubjectAnswerView(_QueryView):
    @extend_schema(
        request=QueryIn,
        responses={
            200: AnswerOut,
            **problems({503: "model_unavailable: no responder model can be reached (model mode)."}),
        },
        examples=[*REQUEST_EXAMPLES],
        summary="Answer a query over [query, tree, evidence]: quoted and cited, or by the responder model",
        description="The answer mode is a server setting (PERSONATREE_ANSWER_MODE): extractive (default) "
        "quotes the supporting leaf values and evidence sentences with citations, or says the memory holds "
        "nothing on it; model asks the responder model. 404 not_found (field as_of) when the subject has no "
        "version as_of; 503 model_unavailable when, in model mode, no responder model can be reached.",
    )
    def post(self, request, external_id: str):
        args = self._args(request, external_id)
        with as_of_found():
            return Response(answer_build(**args))
