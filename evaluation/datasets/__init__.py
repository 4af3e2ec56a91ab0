"""Evaluation views of the benchmark files (questions, gold answers, evidence, observations).

The turns themselves are ingested through `memory/backfill/` readers; these loaders only
read what scoring needs. Paths always come from the user: nothing here is vendored.
"""


class DatasetError(ValueError):
    """The benchmark file is missing, malformed, or lacks a required field (message says which)."""
