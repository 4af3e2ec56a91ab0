"""A subject history written through the real services: chunks applied by a model actor, a
moderator's edit and delete, a declined and an approved special-tier op, a pending one."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from memory.engine.ops import Op
from memory.models import Chunk, Message, OpRecord
from memory.services.governance import ops_review_approve, ops_review_decline
from memory.services.tree import Actor, Source, leaf_delete, leaf_edit, tree_apply_ops
from serving.prompt import POINTING_PROMPT_VERSION, PROMPT_VERSION
from tests.factories import SubjectFactory

CITY = "identity/location/current_city"
ROLE = "identity/occupation/current_role"
PETS = "identity/family/pets"
FOODS = "behaviour/food/favourite_foods"
EXERCISE = "behaviour/habits/exercise"
MUSIC = "behaviour/media/music"
CONDITIONS = "body/health/conditions"
ALLERGIES = "body/health/allergies"
MEDICATIONS = "body/health/medications"


@dataclass
class History:
    subject: object
    chunks: dict[str, Chunk] = field(default_factory=dict)


def apply_chunk(subject, turns, ops, *, prompt_version=PROMPT_VERSION, parse_errors=()):
    """Messages + a chunk for ``turns``, then the model's ``ops`` through ``tree_apply_ops``."""
    subject.refresh_from_db()
    last = Message.objects.filter(subject=subject).order_by("-seq").values_list("seq", flat=True).first() or 0
    for i, (role, content) in enumerate(turns, 1):
        Message.objects.create(subject=subject, seq=last + i, role=role, content=content)
    roles = [r for r, _ in turns]
    start = last + 1 + (1 if roles[0] == "system" else 0)
    chunk = Chunk.objects.create(
        subject=subject,
        chunk_key=f"{subject.pk}-{start:08d}".ljust(64, "0"),
        start_seq=start,
        end_seq=last + len(turns),
    )
    tree_apply_ops(
        subject=subject,
        base_version=subject.head_version,
        ops=ops,
        actor=Actor.for_model(model_id="test-model", prompt_version=prompt_version),
        source=Source(
            chunk.pk, chunk.start_seq, chunk.end_seq, evidence=tuple(c for r, c in turns if r == "user")
        ),
        parse_errors=parse_errors,
    )
    return chunk


def held(chunk):
    return list(
        OpRecord.objects.filter(chunk=chunk, status=OpRecord.Status.PENDING_REVIEW).values_list(
            "pk", flat=True
        )
    )


def build_history(tenant, admin_user, external_id="alice") -> History:
    subject = SubjectFactory(tenant=tenant, external_id=external_id)
    h = History(subject)
    admin = Actor.for_admin(admin_user)
    h.chunks["c1"] = apply_chunk(
        subject,
        [
            ("system", "You are a friendly assistant."),
            ("user", "I moved to Porto last year."),
            ("assistant", "Nice! What do you do there?"),
            ("user", "I work as a data engineer at a bank."),
        ],
        [
            Op(
                Op.add(CITY, "x").type, CITY, "moved to Porto last year", source="I moved to Porto last year."
            ),
            Op.add(ROLE, "data engineer at a bank"),
            Op.add("identity/not_a_leaf", "junk"),
        ],
        parse_errors=[{"line_no": 3, "line": "ADD(", "message": "ADD has no path"}],
    )
    h.chunks["c2"] = apply_chunk(
        subject, [("user", "My cat Miso is four."), ("assistant", "Aww!")], [Op.add(PETS, "cat Miso, four")]
    )
    subject.refresh_from_db()
    leaf_edit(subject=subject, path=PETS, value="a cat called Miso, 4 years old", actor=admin)
    h.chunks["c3"] = apply_chunk(
        subject,
        [("user", "My favourite food is ramen. I swim twice a week."), ("assistant", "Great.")],
        [Op.add(FOODS, "ramen"), Op.add(EXERCISE, "swims twice a week")],
    )
    subject.refresh_from_db()
    leaf_delete(subject=subject, path=FOODS, actor=admin)
    h.chunks["c4"] = apply_chunk(
        subject,
        [
            ("user", "I have asthma and I use an inhaler. I listen to jazz every evening."),
            ("assistant", "OK."),
        ],
        [Op.add(CONDITIONS, "asthma, uses an inhaler"), Op.add(MUSIC, "listens to jazz every evening")],
    )
    ops_review_decline(op_ids=held(h.chunks["c4"]), user=admin_user, note="health data not wanted")
    h.chunks["c5"] = apply_chunk(
        subject,
        [("user", "I am allergic to peanuts."), ("assistant", "Noted.")],
        [Op.add(ALLERGIES, "allergic to peanuts")],
    )
    ops_review_approve(op_ids=held(h.chunks["c5"]), user=admin_user)
    h.chunks["c6"] = apply_chunk(subject, [("user", "Hi there!"), ("assistant", "Hello!")], [Op.no_op()])
    h.chunks["c7"] = apply_chunk(
        subject,
        [("user", "I take ibuprofen daily."), ("assistant", "OK.")],
        [Op.add(MEDICATIONS, "takes ibuprofen daily")],
    )  # held, never decided
    h.chunks["c8"] = apply_chunk(
        subject,
        [("user", "I go hiking in the hills on Sundays."), ("assistant", "Lovely.")],
        [Op.add("behaviour/hobbies/outdoor", "hiking in the hills on Sundays")],
        prompt_version=POINTING_PROMPT_VERSION,
    )
    subject.refresh_from_db()
    return h


@pytest.fixture
def history(tenant, admin_user) -> History:
    return build_history(tenant, admin_user)
