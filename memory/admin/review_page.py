"""What the review page shows about one held op: the leaf, current and proposed values with a word diff,
the user's sentence in its conversation, the leaf's history, why it was held (masked per access)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from memory import selectors
from memory.admin.access import MASK, masked_record, record_is_special, sees_special
from memory.models import Message, OpRecord

TURNS_AROUND = 3  # conversation turns shown either side of the user's sentence
HISTORY = 10  # recent ops on the same leaf

REASONS = {
    "special": "The leaf is special tier (health, beliefs, sexuality, politics...): "
    "the tenant holds such values for a person to confirm.",
    "mass": "The batch deletes more leaves than the tenant allows at once: deletes are held.",
}


def reason_key(record: OpRecord) -> str:
    return "special" if record.detail.startswith("special-tier") else "mass"


def leaf_tier(record: OpRecord) -> str:
    leaf = selectors.subject_schema(record.subject).leaf(record.path) if record.path else None
    return leaf.tier if leaf is not None else "?"


def word_diff(old: str | None, new: str | None) -> SafeString:
    """``old`` → ``new`` word by word: removed words in <del>, added ones in <ins> (escaped)."""
    a, b = (old or "").split(), (new or "").split()
    parts: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            parts.append(format_html("<del>{}</del>", " ".join(a[i1:i2])))
        if tag in ("insert", "replace"):
            parts.append(format_html("<ins>{}</ins>", " ".join(b[j1:j2])))
        if tag == "equal":
            parts.append(escape(" ".join(a[i1:i2])))
    return mark_safe(" ".join(parts))  # noqa: S308 - every part is escaped above


@dataclass
class Turn:
    seq: int
    role: str
    html: SafeString
    is_source: bool


def highlighted(content: str, sentence: str) -> tuple[SafeString, bool]:
    at = content.lower().find(sentence.lower()) if sentence else -1
    if at < 0:
        return escape(content), False
    end = at + len(sentence)
    return format_html("{}<mark>{}</mark>{}", content[:at], content[at:end], content[end:]), True


def conversation(record: OpRecord) -> list[Turn]:
    """The messages of the op's source window, the user's sentence marked, a few turns either side
    of the message holding it (the whole window, capped, when it cannot be found)."""
    if record.source_start_seq is None:
        return []
    messages = list(
        Message.objects.filter(
            subject_id=record.subject_id,
            seq__gte=record.source_start_seq,
            seq__lte=record.source_end_seq if record.source_end_seq is not None else record.source_start_seq,
        ).order_by("seq")[:200]
    )
    # The user's sentence when the model gave it, else the proposed value where it is verbatim.
    sentence = record.source_text or record.new_value or ""
    turns = [Turn(m.seq, m.role, *highlighted(m.content, sentence)) for m in messages if m.content]
    marked = [i for i, t in enumerate(turns) if t.is_source]
    if not marked:
        return turns[: 2 * TURNS_AROUND + 1]
    return turns[max(0, marked[0] - TURNS_AROUND) : marked[-1] + TURNS_AROUND + 1]


def leaf_choices(record: OpRecord, user) -> list[dict]:
    """The schema's leaves for the leaf picker: path, description, tier and current value (masked
    where the user may not see it; special-tier leaves left out for such users)."""
    schema = selectors.subject_schema(record.subject)
    tree = selectors.tree_current(record.subject)
    special = sees_special(user)
    return [
        {"path": leaf.path, "description": leaf.description, "tier": leaf.tier, "value": tree.get(leaf.path)}
        for leaf in schema.leaves
        if special or leaf.tier != "special"
    ]


def review_context(record: OpRecord, user) -> dict:
    masked = record_is_special(record) and not sees_special(user)
    shown = masked_record(record) if masked else record
    schema = selectors.subject_schema(record.subject)
    leaf = schema.leaf(record.path) if record.path else None
    current = selectors.tree_current(record.subject).get(record.path) if record.path else None
    history = [
        masked_record(r) if masked else r
        for r in OpRecord.objects.filter(subject_id=record.subject_id, path=record.path)
        .exclude(pk=record.pk)
        .select_related("version", "subject")
        .order_by("-created_at", "-id")[:HISTORY]
    ]
    return {
        "record": shown,
        "masked": masked,
        "leaf": leaf,
        "current": MASK if masked and current is not None else current,
        "diff": None if masked else word_diff(current, record.new_value),
        "turns": [] if masked else conversation(record),
        "history": history,
        "reason": REASONS[reason_key(record)],
        "leaves": [] if masked else leaf_choices(record, user),
    }
