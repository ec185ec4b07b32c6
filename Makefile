# Everything runs inside .venv, made on first use from the project's own pyproject.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo check test test-lowest system-deps s3-server lint ruff typecheck docs docs-build bench bench-full bench-anchor clean cluster-start cluster-stop

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/rmqarrow demo

# mypy sees the package as installed: rmqarrow/ with converters/ as rmqarrow/converters.
TYPECHECK := build/typecheck

# Every Python file of the project: linted, and formatted as ruff format writes it.
PY_TREES := rmqarrow converters tests benchmarks examples docs

ruff: $(STAMP)
	$(BIN)/ruff check $(PY_TREES)
	$(BIN)/ruff format --check $(PY_TREES)

typecheck: $(STAMP)
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/rmqarrow
	for f in rmqarrow/*; do ln -s "$(CURDIR)/$$f" $(TYPECHECK)/rmqarrow/; done
	ln -s "$(CURDIR)/converters" $(TYPECHECK)/rmqarrow/converters
	$(BIN)/mypy $(TYPECHECK)/rmqarrow

lint: ruff typecheck

# The documentation site: served with live reload, or built with warnings as errors.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

# What the tests run besides Python, from Debian, installed when missing (as root, or
# through sudo); nothing happens when all are there: Chromium loads the stats report's page,
# zsh and fish run the completion scripts, groff checks the man page.
SYSTEM_DEPS := chromium:chromium zsh:zsh fish:fish groff:groff-base
system-deps:
	@missing=""; for dep in $(SYSTEM_DEPS); do \
		command -v "$${dep%%:*}" >/dev/null || missing="$$missing $${dep#*:}"; done; \
	[ -z "$$missing" ] || { \
		sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing >/dev/null; }

# The real S3 server of the object-storage tests and the Delta benchmark: the Versity S3
# Gateway at one pinned version, built from the Go module proxy into
# ~/.cache/rmqarrow/versitygw/VERSION/ unless it is there (4-6 minutes cold on two
# cores, once a machine); RMQARROW_S3_SERVER=moto skips it and runs moto instead, as does
# a machine without Go (with a warning).
s3-server: $(STAMP)
	$(BIN)/python -m rmqarrow.testing.s3_server build

test: lint docs-build system-deps s3-server
	$(BIN)/python -m pytest

# The fast tier, for every change (a few minutes on two cores): ruff, mypy, and the tests of
# every layer in process, from the golden conformance up to the CLI; not Spark, not the
# real cluster or RocketMQ brokers, not the kill -9, full-disk and packaging tests, not the
# docs' examples, nothing marked slow.  `make test` still runs every test.
CHECK_TESTS := tests/test_golden_conformance.py tests/test_layering.py tests/format \
	tests/kernels tests/index tests/commitlog tests/tiered tests/rocksdb tests/converters/arrow \
	tests/converters/parquet tests/converters/duckdb tests/converters/stats tests/converters/delta tests/store \
	tests/cli tests/verify
check: ruff typecheck
	$(BIN)/python -m pytest -q -m "not spark and not cluster and not rocketmq and not slow" \
		$(CHECK_TESTS)

# The core dependencies at the lowest versions pyproject allows (.ci/lowest.txt), in a venv
# of their own, running the tests of the native format, Arrow, Parquet and DuckDB (no Spark,
# no extras, so not the numba kernels or the plots; not the slow tests): a lower bound that
# no longer holds shows up here, not on a user's machine.  pytest and hypothesis come at the
# dev extra's pins.  Runs are recorded in benchmarks/results/lowest-*.json.
LOWEST_VENV := build/venv-lowest
LOWEST_TESTS := tests/format tests/index tests/converters/arrow tests/converters/parquet \
	tests/converters/duckdb tests/converters/stats tests/test_golden_conformance.py
test-lowest:
	rm -rf $(LOWEST_VENV)
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(LOWEST_VENV)/bin/python -m pip install --quiet -c .ci/lowest.txt -e . \
		$$(grep -oE '"(pytest|hypothesis)==[^"]+"' pyproject.toml | tr -d '"')
	$(LOWEST_VENV)/bin/python -m pip freeze | grep -iE '^(numpy|pyarrow|duckdb|tqdm)=='
	$(LOWEST_VENV)/bin/python -m pytest -p no:cacheprovider -m "not spark and not slow" \
		-k "not numba and not plot" $(LOWEST_TESTS)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

bench-full: $(STAMP)
	$(BIN)/python benchmarks/run.py --full

# RocketMQ's own IndexFile side by side with rmqarrow (needs a JDK 17 and Maven); see
# benchmarks/anchor/README.md.  By default the newest release's rocketmq-store jar (or
# RELEASE's), fetched by Maven into a cache; ROCKETMQ= compiles it from a source checkout.
#   make bench-anchor [RELEASE=X.Y.Z | ROCKETMQ=/path/to/rocketmq] [ARGS="--n 4000000 --repeats 3"]
bench-anchor: $(STAMP)
	$(BIN)/python benchmarks/bench_anchor.py $(if $(RELEASE),--release "$(RELEASE)") \
		$(if $(ROCKETMQ),--rocketmq "$(ROCKETMQ)") $(ARGS)

# A Spark standalone test cluster on 127.0.0.1 (pip pyspark's spark-daemon.sh), started by the
# cluster tests' own launcher; see docs/spark.md.
CLUSTER_DIR ?= build/spark-cluster
cluster-start: $(STAMP)
	$(BIN)/python tests/cluster/launcher.py start --dir $(CLUSTER_DIR)

cluster-stop: $(STAMP)
	$(BIN)/python tests/cluster/launcher.py stop --dir $(CLUSTER_DIR)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
