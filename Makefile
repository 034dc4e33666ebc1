# One venv, one install stamp: every target that runs Python depends on $(STAMP).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: install test test-deep lint bench conformance simulate kafka-up kafka-down clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[spark,dev]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# Deeper hypothesis profile (fuzzing, property tests) and the full conformance run.
test-deep: $(STAMP)
	HYPOTHESIS_PROFILE=deep $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check protocol assignor simulator examples
	$(VENV)/bin/mypy --strict protocol assignor simulator examples

bench: $(STAMP)
	$(PY) tests/bench/run.py

conformance: $(STAMP)
	CONFORMANCE_SCENARIOS=100000 $(PY) -m pytest tests/conformance -m conformance $(PYTEST_ARGS)

# The default mix on local Spark; ends with the report's path and a headline table.
# SIMULATE_ARGS adds options (--master spark://..., --scenarios N, --out DIR).
simulate: $(STAMP)
	$(PY) -m simulator sweep --mix default --out out/simulate $(SIMULATE_ARGS)

kafka-up: $(STAMP)
	$(PY) -m tests.support.kafka up

kafka-down: $(STAMP)
	$(PY) -m tests.support.kafka down

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
