"""The MemListener prompts: a static part first (rules, schema leaves; prefix caching computes it
once), then the per-call part. The versions go into the audit log: bump them when the text changes."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from datetime import datetime

from memory.engine.schema import Schema
from serving.engines.base import Prompt

PROMPT_VERSION = "memlistener-prompt/2"

RULES = """\
You keep the long-term memory of one user as a tree of slots. Every slot (a leaf path below) holds \
one short English note about the user's current state for that attribute. You read the slots that \
are already filled and a new piece of dialogue, and you write the operations that bring the memory \
up to date.

Operations:
- ADD: the slot is empty and the dialogue gives lasting information for it.
- UPDATE: the slot already holds a note and the dialogue changes or adds to it. Write the merged \
note: keep what is still true in the old note and fold the new information in (for example \
"used to run; knee trouble lately, switched to swimming").
- DELETE: only when the user says outright that the stored note is no longer true, or asks you \
to forget it. A DELETE has no value.
- NO_OP: nothing in the dialogue belongs in long-term memory (greetings, small talk, one-off \
tasks, passing moods). NO_OP is the only operation when it is used.

Rules:
1. Record facts about the user that the user states or clearly implies; what the assistant says \
is context, not a fact about the user.
2. Do not write what a slot already says.
3. When statements disagree, the latest explicit statement wins.
4. At most one operation per slot.
5. Put each fact in the most specific slot that fits it.
6. Keep notes short, factual and in English: a phrase of at most 80 characters, in the user's own terms.
7. Reply with JSON only: {"ops": [{"op": "ADD", "path": "<slot path>", "value": "<note>"}, ...]}. \
Use "value": null for DELETE, and {"op": "NO_OP", "path": null, "value": null} for NO_OP.
"""


@functools.lru_cache(maxsize=32)
def static_prefix(schema: Schema) -> str:
    """Rules + every leaf of ``schema`` with its description. No budgets: small models copied the
    numbers into values ("height: 170"); rule 6 asks for the default schema's smallest one."""
    lines = [f"{leaf.path}: {leaf.description}" for leaf in schema.leaves]
    return "\n".join([RULES, f"\nSlots of schema {schema.id} v{schema.version} (path: meaning):", *lines, ""])


def _render_turns(turns: Sequence[Mapping]) -> str:
    return "\n".join(f"{t['role']}: {' '.join(t['content'].split())}" for t in turns)


def per_call_part(tree: Mapping[str, str], turns: Sequence[Mapping[str, str]]) -> str:
    filled = "\n".join(f"{path}: {value}" for path, value in sorted(tree.items()) if value) or "(none)"
    return (
        f"\nFilled slots:\n{filled}\n\nDialogue:\n{_render_turns(turns)}\n\n"
        "Write the operations for this dialogue as JSON.\n"
    )


def _prompt(static: str, dynamic: str, version: str, tree: Mapping[str, str], turns, pointing=None) -> Prompt:
    plain_turns = tuple({"role": t["role"], "content": t["content"]} for t in turns)
    return Prompt(static, dynamic, version, turns=plain_turns, tree=dict(tree), pointing=pointing)


def build_prompt(schema: Schema, tree: Mapping[str, str], turns: Sequence[Mapping[str, str]]) -> Prompt:
    return _prompt(static_prefix(schema), per_call_part(tree, turns), PROMPT_VERSION, tree, turns)


# The pointing prompt (prompt_mode="pointing"): the model sees only this chunk's numbered user
# sentences and a few candidate leaves under short ids, and writes ops that point at them.
POINTING_PROMPT_VERSION = "memlistener-pointing/4"

POINTING_RULES = """\
You keep the long-term memory of one user. You get the user's sentences from one piece of \
dialogue, numbered, and a few memory slots that may fit them, numbered, each with what it holds now.

Write what the sentences tell about the user as operations that point at a sentence and a slot:
- {"op": "ADD", "sentence": <sentence number>, "leaf": <slot number>, "value": "<note>"}: the \
sentence states a lasting fact about the user that belongs in the slot. The note is a short \
phrase in the third person, taken from the sentence's own words: copy numbers, names and places \
exactly, and never add anything the sentence does not say. For a slot that already holds \
something, write only the new fact; it is merged in.
- {"op": "DELETE", "sentence": <n>, "leaf": <n>}: only when the sentence says what the slot holds \
is no longer true, or asks to forget it.
- {"op": "NO_OP"} alone: no sentence states a lasting fact about the user (greetings, questions, \
requests, small talk, passing moods).
Facts come from the user's numbered sentences only: the dialogue around them is context, and \
what the other speaker says is never a fact about the user. Notes are at most 12 words. When a \
sentence dates an event relatively ("yesterday", "last week"), write the absolute date from the \
dialogue's date. Reply with JSON only: {"ops": [...]}.

Example.
User sentences:
1. Hi there!
2. I work as a nurse at the city hospital.
3. My sister Ana just had a baby.
4. Can you find me a recipe?

Slots:
1. identity/occupation/current_role -- now: (empty)
2. identity/family/siblings -- now: brother Tom, lives in Oslo
3. behaviour/food/cooking -- now: (empty)

Answer:
{"ops": [{"op": "ADD", "sentence": 2, "leaf": 1, "value": "nurse at the city hospital"}, \
{"op": "UPDATE", "sentence": 3, "leaf": 2, "value": "sister Ana just had a baby"}]}
"""


def _session_date(turns: Sequence[Mapping]) -> str:
    """The chunk's date ("8 May 2023"), from its last timestamped turn; "" when none is known."""
    for turn in reversed(turns):
        ts = turn.get("ts")
        if isinstance(ts, str) and ts:
            try:
                ts = datetime.fromisoformat(ts.replace("Z", "+00:00"))
            except ValueError:
                continue
        if isinstance(ts, datetime):
            return f"{ts.day} {ts:%b %Y}"
    return ""


def pointing_per_call(context, turns: Sequence[Mapping] = ()) -> str:
    """The chunk's date, the whole dialogue (context, never a source), its numbered user sentences and slots."""
    sentences = "\n".join(f"{s.id}. {s.text}" for s in context.sentences)
    slots = "\n".join(
        f"{c.id}. {c.path} -- now: {c.value if c.value is not None else '(empty)'}"
        for c in context.candidates.leaves
    )
    date = _session_date(turns)
    head = f"\nDate of this dialogue: {date}\n" if date else ""
    dialogue = f"\nDialogue:\n{_render_turns(turns)}\n" if turns else ""
    return f"{head}{dialogue}\nUser sentences:\n{sentences}\n\nSlots:\n{slots}\n\nWrite the operations as JSON.\n"


def build_pointing_prompt(context, tree: Mapping[str, str], turns: Sequence[Mapping[str, str]]) -> Prompt:
    dynamic = pointing_per_call(context, [t for t in turns if t.get("role") != "system"])
    return _prompt(POINTING_RULES, dynamic, POINTING_PROMPT_VERSION, tree, turns, context)
