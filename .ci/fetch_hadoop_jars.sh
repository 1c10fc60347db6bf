#!/usr/bin/env bash
# Fetch Spark's object-store connectors for the installed pyspark into Maven's cache (~/.m2),
# once, and print their jar paths, comma-separated, for spark.jars:
# * S3A: hadoop-aws of the Hadoop client that pyspark bundles, with the compile-time
#   dependencies Maven resolves from its POM (the AWS SDK bundle that Hadoop release was
#   built against, the analytics accelerator of 3.5, ...). A mismatched SDK fails with
#   NoSuchFieldError;
# * Azure: hadoop-azure of the same Hadoop release (ABFS), with its dependencies;
# * GCS: Google's gcs-connector, the shaded build (its dependencies relocated inside).
# Usage: fetch_hadoop_jars.sh PYTHON
set -euo pipefail
python="${1:-python3}"
gcs_connector="${DUCKLAKE_GCS_CONNECTOR_VERSION:-4.0.4}"  # built for Java 17 and Hadoop 3.4+
hadoop=$("$python" - <<'PY'
import glob, os, re, pyspark
jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "hadoop-client-api-*.jar"))
print(re.search(r"hadoop-client-api-(.+)\.jar$", jars[0]).group(1) if jars else "")
PY
)
if [[ -z "$hadoop" ]]; then
    echo "fetch_hadoop_jars: pyspark bundles no hadoop-client-api jar" >&2
    exit 1
fi
dir="${XDG_CACHE_HOME:-$HOME/.cache}/ducklake-datafusion/hadoop-connectors-$hadoop"
mkdir -p "$dir"
pom=$(cat <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>hadoop-connectors</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId>
      <version>$hadoop</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-azure</artifactId>
      <version>$hadoop</version>
    </dependency>
    <dependency>
      <groupId>com.google.cloud.bigdataoss</groupId><artifactId>gcs-connector</artifactId>
      <version>$gcs_connector</version><classifier>shaded</classifier>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
POM
)
if [[ -s "$dir/classpath" && "$(cat "$dir/pom.xml" 2>/dev/null)" == "$pom" ]]; then
    ok=1
    IFS=: read -r -a jars <"$dir/classpath" || true  # no newline at the end
    for jar in "${jars[@]}"; do [[ -s "$jar" ]] || ok=0; done
    if ((ok)); then tr ':' ',' <"$dir/classpath"; echo; exit 0; fi
fi
printf '%s\n' "$pom" >"$dir/pom.xml"
echo "fetch_hadoop_jars: resolving hadoop-aws and hadoop-azure $hadoop," \
    "gcs-connector $gcs_connector and their dependencies" >&2
(cd "$dir" && mvn -q -B dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$dir/classpath.new" >&2)
mv "$dir/classpath.new" "$dir/classpath"
tr ':' ',' <"$dir/classpath"
echo
