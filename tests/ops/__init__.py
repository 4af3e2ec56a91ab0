"""Operations endpoints: /healthz, /readyz, /metrics (personatree_site/ops)."""
