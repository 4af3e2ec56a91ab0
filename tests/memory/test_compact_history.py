"""Compact version history (issue 18 item 2): deltas + checkpoints replay to the old full snapshots.

- pure: ``rebuild`` of the stored form of random version sequences equals every version's tree;
- store: random writes through the one write path (applies, leaf edits/deletes, reverts) -- every
  ``as_of`` equals the tree the write produced, the head equals the replay of the op log, only
  checkpoints and the head keep a whole tree, the head read is still one query;
- as_of, export and revert through the API and the admin.
"""

from __future__ import annotations

import random

import pytest
from django.urls import reverse

from memory import selectors
from memory.engine import history
from memory.engine.history import apply_delta, delta_of, rebuild, stored_form
from memory.engine.ops import Op, OpType
from memory.engine.schema import get_schema
from memory.engine.tree import Tree, TreeError, replay
from memory.models import OpRecord, TreeVersion
from memory.services.tree import Actor, leaf_delete, leaf_edit, tree_apply_ops, tree_revert

SCHEMA = get_schema("personatree-default", 1)
PATHS = [leaf.path for leaf in SCHEMA.leaves if leaf.tier == "normal"][:12]
#: An export page through the API (key and schema cached): key, subject, the schema pin, versions, op
#: log, and one range read that replays every older version's tree, however many there are.
EXPORT_QUERIES = 6


def _random_tree_step(rng: random.Random, tree: Tree) -> Tree:
    """One version's change: a few sets and deletes (possibly none that differ)."""
    ops = []
    for _ in range(rng.randint(1, 4)):
        path = rng.choice(PATHS)
        if path in tree and rng.random() < 0.3:
            ops.append(Op(OpType.DELETE, path))
        else:
            ops.append(Op(OpType.UPDATE, path, f"v{rng.randint(0, 99)} {path[-8:]}"))
    return replay(tree, [ops])


@pytest.mark.parametrize("seed", range(25))
def test_rebuild_of_stored_forms_equals_every_tree(seed):
    rng = random.Random(seed)
    trees, rows, parent = [], [], Tree.empty()
    for number in range(1, rng.randint(2, 160)):
        tree = parent if rng.random() < 0.1 else _random_tree_step(rng, parent)
        if rng.random() < 0.03:
            tree = Tree.empty()  # a revert to v0
        whole, delta = stored_form(number, parent, tree)
        assert whole == tree.to_dict()
        assert apply_delta(parent, delta_of(parent, tree)) == tree
        if number % history.CHECKPOINT_EVERY == 0:
            assert delta is None
        # Stored as the history keeps it: the whole tree only on checkpoints and the last row.
        trees.append(tree)
        rows.append((number, whole, delta))
        parent = tree
    last = len(rows)
    kept = [(n, w if d is None or n == last else None, d) for n, w, d in rows]
    assert [t for _, t in rebuild(kept)] == trees
    # From any checkpoint onwards, too.
    for start, (_, whole, _delta) in enumerate(kept):
        if whole is not None:
            assert [t for _, t in rebuild(kept[start:])] == trees[start:]


def test_rebuild_refuses_a_row_with_neither_tree_nor_delta():
    with pytest.raises(TreeError, match="version 2"):
        list(rebuild([(1, {"a": "b"}, None), (2, None, None)]))
    with pytest.raises(TreeError):
        list(rebuild([(1, None, ["not", "an", "object"])]))


def test_first_version_and_reverts_to_small_trees_are_checkpoints():
    one = Tree({PATHS[0]: "x"})
    assert stored_form(1, Tree.empty(), one)[1] is None  # the delta would be the whole tree
    big = Tree({p: f"value {p}" for p in PATHS})
    assert stored_form(7, big, Tree.empty())[1] is None  # revert to empty: {} is smaller
    assert stored_form(7, big, big.set(PATHS[0], "changed"))[1] == {PATHS[0]: "changed"}


