"""Operations endpoints of the web process: ``/healthz``, ``/readyz`` and ``/metrics``.

- :mod:`.readiness` — the readiness checks (database, broker, Milvus, MemListener);
- :mod:`.metrics`   — per-route request metrics and the Prometheus exposition;
- :mod:`.views`     — the three views (plain Django, no DRF auth or throttles);
- :mod:`.middleware` — serves the ops paths first in the chain and times every other request.

docs/DEPLOY.md, section "Operations", is the operator's view.
"""
