"""Evaluation harness: LoCoMo and PersonaMem over the real pipeline (backfill -> versions -> recall -> answer).

Pure parts (dataset views, scorers, metrics, results writer) import no Django; the runners
(`locomo_run.py`, `personamem_run.py`) drive the project's services through `pipeline.py`.
See docs/EVALUATION.md.
"""
