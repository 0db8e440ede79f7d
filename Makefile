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

.PHONY: install demo test ui check clean

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

test: install
	$(BIN)/python -m pytest -q

check: install
	$(BIN)/dg check defs

ui: install
	mkdir -p $(DAGSTER_HOME) && cp -n dagster.yaml $(DAGSTER_HOME)/dagster.yaml || true
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(UI_PORT)

clean:
	rm -rf $(VENV) data/inbox data/events data/warehouse data/lancedb data/dagster
