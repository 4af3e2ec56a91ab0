# syntax=docker/dockerfile:1
# PersonaTree web/API: Django + DRF under gunicorn. Build from the repository root:
#   docker build -f docker/web.Dockerfile -t personatree-web:0.1.0 .
# Runtime configuration is environment variables only (docs/DEPLOY.md lists them).
FROM python:3.11.11-slim-bookworm

# torch is pinned to 2.13.0 by the recall extra; the CPU wheel index keeps the image
# free of several GB of CUDA libraries (the web tier embeds queries on the CPU).
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PERSONATREE_DATA_DIR=/data \
    XDG_CACHE_HOME=/opt/cache \
    DJANGO_STATIC_ROOT=/app/static \
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
RUN pip install -c requirements/lock.txt --extra-index-url "${TORCH_INDEX_URL}" ".[recall]" "gunicorn==27.0.1" \
    && python -m serving.warm

# collectstatic imports the production settings, which refuse to start without their
# secrets (a key of 50+ characters): build-time placeholders only, never present at run time
# (tests/deploy/test_static_files.py runs this step). WhiteNoise serves the
# collected files (compressed, content-hashed names) from /app/static under gunicorn.
RUN DJANGO_SECRET_KEY=build-only-placeholder-for-collectstatic-never-used-at-run-time \
    DJANGO_ALLOWED_HOSTS=localhost \
    DATABASE_URL=sqlite:////tmp/build.sqlite3 CELERY_BROKER_URL=memory:// \
    python manage.py collectstatic --noinput \
    && mkdir -p /data /tmp/prometheus-multiproc && chown -R app:app /data /tmp/prometheus-multiproc

USER 10001:10001
EXPOSE 8000
# /healthz is answered before the HTTPS redirect and the ALLOWED_HOSTS check (personatree_site/ops)
# and touches no other service: it fails when the workers hang though the port still accepts.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
# Three gunicorn workers (WEB_CONCURRENCY) in prometheus_client's multiprocess mode: each writes its
# series under PROMETHEUS_MULTIPROC_DIR and /metrics sums them all (personatree_site/ops/gunicorn_conf.py
# empties the directory at start and marks dead workers). No gunicorn access log: it would write raw
# paths, which carry external subject ids. The app logs one line per API request itself
# (personatree.request: route pattern, request id, hashed subject).
ENV PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus-multiproc
CMD ["gunicorn", "personatree_site.wsgi:application", "-c", "python:personatree_site.ops.gunicorn_conf"]
