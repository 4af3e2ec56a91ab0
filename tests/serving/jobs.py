"""MemListener jobs for the serving tests and the MemListener benches (pure: no pytest, no Django,
so that ``bench/bench_gpu.py`` imports it on a GPU box's own environment)."""

from __future__ import annotations

from serving.protocol import ListenerJob


def make_job(
    schema, turns, *, job_id="job-1", subject_id="subject-1", tree=None, base_version=0
) -> ListenerJob:
    """A job on ``schema`` (a loaded schema) for one chunk's ``turns``."""
    return ListenerJob(
        job_id=job_id,
        subject_id=subject_id,
        base_version=base_version,
        schema_id=schema.id,
        schema_version=schema.version,
        tree=tree or {},
        turns=turns,
    )
