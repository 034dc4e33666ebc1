# One venv, one install stamp: every target that runs Python depends on $(STAMP).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: install test test-deep lint bench bench-quick bench-compare bench-install conformance simulate kafka-up kafka-down clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[spark,dev]'
	@# the Spark driver's class-data archive: about 2 s off every Spark start (docs/simulate.md)
	$(PY) -m simulator.spark jvm-archive || echo "warning: no JVM class-data archive; Spark starts as before"
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# Deeper hypothesis profile (fuzzing, property tests) and the full conformance run.
test-deep: $(STAMP)
	HYPOTHESIS_PROFILE=deep $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check protocol assignor simulator examples
	$(VENV)/bin/mypy --strict protocol assignor simulator examples

# The benchmark report (docs/bench/README.md): the peers (Faust) come from the `bench` extra,
# installed here; PYTHONHASHSEED is fixed because aiokafka's sticky result depends on it.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_RUN := PYTHONHASHSEED=0 $(PY) tests/bench/run.py

bench-install: $(BENCH_STAMP)

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[spark,dev,bench]'
	touch $(BENCH_STAMP)

# The full report (within 30 minutes); also written to docs/bench/latest.{md,json}.
bench: $(BENCH_STAMP)
	$(BENCH_RUN) --publish $(BENCH_ARGS)

# The reduced grid, a few minutes; results under bench-results/ only.
bench-quick: $(BENCH_STAMP)
	$(BENCH_RUN) --quick $(BENCH_ARGS)

# What moved between two reports and how much of it is the machine (docs/bench/README.md):
# OLD defaults to the published docs/bench/latest.json, NEW to the newest bench-results/ run.
bench-compare: $(STAMP)
	$(PY) tests/bench/compare.py $(if $(OLD),--old $(OLD)) $(if $(NEW),--new $(NEW)) $(COMPARE_ARGS)

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
