"""Cursor pagination for the API's lists: opaque, signed keyset cursors.

A list answers one page and ``next``: the URL of the following page (the same query with
``cursor`` set), or ``null`` on the last page. ``page_size`` picks the page's length (default
:data:`PAGE_SIZE_DEFAULT`, at most :data:`PAGE_SIZE_MAX`; beyond it is a 400).

The cursor holds the position after the last item of the page (a keyset position: the ordering
column's last value), never an offset, so a page is read by one indexed range query whatever its
depth, and items written between two pages neither repeat nor go missing. It is signed (Django's
``signing`` with the list's own salt): the client cannot forge a position or move a cursor from
one list to another. A cursor that does not verify, or was made for another list, is a JSON 400
``invalid_cursor`` naming ``cursor`` -- never a 404 or a 500.
"""

from __future__ import annotations

from django.core import signing
from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.utils.urls import replace_query_param

PAGE_SIZE_DEFAULT = 100
PAGE_SIZE_MAX = 500
_SALT = "personatree.api.cursor."
#: Largest value a cursor position may hold (PostgreSQL bigint).
_MAX_POSITION = 2**63 - 1


class PageParams(serializers.Serializer):
    cursor = serializers.CharField(
        # A position may hold a 255-character subject id, escaped and base64-encoded: about 2 kB.
        required=False,
        max_length=4096,
        help_text="The `next` link's cursor; absent for the first page.",
    )
    page_size = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=PAGE_SIZE_MAX,
        default=PAGE_SIZE_DEFAULT,
        help_text=f"Items per page (1-{PAGE_SIZE_MAX}, default {PAGE_SIZE_DEFAULT}).",
    )


def next_field() -> serializers.CharField:
    """The ``next`` member of a page (a URL, or null on the last page)."""
    return serializers.CharField(allow_null=True, help_text="URL of the next page; null on the last page.")


class Pager:
    """The page a request asks for in list ``name``, whose cursor positions are ``fields``.

    ``fields`` maps each position key to its type (``int`` or ``str``), e.g. ``{"after": int}``.
    """

    def __init__(self, request, name: str, fields: dict[str, type]):
        params = PageParams(data=request.query_params)
        params.is_valid(raise_exception=True)
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
            raise serializers.ValidationError(
                {"cursor": [serializers.ErrorDetail("Invalid or expired cursor.", code="invalid_cursor")]}
            )
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
