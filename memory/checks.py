"""System check of the PERSONATREE settings: a bad value is a start-up error, not a failure of the
first request that reads it (``personatree.E001`` recall, ``E002`` MemListener, ``E003`` the rest)."""

from django.core.checks import Error, register

_IDS = {"recall": "personatree.E001", "listener": "personatree.E002", "models": "personatree.E002"}


@register()
def personatree_settings(app_configs=None, **kwargs) -> list[Error]:
    from django.conf import settings

    from memory import conf
    from serving.client import ClientConfig

    try:
        conf.listener_client_config(ClientConfig, conf.build(settings.PERSONATREE))
    except conf.SettingsError as exc:
        return [
            Error(msg, hint=_hint(section, msg), id=_IDS.get(section, "personatree.E003"))
            for section, msg in exc.problems
        ]
    return []


def _hint(section: str, msg: str) -> str | None:
    if "RECALL_STRATEGY" in msg:
        from memory.recall.search import STRATEGIES

        return f"use one of: {', '.join(STRATEGIES)}"
    return f"set the PERSONATREE_* environment variable ({section} settings, memory/conf.py)"
