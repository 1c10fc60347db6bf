# Developer and CI entry points. Only needs python3 (>= 3.10, with venv) and PyPI.
#   make test PYTEST_ARGS="-k duckdb-local -x"     # PostgreSQL cells skip unless DUCKLAKE_TEST_PG
#   .ci/run                                        # CI: starts PostgreSQL, then make test
# make test also installs the object-store emulators (fake-gcs-server, Azurite, MinIO) into
# ~/.cache/ducklake-datafusion/tools when go / npm are there; otherwise their tests skip.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: venv emulators test demo bench lint

venv: $(VENV)/.installed

# A current pip builds pyspark as a wheel (Debian 12's pip 23.0 falls back to setup.py install).
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip

# Reinstall only when the dependencies may have changed.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

# A no-op once installed (each tool's version is stamped in the cache).
emulators:
	.ci/install_emulators.sh --if-possible

test: venv emulators
	$(PY) -m pytest -q $(PYTEST_ARGS)

demo: venv
	$(PY) examples/demo.py

bench: venv
	$(PY) bench/scan.py

lint: venv
	$(VENV)/bin/ruff check .
