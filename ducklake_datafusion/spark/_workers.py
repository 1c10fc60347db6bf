"""Check once per Spark application that its Python workers can run our reader.

A PySpark job whose workers run another interpreter than the driver (a cluster's system
Python, another virtual environment) fails deep inside a Spark stack trace with
``ModuleNotFoundError: No module named 'ducklake_datafusion'`` when the first scan runs.
:func:`check_workers` runs one tiny task when the format is registered and turns that into
a clear error saying what to do.

The probe is compiled from source at run time, so cloudpickle ships it by value: the
worker needs nothing of ours to run it, only to import the package it checks for.
"""

from __future__ import annotations

import sys
import threading

from .. import __version__
from ..errors import MissingDependencyError
from ._core import is_connect

__all__ = ["check_workers", "explain_probe"]

_PROBE = """
def probe(_rows):
    import sys
    try:
        import ducklake_datafusion
        return [(True, getattr(ducklake_datafusion, "__version__", "?"), sys.executable)]
    except Exception as exc:
        return [(False, f"{type(exc).__name__}: {exc}", sys.executable)]
"""
# The same probe over Arrow batches, for Spark Connect (also pickled by value).
_ARROW_PROBE = """
def arrow_probe(batches):
    import pyarrow as pa
    for _ in batches:
        pass
    (ok, detail, executable), = probe([])
    yield pa.RecordBatch.from_pydict({"ok": [ok], "detail": [detail], "executable": [executable]})
"""
_checked: set[str] = set()
_lock = threading.Lock()

_HOW = (
    "Make the workers run an interpreter that has ducklake-datafusion installed: set "
    "PYSPARK_PYTHON (and spark.pyspark.python) to it, install the package on every node, or "
    "ship it with the job (spark.submit.pyFiles with a wheel or zip of the package, or a "
    "packed environment through spark.archives). Pass check_workers=False to skip this check"
)


def _probe():
    namespace: dict = {"__name__": "__main__"}  # pickled by value by cloudpickle
    exec(compile(_PROBE, "<ducklake worker probe>", "exec"), namespace)  # noqa: S102 - a constant
    return namespace["probe"]


def check_workers(spark, *, needed_for: str | None = None) -> None:
    """Raise :class:`MissingDependencyError` if Spark's Python workers cannot import the
    package or run another version of it; checked once per Spark application.

    Args:
        needed_for: what needs the workers, to say so in the message.
    """
    try:
        _check(spark)
    except MissingDependencyError as exc:
        if needed_for is None:
            raise
        raise MissingDependencyError(
            f"{needed_for} needs ducklake-datafusion on Spark's Python workers: {exc}"
        ) from exc


def _check(spark) -> None:
    connect = is_connect(spark)
    key = spark.conf.get("spark.app.id", None) if connect else spark.sparkContext.applicationId
    with _lock:
        if key is not None and key in _checked:
            return
    try:
        if connect:  # no SparkContext: the same probe as an Arrow map over one row
            result = _run_on_connect(spark)
        else:
            result = spark.sparkContext.parallelize([0], 1).mapPartitions(_probe()).collect()
    except Exception as exc:
        raise MissingDependencyError(
            f"Spark's Python workers failed to run a check of ducklake-datafusion "
            f"({type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}). {_HOW}"
        ) from exc
    explain_probe(result)
    if key is not None:
        with _lock:
            _checked.add(key)


def _run_on_connect(spark) -> list[tuple[bool, str, str]]:
    """The probe on a Spark Connect server's Python workers (``mapInArrow``)."""
    probe = _probe()
    namespace: dict = {"__name__": "__main__", "probe": probe}
    exec(compile(_ARROW_PROBE, "<ducklake worker probe>", "exec"), namespace)  # noqa: S102
    rows = spark.range(1, numPartitions=1).mapInArrow(
        namespace["arrow_probe"], "ok boolean, detail string, executable string"
    )
    return [(r.ok, r.detail, r.executable) for r in rows.collect()]


def explain_probe(result: list[tuple[bool, str, str]]) -> None:
    """Turn the probe's answer into an error when it shows a problem."""
    ok, detail, executable = result[0]
    if not ok:
        raise MissingDependencyError(
            f"Spark's Python workers ({executable}) cannot import ducklake-datafusion "
            f"({detail}); the driver runs {sys.executable}. {_HOW}"
        )
    if detail != __version__:
        raise MissingDependencyError(
            f"Spark's Python workers ({executable}) run ducklake-datafusion {detail} but the "
            f"driver runs {__version__}; scan plans made by one version are not read by "
            f"another. Install the same version on the workers. {_HOW}"
        )
