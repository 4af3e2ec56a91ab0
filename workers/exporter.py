"""The Celery workers' metrics over HTTP: one exporter per worker container, multiprocess mode.

A prefork Celery worker is one main process and ``--concurrency`` pool processes; the tasks (and
so ``workers.metrics``' series: task runs and durations, chunks applied and failed, dispatch
timings) run in the pool processes, which come and go. prometheus_client's multiprocess mode is the
way its maintainers document for this: with ``PROMETHEUS_MULTIPROC_DIR`` set (the worker image
sets it) every pool process writes its values to files there, and one HTTP server in the main
process serves their aggregate (``MultiProcessCollector``). One port per container, one scrape
target per container, nothing to discover per pool process. (An exporter per pool process would
need a port each and a target that disappears with the process; an event-based exporter such as
celery-exporter sees Celery's task events but not these series.)

``PERSONATREE_WORKER_METRICS_PORT`` (0, the default, is off) turns it on; the server binds
``PERSONATREE_WORKER_METRICS_ADDR`` (``0.0.0.0`` in the images; the port is never published, the
scraper reaches it on the container network). The receivers are connected by ``workers.apps``:

- ``worker_init`` (main process, before the pool forks): empties the directory of a previous run
  and starts the server;
- ``worker_process_shutdown`` (a pool process exiting): marks its live gauges dead.
"""

from __future__ import annotations

import logging
import os

from celery.signals import worker_init, worker_process_shutdown

from memory import conf

logger = logging.getLogger(__name__)


def start(port: int, addr: str):
    """Start the exporter's HTTP server thread in this process, serving the aggregate of every
    process that writes to ``PROMETHEUS_MULTIPROC_DIR``; returns ``(server, thread)``."""
    import prometheus_client

    from personatree_site.ops.gunicorn_conf import clear_multiproc_dir
    from personatree_site.ops.metrics import multiprocess_registry

    clear_multiproc_dir(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    return prometheus_client.start_http_server(port, addr=addr, registry=multiprocess_registry())


@worker_init.connect
def _start_exporter(sender=None, **kwargs) -> None:
    ops = conf.get().ops
    if not ops.worker_metrics_port:
        return
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        logger.warning(
            "PERSONATREE_WORKER_METRICS_PORT is set but PROMETHEUS_MULTIPROC_DIR is not: "
            "the pool processes' metrics cannot be collected; no exporter started"
        )
        return
    start(ops.worker_metrics_port, ops.worker_metrics_addr)
    logger.info("worker metrics on %s:%s", ops.worker_metrics_addr, ops.worker_metrics_port)


@worker_process_shutdown.connect
def _mark_dead(sender=None, pid=None, **kwargs) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())
