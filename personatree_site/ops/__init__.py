"""Operations of the web process: ``/healthz``, ``/readyz``, ``/metrics``, logs and tracing
(docs/DEPLOY.md, "Operations")."""
