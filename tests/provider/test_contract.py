"""The DataFusion <-> pyarrow-Dataset contract our adapter relies on (see provider/_dataset.py).

If a datafusion release changes how it drives a Python ``pyarrow.dataset.Dataset``, these
tests fail first and say which part of the contract moved.
"""

from __future__ import annotations

from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from datafusion import SessionContext
from datafusion.catalog import CatalogProvider, SchemaProvider, Table

from ducklake_datafusion.provider._pyarrow_filter import filter_of
from ducklake_datafusion.scan import And, Column, Compare, In, IsNull, Literal, Not, Or

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string())])
DATA = pa.table({"a": list(range(10)), "b": [str(i) for i in range(10)]})


class _Recorder:
    def __init__(self):
        self.fragment_filters = []
        self.scans = []


class _Scanner:
    def __init__(self, columns, filter, rec):
        self.columns, self.filter, self.rec = columns, filter, rec
        self.projected_schema = pa.schema([SCHEMA.field(c) for c in columns])

    def to_batches(self):
        self.rec.scans.append((tuple(self.columns), self.filter))
        table = DATA.filter(self.filter) if self.filter is not None else DATA
        return iter(table.select(self.columns).to_batches())


class _Fragment:
    def __init__(self, rec):
        self.rec = rec

    def scanner(self, schema=None, columns=None, filter=None, batch_size=None, **kw):
        return _Scanner(columns, filter, self.rec)


class _Dataset(ds.Dataset):
    def __init__(self, rec):
        self.rec = rec

    @property
    def schema(self):
        return SCHEMA

    def scanner(self, columns=None, filter=None, **kw):
        return _Scanner(columns or [], None, self.rec)

    def get_fragments(self, filter=None):
        self.rec.fragment_filters.append(filter)
        return [_Fragment(self.rec), _Fragment(self.rec)]


class _Schema(SchemaProvider):
    def __init__(self, rec):
        self.rec = rec

    def table_names(self):
        return {"t"}

    def table(self, name):
        return Table(_Dataset(self.rec)) if name == "t" else None

    def table_exist(self, name):
        return name == "t"


class _Catalog(CatalogProvider):
    def __init__(self, rec):
        self.rec = rec

    def schema_names(self):
        return {"main"}

    def schema(self, name):
        return _Schema(self.rec) if name == "main" else None


def _ctx(rec):
    ctx = SessionContext()
    ctx.register_catalog_provider("c", _Catalog(rec))
    return ctx


def test_one_partition_per_fragment_and_exact_filters():
    rec = _Recorder()
    out = _ctx(rec).sql("SELECT b FROM c.main.t WHERE a > 5").to_pylist()
    # two fragments each returned the 4 matching rows; DataFusion did not re-filter them away
    assert sorted(r["b"] for r in out) == sorted(["6", "7", "8", "9"] * 2)
    assert len(rec.scans) == 2
    columns, filter = rec.scans[0]
    assert columns == ("b",)  # filter columns are not added to the projection
    assert filter_of(filter, SCHEMA) == Compare(">", Column("a"), Literal(5, "int64"))


def test_count_star_asks_for_zero_columns():
    rec = _Recorder()
    out = _ctx(rec).sql("SELECT count(*) AS n FROM c.main.t").to_pylist()
    assert out == [{"n": 20}]
    assert all(columns == () for columns, _ in rec.scans)


def test_filter_shapes_read_back():
    expr = (pc.field("a").isin([1, 2]) | pc.field("b").is_null()) & ~(pc.field("a") <= 3)
    a = Column("a")
    assert filter_of(expr, SCHEMA) == And(
        (
            Or((In(a, (1, 2), "int64"), IsNull(Column("b")))),
            Not(Compare("<=", a, Literal(3, "int64"))),
        )
    )


def test_provider_exception_reaches_user():
    class Boom(_Dataset):
        def get_fragments(self, filter=None):
            from ducklake_datafusion.errors import DataFileMissingError

            raise DataFileMissingError("data file x.parquet of table main.t is missing")

    class S(_Schema):
        def table(self, name):
            return Table(Boom(self.rec))

    class C(_Catalog):
        def schema(self, name):
            return S(self.rec)

    ctx = SessionContext()
    ctx.register_catalog_provider("c", C(_Recorder()))
    try:
        ctx.sql("SELECT * FROM c.main.t").collect()
    except Exception as exc:  # noqa: BLE001 - DataFusion wraps it; the text must survive
        assert "DataFileMissingError" in str(exc) and "x.parquet of table main.t" in str(exc)
    else:
        raise AssertionError("exception was swallowed")


class _Unreadable(Exception):
    """Stands for one of our typed errors."""


class _RaisingSchema(SchemaProvider):
    """Raises from the hook named ``where``; lists ``t`` through a list attribute."""

    table_names: ClassVar[list[str]] = ["t"]  # an attribute, as datafusion 55 reads it

    def __init__(self, where: str):
        self.where = where

    def table(self, name):
        if self.where == "table":
            raise _Unreadable("catalog broken")
        return Table(_Dataset(_Recorder())) if name == "t" else None

    def table_exist(self, name):
        return name == "t"


class _MethodNamesSchema(_RaisingSchema):
    def table_names(self):  # the documented form, which datafusion 55 does not call
        return {"t"}


class _RaisingCatalog(CatalogProvider):
    def __init__(self, where: str, names_as_method: bool = False):
        self.where, self.names_as_method = where, names_as_method

    def schema_names(self):
        return {"main"}

    def schema(self, name):
        if self.where == "schema":
            raise _Unreadable("catalog broken")
        if name != "main":
            return None
        return (
            _MethodNamesSchema(self.where) if self.names_as_method else _RaisingSchema(self.where)
        )


def _raising_ctx(where: str, names_as_method: bool = False) -> SessionContext:
    from datafusion import SessionConfig

    ctx = SessionContext(SessionConfig().with_information_schema(True))
    ctx.register_catalog_provider("lake", _RaisingCatalog(where, names_as_method))
    return ctx


def test_errors_from_schema_are_dropped_and_from_table_reach_the_user():
    """Why a catalog that cannot be read becomes a FailedSchema (provider notes).

    An exception raised by ``CatalogProvider.schema()`` is logged and turned into "table not
    found"; one raised by ``SchemaProvider.table()`` reaches ``ctx.sql`` as itself, and
    information_schema queries report it (as text) when ``table_names`` lists a table.
    """
    import pytest

    with pytest.raises(Exception, match="not found") as dropped:
        _raising_ctx("schema").sql("SELECT * FROM lake.main.t")
    assert not isinstance(dropped.value, _Unreadable)
    with pytest.raises(_Unreadable, match="catalog broken"):
        _raising_ctx("table").sql("SELECT * FROM lake.main.t")
    with pytest.raises(Exception, match="_Unreadable: catalog broken"):
        _raising_ctx("table").sql("SELECT * FROM information_schema.tables").to_arrow_table()


def test_table_names_is_read_as_an_attribute():
    """datafusion 55 reads ``table_names`` without calling it: a method lists nothing."""
    listed = _raising_ctx("none").sql(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
    )
    assert listed.to_pydict()["table_name"] == ["t"]
    as_method = _raising_ctx("none", names_as_method=True).sql(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
    )
    assert as_method.to_pydict()["table_name"] == []
