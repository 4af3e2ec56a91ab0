"""A ListenerClient wrapper that counts model calls and tokens per job (OpRecords carry no tokens).

With `record_path`, every successful raw model output is also appended to a recording file in
the recorded engine's format, keyed by the chunk's turns (`serving.engines.base.turns_key`), so
a run with a real model can later be replayed (`--memlistener recorded:PATH`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from serving.client import ListenerClient
from serving.engines.base import turns_key
from serving.protocol import ListenerJob, ListenerResult


class CountingClient:
    def __init__(self, inner: ListenerClient, *, record_path: str | Path | None = None) -> None:
        self.inner = inner
        self.record_path = Path(record_path) if record_path else None
        self.usage_path: str | None = None
        self.usage: dict[str, dict] = {}
        self.model_ids: set[str] = set()
        self.prompt_versions: set[str] = set()
        self.seconds = 0.0
        self._lock = threading.Lock()

    def run(self, jobs: Sequence[ListenerJob]) -> list[ListenerResult]:
        start = time.perf_counter()
        results = self.inner.run(jobs)
        elapsed = time.perf_counter() - start
        with self._lock:
            self.seconds += elapsed
            if self.record_path:
                self._record(jobs, results)
            for r in results:
                u = self.usage.setdefault(
                    r.job_id, {"model_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "failed": False}
                )
                u["model_calls"] += 1
                u["prompt_tokens"] += r.prompt_tokens
                u["completion_tokens"] += r.completion_tokens
                u["failed"] = r.error is not None
                if r.model_id:
                    self.model_ids.add(r.model_id)
                if r.prompt_version:
                    self.prompt_versions.add(r.prompt_version)
            if self.usage_path:
                Path(self.usage_path).write_text(json.dumps(self.usage, indent=1), encoding="utf-8")
        return results

    def _record(self, jobs: Sequence[ListenerJob], results: Sequence[ListenerResult]) -> None:
        with self.record_path.open("a", encoding="utf-8") as fh:
            for job, r in zip(jobs, results, strict=False):
                if r.error is None:
                    entry = {
                        "key": turns_key([t.model_dump() for t in job.turns]),
                        "text": r.raw_text,
                        "model_id": r.model_id,
                        "prompt_tokens": r.prompt_tokens,
                        "completion_tokens": r.completion_tokens,
                    }
                    fh.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def save_usage(self, path: str | Path) -> None:
        with self._lock:
            Path(path).write_text(json.dumps(self.usage, indent=1), encoding="utf-8")

    def load_usage(self, path: str | Path) -> None:
        """Usage of an earlier run on the same tenant (its chunks are not sent to the model again)."""
        p = Path(path)
        if p.is_file():
            with self._lock:
                self.usage = {**json.loads(p.read_text(encoding="utf-8")), **self.usage}

    def usage_by_chunk(self) -> dict[int, dict]:
        """Usage summed per chunk id (the dispatcher's job ids are `<chunk id>:<claim token>`; a retried
        chunk has one job per attempt)."""
        out: dict[int, dict] = {}
        with self._lock:
            for job_id, u in self.usage.items():
                head = job_id.split(":", 1)[0]
                if not head.isdigit():
                    continue
                agg = out.setdefault(
                    int(head), {"model_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "failed": False}
                )
                for k in ("model_calls", "prompt_tokens", "completion_tokens"):
                    agg[k] += u[k]
                agg["failed"] = u["failed"]  # the last attempt decides
        return out
