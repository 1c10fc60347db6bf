"""The package's jar as a Maven artifact (``jvm/pom.xml``): ``mvn install`` puts
``io.ducklake_datafusion:ducklake-spark_<scala>:<version>`` into the local repository, and a
Spark session started with ``spark.jars.packages`` naming it resolves it there (Spark's Ivy
reads ``~/.m2/repository`` as its "local-m2-cache", as it would read Maven Central) and reads
a lake through the jar's catalog, compared with DuckDB.

The session runs in its own process (``support/spark_packages_job.py``). Without Maven (or,
outside CI, without the network a cold ``~/.m2`` needs) the test skips; in CI it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import support
from support.lakes import LakeSpec, assert_same_rows, deleting_history

pytest.importorskip("pyspark")

from ducklake_datafusion.errors import InvalidOptionError, MissingDependencyError
from ducklake_datafusion.spark import spark_jar
from ducklake_datafusion.spark._core._versions import pyspark_at_least
from ducklake_datafusion.spark.parquet import _deleted_rows

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(support.__file__).with_name("spark_packages_job.py")
GROUP = "io.ducklake_datafusion"
_POM = "{http://maven.apache.org/POM/4.0.0}"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _package_version() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    return re.search(r'^version = "([^"]+)"$', text, re.MULTILINE).group(1)


def _pom_coordinates(pom: Path) -> tuple[str, str, str]:
    """(groupId, artifactId, version) of a module's POM (the group and version may be its
    parent's)."""
    root = ET.parse(pom).getroot()
    parent = root.find(f"{_POM}parent")

    def field(name: str) -> str:
        node = root.find(f"{_POM}{name}")
        return (node if node is not None else parent.find(f"{_POM}{name}")).text

    return field("groupId"), field("artifactId"), field("version")


def test_the_jars_coordinates_carry_the_package_version():
    """Both artifacts, and their parent, are versioned as the Python package."""
    version = _package_version()
    assert _pom_coordinates(ROOT / "jvm" / "pom.xml")[::2] == (GROUP, version)
    for scala in ("2.12", "2.13"):
        pom = ROOT / "jvm" / f"scala-{scala}" / "pom.xml"
        assert _pom_coordinates(pom) == (GROUP, f"ducklake-spark_{scala}", version)


@pytest.mark.parametrize("scala", ["2.12", "2.13"])
def test_spark_jar_picks_the_jar_of_a_scala_version(scala):
    """The wheel carries both jars (``make jars`` / ``make wheel`` put them into the package,
    .ci/run does so before the tests); ``spark_jar(scala=...)`` names either."""
    try:
        jar = Path(spark_jar(scala=scala))
    except MissingDependencyError:
        if _in_ci():
            raise
        pytest.skip(f"the Scala {scala} jar is not built here (make jars)")
    assert jar.name == f"ducklake-spark_{scala}.jar" and jar.parent == _deleted_rows._JARS
    default = "2.13" if pyspark_at_least(4, 0) else "2.12"
    if scala == default:
        assert spark_jar() == str(jar)


def test_spark_jar_of_an_unknown_scala_version_says_which_exist():
    with pytest.raises(InvalidOptionError, match=r"scala='3'.*2\.12 and 2\.13"):
        spark_jar(scala="3")


def test_a_missing_jar_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(_deleted_rows, "_JARS", tmp_path)  # an installation without jars
    with pytest.raises(MissingDependencyError) as raised:
        spark_jar(scala="2.12")
    text = str(raised.value)
    assert "Scala 2.12" in text and str(tmp_path / "ducklake-spark_2.12.jar") in text
    assert "wheel" in text and "make jars" in text and "jvm/build.sh" in text


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> str:
    """``mvn install`` of a copy of ``jvm/`` (the checkout's target/ untouched); the
    coordinates of the artifact for the running pyspark's Scala."""
    if shutil.which("mvn") is None or shutil.which("java") is None:
        if _in_ci():
            pytest.fail("CI needs Maven and a JDK to install the package's jar")
        pytest.skip("no Maven (mvn) or no JDK to build the package's jar")
    work = tmp_path_factory.mktemp("maven") / "jvm"
    shutil.copytree(ROOT / "jvm", work, ignore=shutil.ignore_patterns("target"))
    done = subprocess.run(
        ["mvn", "-q", "-B", "install"], cwd=work, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-3000:]
        if not _in_ci() and re.search(r"Could not (transfer|resolve)|Unknown host", output):
            pytest.skip(f"mvn install needs the network for a cold ~/.m2: {output[-500:]}")
        pytest.fail(f"mvn install failed:\n{output}")
    scala = "2.13" if pyspark_at_least(4, 0) else "2.12"
    return f"{GROUP}:ducklake-spark_{scala}:{_package_version()}"


@pytest.mark.slow
def test_spark_jars_packages_resolves_the_installed_jar(installed, make_lake, tmp_path):
    lake = make_lake(LakeSpec("duckdb", "local"), inline_limit=3)
    deleting_history(lake)
    out = tmp_path / "out"
    out.mkdir()
    spec = {
        "package": installed,
        "ivy": str(tmp_path / "ivy"),
        "metadata": lake.reader_args()["metadata"],
        "sql": "SELECT * FROM lake.main.t",
        "out": str(out),
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    job = [sys.executable, str(JOB), str(tmp_path / "spec.json")]
    done = subprocess.run(job, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    _, artifact, version = installed.split(":")
    name = f"{GROUP}_{artifact}-{version}.jar"  # as Ivy names a resolved jar
    # Ivy resolved it from ~/.m2 into this session's fresh Ivy home, and Spark loaded it.
    assert (tmp_path / "ivy" / "jars" / name).is_file(), sorted((tmp_path / "ivy").rglob("*.jar"))
    assert (out / "jars.txt").read_text().endswith("/" + name)
    plan = (out / "plan.txt").read_text()
    assert "BatchScan" in plan and "DuckLake" in plan, plan
    assert "read exactly by the planner" not in plan, plan  # deletes in Spark's reader
    expected = lake.reference("SELECT * FROM lake.main.t")
    assert_same_rows(pq.read_table(out / "answer.parquet"), expected)
