"""System checks (`manage.py check`, run at every server and worker start) for settings that would
otherwise only fail on the first request that reads them."""

from django.conf import settings
from django.core.checks import Error, register


@register()
def recall_settings(app_configs=None, **kwargs):
    from memory.recall.search import STRATEGIES

    strategy = settings.PERSONATREE.get("RECALL_STRATEGY", "batch")
    if strategy not in STRATEGIES:
        return [
            Error(
                f"PERSONATREE_RECALL_STRATEGY={strategy!r} is not a recall strategy",
                hint=f"use one of: {', '.join(STRATEGIES)}",
                id="personatree.E001",
            )
        ]
    return []
