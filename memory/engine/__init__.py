"""PersonaTree engine: pure-Python schema, ops, parser, gate, tree arithmetic, render and chunker.

No framework imports are allowed here (Django, Celery, Ray, Milvus, Redis...); the test suite
enforces it with import-linter and an AST scan. See each module's docstring for its policy:

- :mod:`.schema`  -- schema files, validation, the default bio-psycho-social schema;
- :mod:`.ops`     -- immutable ADD / UPDATE / DELETE / NO_OP values and their serialisation;
- :mod:`.parser`  -- tolerant parser of model output (line format and JSON), never raises;
- :mod:`.gate`    -- the deterministic safety gate and its reason codes (incl. UNGROUNDED, NO_CHANGE);
- :mod:`.grounding` -- is a value supported by the user's words (numbers, names, content words);
- :mod:`.text`    -- sentence split, word tokens, stems, numbers, stopwords;
- :mod:`.candidates` -- numbered user sentences, candidate leaves from a similarity matrix;
- :mod:`.clauses` -- third-person clauses, merge and retract of leaf values;
- :mod:`.pointing` -- the pointing prompt's output (sentence id, leaf id) mapped back to ops;
- :mod:`.extractive` -- the rule-based listener (no model);
- :mod:`.scorer`  -- scores predicted ops against gold ops for training;
- :mod:`.tree`    -- immutable trees, ``apply`` / ``diff`` / ``replay``;
- :mod:`.history` -- compact version history: deltas, checkpoints and their replay;
- :mod:`.migration` -- declared schema migrations (A -> B): plan, report and ops;
- :mod:`.render`  -- compact prompt context with tier/prefix filters and token counts;
- :mod:`.chunker` -- windows of user/assistant pairs with deterministic chunk keys.
"""

from .chunker import Chunk, Turn, chunk_key, chunk_turns
from .gate import (
    LENIENT,
    STRICT,
    GatePolicy,
    GateResult,
    Normalisation,
    Reason,
    Rejection,
    gate,
    normalise_value,
)
from .ops import Op, OpError, OpType
from .parser import ParseError, ParseResult, format_ops, parse_ops
from .render import Rendered, count_tokens, estimate_tokens, render, set_token_counter, token_counter_name
from .schema import (
    DEFAULT_SCHEMA_ID,
    DEFAULT_SCHEMA_VERSION,
    TIERS,
    Leaf,
    Schema,
    SchemaError,
    Tier,
    default_schema,
    get_schema,
    load_schema,
    shipped_schemas,
)
from .tree import Change, Tree, TreeError, apply, changes_to_ops, diff, replay

__all__ = [
    "Chunk",
    "Turn",
    "chunk_key",
    "chunk_turns",
    "GatePolicy",
    "LENIENT",
    "STRICT",
    "GateResult",
    "Normalisation",
    "Reason",
    "Rejection",
    "gate",
    "normalise_value",
    "Op",
    "OpError",
    "OpType",
    "ParseError",
    "ParseResult",
    "format_ops",
    "parse_ops",
    "Rendered",
    "count_tokens",
    "estimate_tokens",
    "render",
    "set_token_counter",
    "token_counter_name",
    "DEFAULT_SCHEMA_ID",
    "DEFAULT_SCHEMA_VERSION",
    "TIERS",
    "Leaf",
    "Schema",
    "SchemaError",
    "Tier",
    "default_schema",
    "get_schema",
    "load_schema",
    "shipped_schemas",
    "Change",
    "Tree",
    "TreeError",
    "apply",
    "changes_to_ops",
    "diff",
    "replay",
]
