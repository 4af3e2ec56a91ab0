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


@register()
def memlistener_settings(app_configs=None, **kwargs):
    """The MemListener client config (backend, prompt mode, candidate settings, limits) is a pydantic
    model: building it here turns a bad PERSONATREE_MEMLISTENER_* value into a start-up error."""
    from pydantic import ValidationError

    from serving.client import client_config_from_settings, engine_config_for
    from serving.config import check_engine_config

    try:
        check_engine_config(engine_config_for(client_config_from_settings()))
    except (ValidationError, ValueError) as exc:
        return [Error(f"MemListener settings: {exc}", id="personatree.E002")]
    return []
