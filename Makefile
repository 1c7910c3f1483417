# Two commands do all set-up on a fresh machine with Python >= 3.11:
#   make demo   creates .venv, installs tether, runs the zero-cost quickstart
#   make test   creates .venv, installs the dev extras, runs ruff, mypy and every test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint unit bench bench-policy clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/python examples/quickstart.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests examples bench
	$(BIN)/mypy

unit: $(VENV)/.installed-dev
	$(BIN)/pytest

test: lint unit

bench: $(VENV)/.installed
	$(BIN)/python bench/overhead.py

bench-policy: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/policy.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
