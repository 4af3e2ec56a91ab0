"""PersonaTree engine: pure Python (schema, ops, parser, gate, tree arithmetic, render, chunker...).

No framework imports are allowed here (Django, Celery, Ray, Milvus, Redis...); import-linter and an
AST scan (tests/memory/engine/test_purity.py) enforce it. Each module's docstring states its policy.
The names below are the ones imported from the package itself; everything else from its module.
"""

# ruff: noqa: F401 (re-exports)
from .chunker import Turn, chunk_turns
from .gate import LENIENT, STRICT, Reason, gate
from .ops import Op, OpError, OpType
from .parser import format_ops, parse_ops
from .render import count_tokens, estimate_tokens, render, set_token_counter
from .schema import Schema, SchemaError, default_schema, get_schema, load_schema, shipped_schemas
from .tree import Change, Tree, TreeError, apply, changes_to_ops, diff, replay