# --- the store -------------------------------------------------------------------------------


def _write_history(subject, admin, rng: random.Random, versions: int) -> dict[int, Tree]:
    """Random writes through every service that writes versions; the tree each version must have
    (computed here, independently of the store)."""
    actor = Actor.for_admin(admin)
    trees = {0: Tree.empty()}
    while subject.head_version < versions:
        head = subject.head_version
        current, roll = trees[head], rng.random()
        if roll < 0.08 and head > 1:
            to = rng.randint(0, head - 1)
            expected = trees[to]
            outcome = tree_revert(subject=subject, to_version=to, actor=actor)
        elif roll < 0.14 and current:
            path = rng.choice(sorted(current))
            expected = current.without(path)
            outcome = leaf_delete(subject=subject, path=path, actor=actor)
        elif roll < 0.2:
            path, value = rng.choice(PATHS), f"e{rng.random():.4f}"
            expected = current.set(path, value)
            outcome = leaf_edit(subject=subject, path=path, value=value, actor=actor)
        else:
            expected = _random_tree_step(rng, current)
            ops = [
                Op(OpType.DELETE, p) if v is None else Op(OpType.UPDATE if p in current else OpType.ADD, p, v)
                for p, v in delta_of(current, expected).items()
            ]
            outcome = tree_apply_ops(subject=subject, base_version=head, ops=ops, actor=actor)
        assert not outcome.rejected, outcome.rejected
        if outcome.version is None:
            assert expected == current
        else:
            trees[outcome.version.number] = expected
    return trees


@pytest.mark.django_db
@pytest.mark.parametrize("seed", [1, 2])
def test_every_version_reads_back_as_written(subject, admin_user, monkeypatch, seed):
    monkeypatch.setattr(history, "CHECKPOINT_EVERY", 7)  # several checkpoints in a short history
    trees = _write_history(subject, admin_user, random.Random(seed), versions=40)
    head = subject.head_version
    for number, tree in trees.items():
        assert selectors.tree_at(subject, number) == (number, tree), number
    assert TreeVersion.objects.trees(subject.pk, trees) == {n: t.to_dict() for n, t in trees.items()}
    # Storage: only checkpoints (every 7th, the first, small reverts) and the head keep a whole tree.
    rows = TreeVersion.objects.filter(subject=subject).order_by("number")
    for version in rows:
        assert (version.tree is not None) == (version.delta is None or version.number == head), version
        if version.number % 7 == 0 or version.number == 1:
            assert version.delta is None
        assert version.snapshot == trees[version.number].to_dict()
    assert sum(v.delta is None for v in rows) < head / 2
    # SQL NULLs (not JSON nulls): the range read and the old-head update filter on them.
    assert rows.filter(delta__isnull=True).count() == sum(v.delta is None for v in rows)
    assert rows.filter(tree__isnull=True).count() == sum(v.tree is None for v in rows)
    # The head equals the replay of the applied op log (reverts are applied ops too).
    applied = OpRecord.objects.filter(
        subject=subject, status=OpRecord.Status.APPLIED, version__isnull=False
    ).order_by("version__number", "position")
    batches: dict[int, list[Op]] = {}
    for record in applied:
        op = (
            Op(OpType.DELETE, record.path)
            if record.new_value is None
            else Op(OpType.UPDATE, record.path, record.new_value)
        )
        batches.setdefault(record.version_id, []).append(op)
    assert replay(Tree.empty(), batches.values()) == trees[head] == selectors.tree_current(subject)


