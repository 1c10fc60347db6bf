# Developer and CI entry points. Needs python3 (>= 3.10, with venv), cargo/rustc (the Rust
# extension, rust/), a JDK's javac (the Spark jar, jvm/; and Maven for make jars / wheel)
# and PyPI/crates.io. Cargo's target directory lives outside the clone, so every later build
# on the machine is incremental.
#   make test PYTEST_ARGS="-k duckdb-local -x"     # PostgreSQL cells skip unless DUCKLAKE_TEST_PG
#                                                  # (MySQL cells: DUCKLAKE_TEST_MYSQL)
#   .ci/run                                        # CI: starts PostgreSQL, then make test
# make test also installs the object-store emulators (fake-gcs-server, Azurite, MinIO) into
# ~/.cache/ducklake-datafusion/tools when go / npm are there; otherwise their tests skip.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# Test processes (pytest-xdist), each test file on one of them so its fixtures run once. The
# suite is mostly single-threaded Python and DuckDB: two take it from 35 to 25 minutes on
# 2 cores. PYTEST_WORKERS=0 runs it in this process (for pdb).
PYTEST_WORKERS ?= 2
export CARGO_TARGET_DIR ?= $(HOME)/.cache/ducklake-datafusion/cargo-target
RUST_SOURCES := $(shell find rust/src -name '*.rs') rust/build.rs rust/Cargo.toml rust/Cargo.lock
JVM_SOURCES := $(wildcard jvm/src/*/java/io/ducklake_datafusion/spark/*.java) jvm/build.sh
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml | head -1)

.PHONY: venv emulators test test-v11 rust-test demo bench lint rust-lint docs jars wheel wheel-all \
	sdist

venv: $(VENV)/.built

# The wheel's tools (maturin, zig, auditwheel; pinned in .ci/wheel.txt) in a venv of their own,
# so no build needs a C cross toolchain from the system (every Rust build uses them, below).
WHEEL_VENV ?= $(HOME)/.cache/ducklake-datafusion/wheel-venv
$(WHEEL_VENV)/.installed: .ci/wheel.txt
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q --disable-pip-version-check -r .ci/wheel.txt
	touch $@

# With SHARED_VENV=1 (.ci/run), a fresh clone's .venv is a link to a venv under ~/.cache, one
# per Python and dependency set (pyproject.toml's hash): the clone then installs only the
# package itself into it, not its 1.8 GB of dependencies again (40 s of pip on 2 cores).
SHARED_VENV ?=
VENV_KEY = $(shell ($(PYTHON) --version; cat pyproject.toml) | sha256sum | cut -c1-12)
VENV_HOME = $(HOME)/.cache/ducklake-datafusion/test-venv-$(VENV_KEY)

# A current pip builds pyspark as a wheel (Debian 12's pip 23.0 falls back to setup.py install).
$(PY):
	if [ -n "$(SHARED_VENV)" ] && [ ! -e $(VENV) ]; then \
		[ -x $(VENV_HOME)/bin/python ] || $(PYTHON) -m venv $(VENV_HOME); \
		ln -s $(VENV_HOME) $(VENV); \
	else \
		$(PYTHON) -m venv $(VENV); \
	fi
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip

# One build of the Rust extension serves every consumer: the editable install, the wheel
# and the Rust unit tests compile DataFusion's crates once per machine, all with the wheel's
# toolchain (maturin with zig for glibc 2.17, an explicit --target, the wheel venv's maturin
# and python) into one target directory. .ci/zig-cargo/cargo, first on maturin's PATH,
# writes down the environment maturin gives cargo, for make rust-test (.ci/zig_env.sh).
HOST_TARGET := $(shell uname -m)-unknown-linux-gnu
ZIG_MATURIN = PATH="$(CURDIR)/.ci/zig-cargo:$(WHEEL_VENV)/bin:$$PATH" $(WHEEL_VENV)/bin/maturin
ZIG_FLAGS = --zig --compatibility manylinux2014 --interpreter $(WHEEL_VENV)/bin/python
# (the built wheel in the clone: two clones building at once share the target directory,
# under cargo's lock, but must not remove each other's wheel)
EDITABLE_OUT := $(CURDIR)/$(VENV)/.editable-wheel

# The editable wheel (the package's Python code where it is, the extension built into it),
# as pip's editable install builds it but with the wheel's toolchain.
define build_editable
	rm -rf $(EDITABLE_OUT)
	$(ZIG_MATURIN) pep517 build-wheel --editable -q $(ZIG_FLAGS) --target $(HOST_TARGET) \
		--out $(EDITABLE_OUT)
endef

# Reinstall only when the dependencies may have changed (this also builds the extension).
$(VENV)/.installed: pyproject.toml $(WHEEL_VENV)/.installed | $(PY)
	$(build_editable)
	$(PY) -m pip install -q --disable-pip-version-check "$$(ls $(EDITABLE_OUT)/*.whl)[test]"
	touch $@

# Rebuild the extension (incrementally) when its sources changed, and the Spark jar for the
# venv's pyspark (jvm/build.sh: javac against pyspark's own jars, ~2 s).
$(VENV)/.built: $(VENV)/.installed $(RUST_SOURCES) $(JVM_SOURCES)
	$(build_editable)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
		$(EDITABLE_OUT)/*.whl
	jvm/build.sh $(PY)
	touch $@

# Both Spark jars (Scala 2.12 and 2.13) as Maven builds them (jvm/pom.xml: the released
# artifacts, also `mvn install`ed for spark.jars.packages), into the package for the wheel.
# Maven's package runs the jar's unit tests too (jvm/src/test/java, JUnit 5).
# Needs a JDK and Maven; ~35 s with a cold ~/.m2 (~170 MB of Spark's jars), ~7 s warm.
jars:
	cd jvm && mvn -q -B package
	mkdir -p ducklake_datafusion/spark/jars
	for s in 2.12 2.13; do cp jvm/scala-$$s/target/ducklake-spark_$$s-$(VERSION).jar \
		ducklake_datafusion/spark/jars/ducklake-spark_$$s.jar; done

# The abi3 wheel (the Rust extension and both jars) into dist/, tagged manylinux2014 (glibc
# 2.17): zig compiles the C dependencies (zstd, liblzma, ring) against glibc 2.17's headers and
# links against its symbol versions, where the system's gcc and glibc would tag it with the
# build machine's glibc (2.34+ for pthread alone), which older Linuxes' pip refuses. For this
# machine's target the crates are the editable install's (the same flags, the same
# CARGO_TARGET_DIR/<target>/release): after make venv, cargo has nothing left to compile.
# .ci/wheel_audit.py checks the tag.
# WHEEL_TARGETS: the Rust targets to build, this machine's architecture by default.
WHEEL_TARGETS ?= $(shell uname -m)-unknown-linux-gnu
WHEEL_NAME = dist/ducklake_datafusion-$(VERSION)-cp310-abi3-manylinux2014_$(1).manylinux_2_17_$(1).whl
wheel: jars $(WHEEL_VENV)/.installed
	for t in $(WHEEL_TARGETS); do \
		$(ZIG_MATURIN) build -q --release $(ZIG_FLAGS) --target $$t --out dist || exit 1; \
	done
	$(WHEEL_VENV)/bin/python .ci/wheel_audit.py \
		$(foreach t,$(WHEEL_TARGETS),$(call WHEEL_NAME,$(firstword $(subst -, ,$(t)))))

# Both architectures' wheels (x86_64 and aarch64), the other one cross-compiled by zig with
# rustup's standard library for that target (added here). The aarch64 wheel is only checked
# (auditwheel and its symbol table), never run, on an x86_64 machine. A cold build per target
# (README: Install).
wheel-all:
	if command -v rustup >/dev/null; then \
		rustup target add x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; fi
	$(MAKE) wheel WHEEL_TARGETS="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu"

# The sdist (Rust and Java sources, both jars prebuilt); `pip wheel` on it builds the wheel.
sdist: jars $(WHEEL_VENV)/.installed
	$(WHEEL_VENV)/bin/maturin sdist --out dist

# A no-op once installed (each tool's version is stamped in the cache).
emulators:
	.ci/install_emulators.sh --if-possible

test: venv emulators
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The test files that exercise the catalog itself (refresh, cuts, memo, faults, time travel,
# metadata tables, the change feed), with our reader on every lake's catalog migrated to
# DuckLake 1.1; every read test checks the 1.1 form anyway (tests/support/readcheck.py).
# Without the Spark replay: the main suite's replays read every state's 1.1 copy through
# Spark already, and Spark's planner reads a 1.1 catalog with the code DataFusion's reads
# check here (the pass took 3 minutes with it).
V11_TESTS := tests/catalog/test_incremental.py tests/catalog/test_file_cut.py \
	tests/catalog/test_metadata_memo.py tests/catalog/test_catalog_faults.py \
	tests/catalog/test_time_travel.py tests/catalog/test_table_metadata.py \
	tests/test_errors.py tests/test_changes.py
test-v11: venv
	DUCKLAKE_TEST_FORMAT=1.1 DUCKLAKE_TEST_SPARK_REPLAY=0 $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(V11_TESTS)

# The Rust unit tests (rust/Cargo.toml says why PYO3_PYTHON), in the environment of the
# editable install's build (.ci/zig_env.sh): DataFusion's crates come from it; pyo3 and
# our crate build once more (they link libpython here).
rust-test: venv
	cd rust && PYO3_PYTHON="$(CURDIR)/$(PY)" ../.ci/zig_env.sh \
		cargo test -q --release --lib --target $(HOST_TARGET)

demo: venv
	$(PY) examples/demo.py

bench: venv
	$(PY) bench/scan.py

# The documentation site (mkdocs.yml, docs/), built strictly: a broken link or anchor, or a
# code reference to a module, function or file that no longer exists, fails it. mkdocs and
# its dependencies (pinned in .ci/docs.txt) live in a venv of their own, not the test venv.
DOCS_VENV ?= $(HOME)/.cache/ducklake-datafusion/docs-venv
$(DOCS_VENV)/.installed: .ci/docs.txt
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install -q --disable-pip-version-check -r .ci/docs.txt
	touch $@

# (Never --quiet: it drops the warnings before --strict counts them, and the build passes.)
docs: $(DOCS_VENV)/.installed
	$(DOCS_VENV)/bin/mkdocs build --strict

lint: venv rust-lint
	$(VENV)/bin/ruff check .

rust-lint:
	cd rust && cargo fmt --check && cargo clippy --release -- -D warnings
