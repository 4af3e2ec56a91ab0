"""``positive_data_acceptance_or_listed``: schemathesis's ``positive_data_acceptance``, except for
the refusals the operation lists in the document (``x-refusals``, :mod:`memory.api.openapi_links`).

A request that matches the operation's schema must not get a 400, 413 or 422 -- unless the answer
is a problem whose ``code`` and ``field`` are a refusal the operation lists: a rule JSON Schema
cannot state (stored state, two fields together, the engine's validation). Any other refusal of a
schema-valid request still fails. Registered with schemathesis on import, so both the in-suite
fuzz test and the command line (``SCHEMATHESIS_HOOKS=tests.fuzz.contract``) use it.
"""

from __future__ import annotations

import json

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance


def listed_refusal(case, response) -> bool:
    """Whether the response is a 400 problem that the operation lists in ``x-refusals``."""
    if response.status_code != 400:
        return False
    refusals = case.operation.definition.raw.get("x-refusals") or []
    try:
        body = json.loads(response.content)
    except ValueError:
        return False
    code, field = body.get("code"), str(body.get("field") or "")
    return any(
        code == r["code"]
        and (field == r["field"] or field.startswith((r["field"] + ".", r["field"] + "[", r["field"] + " ")))
        for r in refusals
    )


@schemathesis.check
def positive_data_acceptance_or_listed(ctx, response, case):
    if listed_refusal(case, response):
        return None
    return positive_data_acceptance(ctx, response, case)
