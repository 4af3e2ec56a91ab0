"""System checks (`manage.py check`, run at every server and worker start) for settings that would
otherwise only fail on the first request that reads them."""

from django.core.checks import Error, register


@register()
def recall_settings(app_configs=None, **kwargs):
    from memory.recall import runtime
    from memory.recall.search import STRATEGIES

    try:
        runtime.recall_config()
    except ValueError as exc:
        return [Error(str(exc), hint=f"use one of: {', '.join(STRATEGIES)}", id="personatree.E001")]
    return []
