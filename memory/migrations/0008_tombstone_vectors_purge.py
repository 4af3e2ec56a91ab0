"""Tombstones remember the erased subject's pk until its evidence vectors are purged (issue 15):
``workers.reconcile_erasures`` retries the purges that did not complete (Milvus down at erase time).
Tombstones written before this migration have no pk: their purge cannot be retried (nothing to key it)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0007_compact_history"),
    ]

    operations = [
        migrations.AddField(
            model_name="tombstone",
            name="subject_pk",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="tombstone",
            name="vectors_purged_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
