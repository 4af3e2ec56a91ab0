from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0002_review_queue_proxy"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="require_grounding",
            field=models.BooleanField(
                default=True,
                help_text="Model values must be supported by the user's words of their chunk (gate reason UNGROUNDED).",
            ),
        ),
        migrations.AddField(
            model_name="oprecord",
            name="source_text",
            field=models.TextField(
                blank=True, default="", help_text="The user's sentence the value was taken from (model ops)."
            ),
        ),
    ]
