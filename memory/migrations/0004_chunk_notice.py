from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0003_grounding"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="notice",
            field=models.CharField(
                blank=True,
                default="",
                help_text="What the dispatcher changed in the chunk's input (e.g. turns cut to the MemListener's caps).",
                max_length=500,
            ),
        ),
    ]
