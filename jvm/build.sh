#!/usr/bin/env bash
# Build the package's Spark jar for the pyspark of PYTHON (default .venv/bin/python):
#   jvm/build.sh [PYTHON]
# The developers' fast path (~2 s, offline): the JDK's javac against the very jars that
# pyspark ships, one jar per Scala binary version (Spark 3.5: 2.12, Spark 4.x: 2.13), into
# ducklake_datafusion/spark/jars/ducklake-spark_<scala>.jar, where `spark_jar()` finds it.
# The released jars (the wheel's, and Maven's ducklake-spark_<scala>) are built by Maven from
# the same sources: jvm/pom.xml.
# A no-op when the jar is newer than its sources, or when PYTHON has no pyspark; without a
# JDK it says so and builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-.venv/bin/python}"
spark_jars="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null)" || exit 0
scala="$(ls "$spark_jars" | sed -n 's/^scala-library-\([0-9]*\.[0-9]*\)\..*\.jar$/\1/p' | head -1)"
if [[ -z "$scala" ]]; then
    echo "jvm/build.sh: no scala-library jar in $spark_jars" >&2
    exit 1
fi
out="ducklake_datafusion/spark/jars/ducklake-spark_$scala.jar"
# The shared sources, and the one class whose source differs by Scala version.
sources=(jvm/src/main/java/io/ducklake_datafusion/spark/*.java
    "jvm/src/scala-$scala/java/io/ducklake_datafusion/spark/"*.java)
if [[ -f "$out" ]] && [[ -z "$(find "${sources[@]}" jvm/build.sh -newer "$out")" ]]; then
    exit 0
fi
if ! command -v javac >/dev/null; then
    # Not fatal: without the jar, Spark applies deletes by its mask join (and .ci/run
    # installs a JDK first).
    echo "jvm/build.sh: no javac (a JDK): $out not built; Spark will apply deletes by a join" >&2
    exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/classes" "$(dirname "$out")"
cp "${sources[@]}" "$work/src/"
release=17  # Spark 4 runs on Java 17+, Spark 3.5 on Java 8+
if [[ "$scala" == 2.12 ]]; then release=8; fi
javac -nowarn -Xlint:-options --release "$release" -cp "$spark_jars/*" -d "$work/classes" "$work/src/"*.java
jar cf "$work/out.jar" -C "$work/classes" .
mv "$work/out.jar" "$out"
echo "jvm/build.sh: built $out" >&2
