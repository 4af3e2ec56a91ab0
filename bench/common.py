"""What the benchmark modules share: the load note of a row, the rows printed when a module runs
alone (``python bench/bench_<area>.py``), and a timer put around a module's function for a while."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def load_note() -> str:
    """The machine's 1-minute load average and its cores, for a row's note."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count() or 0} cores"


def print_rows(rows: dict[str, dict]) -> None:
    """A module's rows, one a line, as ``python bench/bench_<area>.py`` shows them."""
    for name, row in rows.items():
        print(f"{name}: {row['value']} {row['unit']} (target {row['target']}) — {row['note']}")


class Timed:
    """While entered, every call of ``module.<name>`` is timed by ``clock`` (``time.perf_counter``:
    wall time; ``time.process_time``: this process's CPU time); ``times`` holds one entry a call."""

    def __init__(self, module, name: str, clock: Callable[[], float] = time.perf_counter) -> None:
        self.module, self.name, self.clock = module, name, clock
        self.real = getattr(module, name)
        self.times: list[float] = []

    def __enter__(self) -> Timed:
        def timed(*args, **kwargs):
            started = self.clock()
            try:
                return self.real(*args, **kwargs)
            finally:
                self.times.append(self.clock() - started)

        setattr(self.module, self.name, timed)
        return self

    def __exit__(self, *exc) -> None:
        setattr(self.module, self.name, self.real)
