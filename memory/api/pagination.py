"""Keyset pagination: the cursor is the ordering column's last value, signed with the list's own salt
(one indexed range query at any depth, no forged position, no cursor moved to another list)."""

from __future__ import annotations

from django.core import signing
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.utils.urls import replace_query_param

PAGE_SIZE_DEFAULT = 100
PAGE_SIZE_MAX = 500
_SALT = "personatree.api.cursor."
#: Largest value a cursor position may hold (PostgreSQL bigint).
_MAX_POSITION = 2**63 - 1
#: A cursor's form: Django's signed token (``signing.dumps``): the position's JSON, base64url (a
#: leading ``.`` when compressed), a timestamp and a 43-character HMAC-SHA256, colon-separated.
CURSOR_PATTERN = r"^\.?[A-Za-z0-9_-]+:[A-Za-z0-9]+:[A-Za-z0-9_-]{43}$"
INVALID_CURSOR = "Invalid or expired cursor."


class PageParams(serializers.Serializer):
    cursor = serializers.RegexField(
        CURSOR_PATTERN,
        # A position may hold a 255-character subject id, escaped and base64-encoded: about 2 kB.
        required=False,
        max_length=4096,
        help_text="Opaque: copy it from the `next` link of the page before (never build one); absent "
        "for the first page. A cursor that names no page of this list is a 404 invalid_cursor.",
    )
    page_size = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=PAGE_SIZE_MAX,
        default=PAGE_SIZE_DEFAULT,
        help_text=f"Items per page (1-{PAGE_SIZE_MAX}, default {PAGE_SIZE_DEFAULT}).",
    )


def paged(name: str, fields: dict, *, parameters: tuple = (), **kwargs):
    """``extend_schema`` of a list: the page parameters, and an answer (component ``name``) holding
    ``fields`` and ``next``."""
    next_url = serializers.CharField(
        allow_null=True, help_text="URL of the next page; null on the last page."
    )
    page = inline_serializer(name, {**fields, "next": next_url})
    return extend_schema(parameters=[*parameters, PageParams], responses=page, **kwargs)


def _invalid_cursor() -> dict:
    return {"cursor": [serializers.ErrorDetail(INVALID_CURSOR, code="invalid_cursor")]}


class Pager:
    """The page a request asks for in list ``name``, whose cursor positions are ``fields`` (key ->
    ``int`` or ``str``, e.g. ``{"after": int}``)."""

    def __init__(self, request, name: str, fields: dict[str, type]):
        params = PageParams(data=request.query_params)
        if not params.is_valid():
            raise serializers.ValidationError(
                _invalid_cursor() if "cursor" in params.errors else params.errors
            )
        self.request = request
        self.salt = _SALT + name
        self.size: int = params.validated_data["page_size"]
        raw = params.validated_data.get("cursor")
        self.position: dict = self._decode(raw, fields) if raw else {}

    def _decode(self, raw: str, fields: dict[str, type]) -> dict:
        try:
            position = signing.loads(raw, salt=self.salt)
        except signing.BadSignature:
            position = None
        if (
            not isinstance(position, dict)
            or set(position) != set(fields)
            or not all(_valid(position[key], kind) for key, kind in fields.items())
        ):
            raise exceptions.NotFound(_invalid_cursor())  # well-formed, but names no page of this list
        return position

    def after(self, key: str, default=None):
        """The cursor's position ``key`` (``default`` on the first page)."""
        return self.position.get(key, default)

    def take(
        self, queryset: QuerySet, field: str, *, key: str, descending: bool = False
    ) -> tuple[list, bool]:
        """``(items, more)``: the page of ``queryset`` ordered by the unique ``field`` after the
        cursor's position ``key``, and whether items follow it."""
        after = self.after(key)
        if after is not None:
            queryset = queryset.filter(**{f"{field}__{'lt' if descending else 'gt'}": after})
        rows = list(queryset.order_by(f"-{field}" if descending else field)[: self.size + 1])
        return rows[: self.size], len(rows) > self.size

    def next_link(self, position: dict | None) -> str | None:
        """The URL of the page after ``position`` (None: this page is the last)."""
        if position is None:
            return None
        cursor = signing.dumps(position, salt=self.salt, compress=True)
        return replace_query_param(self.request.build_absolute_uri(), "cursor", cursor)


def _valid(value, kind: type) -> bool:
    if kind is int:
        return type(value) is int and 0 <= value <= _MAX_POSITION
    return type(value) is kind
