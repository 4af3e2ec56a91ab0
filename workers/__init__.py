"""Ingestion workers (Celery): dispatcher, per-subject ordering, task policy and metrics."""
