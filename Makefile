# Agent memory — `make demo` and `make test` work from a bare machine with Python 3.11.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export GX_ANALYTICS_ENABLED := false
export MEMORY_DATA_ROOT ?= data
export DAGSTER_HOME ?= $(abspath $(MEMORY_DATA_ROOT))/dagster
UI_PORT ?= 3000

.PHONY: install demo test test-all docs ui check clean deploy-local debian-packages node-tools

install: $(STAMP)

# torch first, from its CPU-only wheel, so sentence-transformers does not pull CUDA.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[dev]"
	$(BIN)/memory models prepare   # the embedding model exported to ONNX Runtime and checked, once per machine
	touch $(STAMP)

demo: install
	@start=$$(date +%s); \
	$(BIN)/memory ingest data/samples/*.jsonl data/samples/*.json && \
	$(BIN)/memory materialize && \
	$(BIN)/memory stats && \
	echo && echo "--- what the agent gets injected for: 'When is my WRX oil change due, and what did I say about meetings?'" && \
	$(BIN)/memory inject --context "When is my WRX oil change due, and what did I say about meetings?" && \
	echo && echo "--- and for: 'How should I format and commit code in the billing service?'" && \
	$(BIN)/memory inject --context "How should I format and commit code in the billing service?" && \
	echo && echo "demo finished in $$(( $$(date +%s) - start )) s"

# The fast loop: every test but the slow ones (real servers and subprocesses, kill -9, the
# deployment, object storage, benches), on both cores; one test file per worker, so a
# module's fixtures are built once.
PYTEST := $(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=15

test: install
	$(PYTEST) -m "not slow"

# Everything, the slow tests included: what CI runs. PostgreSQL, Redis and Chromium first (as root).
test-all: install debian-packages node-tools
	$(PYTEST)

# The official MCP Inspector CLI and the Node.js 22 it needs, and the TypeScript client's
# tools (clients/typescript), from the npm registry (their package-lock.json files); the
# client is built. The slow loop runs both against a real `memory serve`.
NODE_TOOLS := clients/inspector/node_modules/.installed
node-tools: $(NODE_TOOLS)

$(NODE_TOOLS): clients/inspector/package-lock.json clients/typescript/package-lock.json $(wildcard clients/typescript/src/*.ts)
	cd clients/inspector && npm install --no-audit --no-fund --loglevel=error   # the lock's versions (npm ci trips on an optional Windows-only package)
	cd clients/typescript && npm install --no-audit --no-fund --loglevel=error && npm run --silent build
	touch $@

# The docs site (docs/, mkdocs.yml): --strict, so a broken link or a page missing from the nav fails.
docs: install
	$(BIN)/mkdocs build --strict --site-dir site

check: install
	$(BIN)/dg check defs

ui: install
	mkdir -p $(DAGSTER_HOME) && cp -n dagster.yaml $(DAGSTER_HOME)/dagster.yaml || true
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(UI_PORT)

# The Dagster deployment on this machine (memory_assets/deploy/local.py): PostgreSQL, Redis, a
# Celery worker, the code server, the daemon and the UI on $(UI_PORT), each its own process,
# state and logs under $(MEMORY_DATA_ROOT)/deploy. Runs in the foreground; Ctrl-C stops them all.
deploy-local: install debian-packages
	$(BIN)/python -m memory_assets.deploy.local --data-root $(MEMORY_DATA_ROOT) --ui-port $(UI_PORT)

# The servers the deployment (and its tests) start from Debian's packages, installed once (as root).
debian-packages:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v redis-server >/dev/null \
	    || ! command -v chromium >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server >/dev/null \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	fi

clean:
	rm -rf $(VENV) data/inbox data/events data/warehouse data/lancedb data/dagster data/deploy
