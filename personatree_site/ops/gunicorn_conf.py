"""gunicorn settings of the web image (``gunicorn -c python:personatree_site.ops.gunicorn_conf``).

Several gunicorn workers answer ``/metrics`` in turn, so each must report every worker's series:
prometheus_client's multiprocess mode. With ``PROMETHEUS_MULTIPROC_DIR`` set (the web image sets
it), every worker writes its values to files in that directory and a scrape aggregates them
(:func:`personatree_site.ops.metrics.exposition`). The hooks here keep the directory honest:

- :func:`on_starting` (the arbiter, once): empties the directory, so a restart does not add the
  previous run's counters;
- :func:`child_exit` (the arbiter, per dead worker): marks the worker's live gauges dead
  (``mark_process_dead``); its counters and histograms stay in the sums, as they must.

``WEB_CONCURRENCY`` sets the number of workers (3 by default), ``GUNICORN_BIND`` the address.
"""

from __future__ import annotations

import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
timeout = 60
# No access log: it would write raw paths, which carry external subject ids (the app logs one line
# per request with the route pattern instead).
accesslog = None


def multiproc_dir() -> str:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


def clear_multiproc_dir(path: str) -> None:
    """Remove the ``*.db`` files prometheus_client wrote to ``path`` (create it when missing)."""
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        if name.endswith(".db"):
            os.remove(os.path.join(path, name))


def on_starting(server) -> None:
    if multiproc_dir():
        clear_multiproc_dir(multiproc_dir())


def child_exit(server, worker) -> None:
    if multiproc_dir():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
