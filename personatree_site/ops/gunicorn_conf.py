"""gunicorn settings of the web image (``gunicorn -c python:personatree_site.ops.gunicorn_conf``).

Every gunicorn worker answers ``/metrics`` with all workers' series: prometheus_client's multiprocess
mode over ``PROMETHEUS_MULTIPROC_DIR``, emptied at start (a restart adds no old counters); a dead
worker's live gauges are marked dead. ``WEB_CONCURRENCY`` workers (3), bound to ``GUNICORN_BIND``.
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
