"""The Celery workers' metrics over HTTP: one exporter per worker container, multiprocess mode.

Pool processes write their series to ``PROMETHEUS_MULTIPROC_DIR``; one server in the main process
serves the aggregate (``PERSONATREE_WORKER_METRICS_PORT``, 0 is off; docs/DEPLOY.md). ``workers.apps``
connects ``worker_init`` (empty the directory, start the server) and ``worker_process_shutdown``
(mark the exiting process's live gauges dead).
"""

from __future__ import annotations

import logging
import os

from celery.signals import worker_init, worker_process_shutdown

from memory import conf

logger = logging.getLogger(__name__)


def start(port: int, addr: str):
    """Start the exporter's server thread, serving every ``PROMETHEUS_MULTIPROC_DIR`` process's series."""
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
