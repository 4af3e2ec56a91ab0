"""Start the real MemListener Ray Serve app for tests and benchmarks.

``serve_memlistener(config)`` starts a private local Ray cluster (never the default GCS port
6379, which Redis uses: a fresh ``ray.init(address="local")`` picks free ports), starts Serve's
HTTP proxy on a free 127.0.0.1 port, deploys the app with ``config`` and yields the endpoint
URL. On exit it calls ``serve.shutdown()`` and ``ray.shutdown()``. Used by tests/serving and by
the ingestion end-to-end tests (with the recorded engine)::

    with serve_memlistener(AppConfig(engine=EngineConfig(kind="recorded", recording_path=p))) as url:
        client = RayServeClient(url)
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

from serving.config import AppConfig


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_with_retries(start, undo, attempts: int) -> None:
    """Call ``start`` up to ``attempts`` times, undoing a failed start before the next (and the last)."""
    for attempt in range(1, attempts + 1):
        try:
            start()
            return
        except Exception:
            with contextlib.suppress(Exception):
                undo()
            if attempt == attempts:
                raise


@contextlib.contextmanager
def serve_memlistener(
    config: AppConfig, *, num_cpus: int = 2, app_name: str = "memlistener", start_attempts: int = 3
) -> Iterator[str]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.pop("RAY_ADDRESS", None)
    import ray
    from ray import serve

    from serving.app import ROUTE_PREFIX, build_app

    # On a loaded machine the raylet can miss Ray's fixed 30 s registration wait ("The current node
    # timed out during startup", seen once in a full `make test`); a fresh start then succeeds.
    _start_with_retries(
        lambda: ray.init(
            address="local",
            num_cpus=num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={"env_vars": {"RAY_AUTH_MODE": "disabled"}},
        ),
        ray.shutdown,
        start_attempts,
    )
    ports: list[int] = []

    def start_serve() -> None:
        # The port is picked only now, and afresh on every attempt: Ray's own processes take ports
        # while the cluster starts, and a port probed before ``ray.init`` was once taken by one of
        # them ("Failed to bind to address '127.0.0.1:38829'", a CI run).
        ports.append(free_port())
        serve.start(http_options={"host": "127.0.0.1", "port": ports[-1]})

    try:
        # Likewise Serve's proxy can miss its fixed 60 s start timeout.
        _start_with_retries(start_serve, serve.shutdown, start_attempts)
        port = ports[-1]
        serve.run(build_app(config.model_dump(mode="json")), name=app_name, route_prefix=ROUTE_PREFIX)
        yield f"http://127.0.0.1:{port}{ROUTE_PREFIX}"
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()
