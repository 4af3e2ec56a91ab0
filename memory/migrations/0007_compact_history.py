"""Compact version history (issue 18): ``TreeVersion.snapshot`` becomes ``tree`` (nullable) plus
``delta``. Existing rows are converted subject by subject, in version order: checkpoints (every
CHECKPOINT_EVERY-th version, or a delta not smaller than the tree) and each subject's head keep
their whole tree; every other row keeps only its delta against the version before it.

Reversible: going back fills every row's whole tree again by replaying the deltas, then drops
``delta`` and restores ``snapshot``.
"""

from django.db import migrations, models

from memory.engine.history import rebuild, stored_form
from memory.engine.tree import Tree

BATCH = 500


def _by_subject(TreeVersion):
    """``(subject_id, [(id, number, tree, delta), ...])`` per subject, versions in number order."""
    rows = (
        TreeVersion.objects.order_by("subject_id", "number")
        .values_list("subject_id", "id", "number", "tree", "delta")
        .iterator(chunk_size=2000)
    )
    current, versions = None, []
    for subject_id, *row in rows:
        if subject_id != current and versions:
            yield current, versions
            versions = []
        current = subject_id
        versions.append(row)
    if versions:
        yield current, versions


def _flush(TreeVersion, deltas, emptied, force=False):
    if deltas and (force or len(deltas) >= BATCH):
        TreeVersion.objects.bulk_update(deltas, ["delta"], batch_size=BATCH)
        deltas.clear()
    if emptied and (force or len(emptied) >= BATCH):
        # update(tree=None) writes SQL NULL (bulk_update would write a JSON null).
        TreeVersion.objects.filter(pk__in=emptied).update(tree=None)
        emptied.clear()


def to_compact(apps, schema_editor):
    TreeVersion = apps.get_model("memory", "TreeVersion")
    Subject = apps.get_model("memory", "Subject")
    heads = set(Subject.objects.exclude(head=None).values_list("head_id", flat=True))
    deltas, emptied = [], []
    for _, versions in _by_subject(TreeVersion):
        parent = Tree.empty()
        for pk, number, whole, _ in versions:
            tree = Tree.from_dict(whole)
            _, delta = stored_form(number, parent, tree)
            if delta is not None:
                deltas.append(TreeVersion(pk=pk, delta=delta))
                if pk not in heads:
                    emptied.append(pk)
            parent = tree
        _flush(TreeVersion, deltas, emptied)
    _flush(TreeVersion, deltas, emptied, force=True)


def to_full(apps, schema_editor):
    TreeVersion = apps.get_model("memory", "TreeVersion")
    filled = []
    for _, versions in _by_subject(TreeVersion):
        trees = dict(rebuild((number, whole, delta) for _, number, whole, delta in versions))
        for pk, number, whole, _ in versions:
            if whole is None:
                filled.append(TreeVersion(pk=pk, tree=trees[number].to_dict()))
        if len(filled) >= BATCH:
            TreeVersion.objects.bulk_update(filled, ["tree"], batch_size=BATCH)
            filled.clear()
    TreeVersion.objects.bulk_update(filled, ["tree"], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0006_webhooks"),
    ]

    operations = [
        migrations.RenameField(model_name="treeversion", old_name="snapshot", new_name="tree"),
        migrations.AlterField(
            model_name="treeversion",
            name="tree",
            field=models.JSONField(
                blank=True, help_text="The whole tree: on checkpoints and on the subject's head.", null=True
            ),
        ),
        migrations.AddField(
            model_name="treeversion",
            name="delta",
            field=models.JSONField(
                blank=True,
                help_text="Leaves changed against the previous version ({path: value or null}); null on checkpoints.",
                null=True,
            ),
        ),
        migrations.RunPython(to_compact, to_full, elidable=False),
    ]
