"""Training data for the MemListener, read back from the audit log (Django side).

- :mod:`.gold`   -- which of a chunk's op records are gold, negatives or gate rejections, and how a
  moderator's later edit of a model's value becomes the gold value;
- :mod:`.split`  -- the deterministic train/val split by subject;
- :mod:`.export` -- one JSONL example per chunk a model processed: schema, tree at the op's base
  version, turns, the prompt rebuilt as the listener built it, gold and negatives;
- :mod:`.pointing` -- optional rebuild of the pointing prompt (needs the embedder).
- :mod:`.cosine` -- the pointing context by cosine alone (the rebuild's candidates; tests' context
  step), which the product's fact pipeline replaced.

``python manage.py export_training_data`` drives it; the line format is in ``docs/TRAINING.md``.
The reward for model outputs is :mod:`memory.engine.scorer` (pure Python).
"""
