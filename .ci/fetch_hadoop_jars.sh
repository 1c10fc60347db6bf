#!/usr/bin/env bash
# Fetch the S3A connector for the installed pyspark into Maven's cache (~/.m2), once:
# hadoop-aws of the Hadoop client that pyspark bundles, with the compile-time dependencies
# Maven resolves from its POM (the AWS SDK bundle that Hadoop release was built against,
# the analytics accelerator of 3.5, ...). A mismatched SDK fails with NoSuchFieldError.
# Prints the jar paths, comma-separated, for spark.jars. Usage: fetch_hadoop_jars.sh PYTHON
set -euo pipefail
python="${1:-python3}"
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
dir="${XDG_CACHE_HOME:-$HOME/.cache}/ducklake-datafusion/s3a-$hadoop"
mkdir -p "$dir"
if [[ -s "$dir/classpath" ]]; then
    ok=1
    IFS=: read -r -a jars <"$dir/classpath" || true  # no newline at the end
    for jar in "${jars[@]}"; do [[ -s "$jar" ]] || ok=0; done
    if ((ok)); then tr ':' ',' <"$dir/classpath"; echo; exit 0; fi
fi
cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>s3a-connector</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId>
      <version>$hadoop</version>
    </dependency>
  </dependencies>
</project>
POM
echo "fetch_hadoop_jars: resolving hadoop-aws $hadoop and its dependencies" >&2
(cd "$dir" && mvn -q -B dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$dir/classpath.new" >&2)
mv "$dir/classpath.new" "$dir/classpath"
tr ':' ',' <"$dir/classpath"
echo
