# syntax=docker/dockerfile:1
# PersonaTree Celery worker (queues `ingest`, `index` and `webhooks`) and Flower. Build from the repository root:
#   docker build -f docker/worker.Dockerfile -t personatree-worker:0.1.0 .
# One image, one queue per container: the compose file and docs/DEPLOY.md pick the queue with -Q.
FROM python:3.11.11-slim-bookworm

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PERSONATREE_DATA_DIR=/data \
    XDG_CACHE_HOME=/opt/cache \
    DJANGO_SETTINGS_MODULE=personatree_site.settings.production

WORKDIR /app
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /app --shell /usr/sbin/nologin app

COPY pyproject.toml manage.py ./
# Every version the install resolves is pinned by the lock (scripts/lock.sh), as in `make venv` and CI.
COPY requirements/lock.txt requirements/
COPY personatree_site/ personatree_site/
COPY memory/ memory/
COPY workers/ workers/
COPY serving/ serving/
# The index queue embeds evidence (recall extra); Flower watches the same broker.
RUN pip install -c requirements/lock.txt --extra-index-url "${TORCH_INDEX_URL}" ".[recall]" "flower==2.2.0" \
    && python -m serving.warm \
    && mkdir -p /data /tmp/prometheus-multiproc && chown -R app:app /data /tmp/prometheus-multiproc

# The pool processes write their metrics here; with PERSONATREE_WORKER_METRICS_PORT set (compose, k8s)
# the main process serves their sum on that port (workers/exporter.py).
ENV PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus-multiproc \
    PERSONATREE_WORKER_METRICS_ADDR=0.0.0.0
USER 10001:10001
CMD ["celery", "-A", "personatree_site", "worker", "-Q", "ingest,index,webhooks", "--concurrency", "2", "--loglevel", "INFO"]
