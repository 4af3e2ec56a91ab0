"""Fixtures of the end-to-end ingest tests: a Celery producer pointed at a real broker."""

from __future__ import annotations

import pytest

SHARED_REDIS_DB2 = "redis://127.0.0.1:6379/2"  # this area's database on the machine's Redis


@pytest.fixture
def producer():
    """Point this process's Celery app at a broker (not eager) for the test; restore afterwards."""
    from personatree_site.celery import app

    saved = {"task_always_eager": app.conf.task_always_eager, "broker_url": app.conf.broker_url}

    def use(url: str):
        app.conf.task_always_eager = False
        app.conf.broker_url = url
        app._pool = None
        app.amqp._producer_pool = None
        return app

    yield use
    app.conf.update(saved)
    app._pool = None
    app.amqp._producer_pool = None


def flush_redis_db2():
    import redis

    redis.Redis.from_url(SHARED_REDIS_DB2).flushdb()


@pytest.fixture
def shared_broker(producer):
    flush_redis_db2()
    producer(SHARED_REDIS_DB2)
    yield SHARED_REDIS_DB2
    flush_redis_db2()
