#!/usr/bin/env bash
# The wheel as a user gets it: build it once (`make wheel`: the Rust extension and both Spark
# jars, tagged manylinux2014; .ci/wheel_audit.py checks with auditwheel show and the
# extension's symbol table that it needs nothing newer than glibc 2.17), install it with
# pyspark into a clean venv, and run, on a PATH without cargo, rustc, javac or mvn (only java,
# which Spark needs), the demo and .ci/wheel_check.py: a DataFusion query on the Rust scan and
# Spark reads with deletes inside Spark's reader, each compared with DuckDB. So the wheel can
# never ship without a part again.
#   .ci/wheel_check.sh              # needs cargo, a JDK and Maven to build (not the test venv)
# Prints the time of each step. The lake and the venv live in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
step() { echo "wheel_check: $1 ($((SECONDS - start)) s)" >&2; start=$SECONDS; }
start=$SECONDS

rm -f dist/ducklake_datafusion-*.whl
make -s wheel
wheels=(dist/ducklake_datafusion-*.whl)
if ((${#wheels[@]} != 1)); then
    echo "wheel_check: expected one wheel in dist/, found: ${wheels[*]}" >&2
    exit 1
fi
step "built ${wheels[0]} (manylinux2014: auditwheel and its symbols agree)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
# The wheel with pyspark (its [spark] extra), and the reference writer for the demo and the
# comparisons (duckdb 1.5.5 with its DuckLake extension, as the tests pin them).
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-compile \
    "$repo/${wheels[0]}[spark]" duckdb==1.5.5 duckdb-extensions==1.5.5 \
    duckdb-extension-ducklake==1.5.5
step "installed it into a clean venv"

# A PATH of the venv's bin and links to the system's commands, less the toolchains.
mkdir "$work/bin"
for tool in /usr/bin/*; do
    case "${tool##*/}" in
        cargo* | rustc | rustdoc | rustup | rust-* | javac | javadoc | javap | jar | jarsigner | \
            jshell | jlink | jdeps | mvn | mvnDebug | maturin) ;;
        *) ln -s "$tool" "$work/bin/${tool##*/}" ;;
    esac
done
run() {
    (cd "$work" && env -i HOME="$HOME" LANG=C.UTF-8 TMPDIR="$work" \
        PATH="$work/venv/bin:$work/bin" "$work/venv/bin/python" "$@")
}
if run -c 'import shutil, sys; sys.exit(any(shutil.which(t) for t in ("cargo", "rustc", "javac")))'; then :; else
    echo "wheel_check: cargo, rustc or javac is on the check's PATH" >&2
    exit 1
fi
run "$repo/examples/demo.py" >"$work/demo.out"
grep -q "scan plan:" "$work/demo.out" || { cat "$work/demo.out" >&2; exit 1; }
step "ran examples/demo.py from the wheel"
run "$repo/.ci/wheel_check.py" "$work/check"
step "DataFusion and Spark reads of the wheel matched DuckDB"
