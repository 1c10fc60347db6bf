"""A contract the Python side breaks reaches the user as our typed error, not the
extension's bare ``ContractError``.

``_rust.ContractError`` means the Python side built a value off the contract
(``rust/src/contract.rs``): a bug of this package. ``provider._rust_build`` turns it into
``errors.InternalError`` naming the catalog, the table and the snapshot, the extension's
own error chained.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from ducklake_datafusion import DuckLakeCatalog, DuckLakeError, errors
from ducklake_datafusion.errors import InternalError
from ducklake_datafusion.provider import _rust, _rust_build


def test_a_plan_with_a_broken_column_is_our_internal_error(make_lake, monkeypatch):
    lake = make_lake(inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t AS SELECT range AS k FROM range(10)")
    table = DuckLakeCatalog(**lake.reader_args()).table("main", "t")
    plan = table.scan_plan()
    rust = _rust.extension()
    export_plan = _rust_build.export_plan

    def narrowed(*args, **kwargs) -> bytes:  # "size" as Int32: off contract
        exported = pa.ipc.open_stream(export_plan(*args, **kwargs)).read_all()
        index = exported.schema.get_field_index("size")
        built = exported.set_column(index, "size", exported.column(index).cast(pa.int32()))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, built.schema) as writer:
            writer.write_table(built)
        return sink.getvalue().to_pybytes()

    monkeypatch.setattr(_rust_build, "export_plan", narrowed)
    with pytest.raises(InternalError) as raised:
        _rust_build.build_provider(rust, table, plan)
    error = raised.value
    message = str(error)
    assert isinstance(error, DuckLakeError) and not isinstance(error, rust.ContractError)
    assert isinstance(error.__cause__, rust.ContractError)
    assert f"table main.t (snapshot {plan.snapshot_id}) of {plan.catalog}" in message
    assert 'column "size"' in message and "expected Int64" in message
    assert "bug" in message
    assert "InternalError" in errors.__all__