@pytest.mark.django_db
def test_delta_rows_hold_sql_null_trees_and_the_head_read_is_one_query(
    subject, admin_user, django_assert_num_queries
):
    actor = Actor.for_admin(admin_user)
    tree_apply_ops(subject=subject, base_version=0, ops=[Op.add(p, f"value {p}") for p in PATHS], actor=actor)
    for n in range(1, 4):
        leaf_edit(subject=subject, path=PATHS[n], value=f"edit {n}", actor=actor)
    assert list(
        TreeVersion.objects.filter(subject=subject, tree__isnull=True).values_list("number", flat=True)
    ) == [3, 2]
    assert TreeVersion.objects.get(subject=subject, number=3).delta == {PATHS[2]: "edit 2"}
    head = TreeVersion.objects.get(subject=subject, number=4)  # the head: its delta and its whole tree
    assert head.delta == {PATHS[3]: "edit 3"} and head.tree[PATHS[3]] == "edit 3"
    with django_assert_num_queries(1):
        fresh = selectors.subject_get(tenant=subject.tenant, external_id=subject.external_id)
        tree = selectors.tree_current(fresh)
    assert tree[PATHS[3]] == "edit 3" and len(tree) == len(PATHS)
    with django_assert_num_queries(1):
        number, old = selectors.tree_at(fresh, 2)
    assert number == 2 and old[PATHS[1]] == "edit 1" and old[PATHS[2]] == f"value {PATHS[2]}"
    with pytest.raises(LookupError):
        selectors.tree_at(fresh, 9)


@pytest.mark.django_db
@pytest.mark.parametrize("edits", [3, 12])
def test_export_replays_versions_in_a_fixed_number_of_queries(
    subject, admin_user, make_api_client, django_assert_num_queries, edits
):
    actor = Actor.for_admin(admin_user)
    api, _ = make_api_client(subject.tenant, scopes=["read"])
    url = reverse("subject-export", kwargs={"external_id": subject.external_id})
    api.get(url)  # the key and the schema are cached from here on
    for n in range(edits):
        leaf_edit(subject=subject, path=PATHS[n % 3], value=f"v{n}", actor=actor)
    with django_assert_num_queries(EXPORT_QUERIES):
        exported = api.get(url).json()
    assert [v["tree"][PATHS[0]] for v in exported["versions"]] == [f"v{n - n % 3}" for n in range(edits)]
    assert exported["versions"][-1]["tree"] == exported["tree"]


# --- through the API and the admin -------------------------------------------------------------


@pytest.mark.django_db
def test_as_of_export_and_revert_through_the_api_and_admin(subject, admin_user, make_api_client, client):
    actor = Actor.for_admin(admin_user)
    tree_apply_ops(
        subject=subject, base_version=0, ops=[Op.add(p, f"first {p}") for p in PATHS[:4]], actor=actor
    )
    for n in range(2, 9):
        leaf_edit(subject=subject, path=PATHS[n % 4], value=f"v{n}", actor=actor)
    written = {n: selectors.tree_at(subject, n)[1].to_dict() for n in range(9)}
    api, _ = make_api_client(subject.tenant, scopes=["read"])
    tree_url = reverse("subject-tree", kwargs={"external_id": subject.external_id})
    for n in (0, 1, 4, 8):
        body = api.get(tree_url, {"as_of": n}).json()
        assert (body["version"], body["tree"]) == (n, written[n])
    export = api.get(reverse("subject-export", kwargs={"external_id": subject.external_id})).json()
    assert {v["number"]: v["tree"] for v in export["versions"]} == {n: written[n] for n in range(1, 9)}

    client.force_login(admin_user)
    revert = reverse("admin:memory_subject_revert", args=[subject.pk, 3])
    assert client.post(revert, {"base_version": 8}).status_code == 302
    body = api.get(tree_url).json()
    assert (body["version"], body["tree"]) == (9, written[3])
    assert TreeVersion.objects.get(subject=subject, number=9).created_by == "revert"
    assert api.get(tree_url, {"as_of": 8}).json()["tree"] == written[8]
    page = client.get(
        reverse(
            "admin:memory_treeversion_change", args=[TreeVersion.objects.get(subject=subject, number=5).pk]
        )
    )
    assert page.status_code == 200 and "delta against the previous version" in page.content.decode()
    assert written[5][PATHS[1]] in page.content.decode()
