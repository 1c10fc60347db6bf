"""The JVM <-> planner protocol: the jar's declaration is the planner's, both sides check
every message against it, and a jar refuses a planner of another protocol version."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import pytest

from ducklake_datafusion.errors import InternalError, InvalidOptionError
from ducklake_datafusion.spark.planner import Planner
from ducklake_datafusion.spark.planner._protocol import (
    MESSAGES,
    PROTOCOL_VERSION,
    check_answer,
    describe,
)


def test_the_jar_declares_the_planners_protocol(spark, spark_package_jar):
    if spark_package_jar is None:
        pytest.skip("the package's Spark jar is not built (jvm/build.sh)")
    protocol = spark._jvm.io.ducklake_datafusion.spark.Protocol
    assert json.loads(protocol.describe()) == describe()


def test_a_request_not_as_declared_is_refused_naming_its_field(make_lake):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    args = lake.reader_args()
    options = {"metadata": args["metadata"], "data_path": args.get("data_path")}
    planner = Planner()
    planner.handle({"op": "open", "options": {k: str(v) for k, v in options.items() if v}})
    try:
        cases = {
            "no_such_op": ({"op": "no_such_op"}, "no request 'no_such_op'"),
            "missing": ({"op": "table", "namespace": "main"}, "lacks its field 'name'"),
            "kind": (
                {"op": "table", "namespace": "main", "name": "t", "snapshot": "1"},
                "field 'snapshot': a string is not of kind integer",
            ),
            # a value is never repeated (an option may be a secret): only its JSON type
            "secret": (
                {"op": "open", "options": {"metadata": "m", "secret_access_key": 9876}},
                "field 'options': an object of a string, an integer is not of kind {string}",
            ),
            "extra": (
                {"op": "tables", "namespace": "main", "nmespace": "x"},
                "undeclared field(s) ['nmespace']",
            ),
            "nested": (
                {"op": "write_commit", "target": {"kind": "append"}, "files": []},
                "WriteTarget lacks its field 'namespace'",
            ),
        }
        for request, expected in cases.values():
            with pytest.raises(InvalidOptionError, match="protocol") as caught:
                planner.handle(request)
            assert expected in str(caught.value) and "9876" not in str(caught.value)
        header, _ = planner.handle({"op": "table", "namespace": "main", "name": "t"})
        assert header["name"] == "t"
    finally:
        planner.close()


def test_an_answer_not_as_declared_is_the_planners_bug():
    table = MESSAGES["table"]
    with pytest.raises(InternalError, match="'table' lacks its field 'namespace'"):
        check_answer(table, {"name": "t"})
    with pytest.raises(InternalError, match="item 1: an integer is not of kind string"):
        check_answer(MESSAGES["tables"], {"tables": ["a", 2]})


def test_a_planner_of_another_protocol_is_refused_by_name(spark, make_lake, catalog, tmp_path):
    lake = make_lake()
    lake.sql("CREATE TABLE lake.main.t (k BIGINT)")
    planner = tmp_path / "old_planner.py"
    planner.write_text(
        textwrap.dedent(
            f"""
            import sys
            from ducklake_datafusion.spark.planner import _server
            _server.PROTOCOL_VERSION = {PROTOCOL_VERSION - 1}
            _server.serve(sys.stdin.buffer, sys.stdout.buffer)
            """
        )
    )
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{planner}"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    name = catalog(lake, python=str(python))
    with pytest.raises(Exception) as caught:  # Spark's or py4j's class, by release
        spark.sql(f"SHOW TABLES IN {name}.main").collect()
    text = str(caught.value)
    assert "MissingDependencyError" in text
    assert f"protocol {PROTOCOL_VERSION - 1}" in text and f"protocol {PROTOCOL_VERSION}" in text
    assert "spark_jar()" in text and os.fspath(python) in text


def test_a_request_carries_its_blobs_and_a_change_checks_its_deleted_rows():
    """A request's blobs follow its JSON frame (``_frames``); a row-level change's deleted
    rows are three int64 columns, -1 marking a row inlined in the catalog, and a blob of
    the wrong size or a row with a file but no position is refused."""
    import io
    import struct

    import numpy as np

    from ducklake_datafusion.read import FILE_ID, POSITION, ROW_ID
    from ducklake_datafusion.spark.planner._change import deleted_rows
    from ducklake_datafusion.spark.planner._frames import read_request

    columns = np.array([[7, 8, 9], [3, 3, -1], [0, 5, -1]], dtype="<i8")
    blob = columns.tobytes()
    body = json.dumps({"op": "change_commit", "blobs": 1}).encode()
    stream = io.BytesIO(struct.pack(">I", len(body)) + body + struct.pack(">Q", len(blob)) + blob)
    request, blobs = read_request(stream)
    assert request == {"op": "change_commit"} and blobs == [blob]
    rows = deleted_rows(blobs, 3, "DELETE of t").to_pydict()
    assert rows == {ROW_ID: [7, 8, 9], FILE_ID: [3, 3, None], POSITION: [0, 5, None]}
    with pytest.raises(InvalidOptionError, match="not one of 48 "):
        deleted_rows(blobs, 2, "DELETE of t")
    columns[2, 1] = -1
    with pytest.raises(InvalidOptionError, match="a file but no position"):
        deleted_rows([columns.tobytes()], 3, "DELETE of t")
