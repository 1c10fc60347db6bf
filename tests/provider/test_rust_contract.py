"""The typed contract across the language boundaries, checked from both sides.

* ``ducklake_datafusion/_rust.pyi`` names what the built extension exports, with the same
  parameters;
* the plan crosses as the plan export (``read.PLAN_SCHEMA``, the form the Spark jar reads),
  and the Arrow shapes the Python side builds beside it (``_rust_contract.py``) are the
  ones the extension expects (``_rust.boundary_schemas``, ``rust/src/contract.rs``,
  ``rust/src/plan.rs``); the extension refuses anything else, another export version
  included, with ``ContractError`` naming the table and the column;
* ``ProviderSpec`` has the attributes ``LakeProvider`` reads;
* ``Predicate`` values are what ``_rust_lazy`` spells as filters;
* every error class the extension (``rust/src/errors.rs``) and the Spark jar
  (``ErrorNames.java``) name in an error's text is one of ``ducklake_datafusion.errors``.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import inspect
import re
from pathlib import Path

import pyarrow as pa
import pytest

from ducklake_datafusion import errors
from ducklake_datafusion.provider import _rust, _rust_lazy
from ducklake_datafusion.provider._change_target import LOCATION_COLUMNS
from ducklake_datafusion.provider._rust_contract import ProviderSpec, bounds_names, bounds_schema
from ducklake_datafusion.read import PLAN_SCHEMA, PLAN_VERSION, PlanExport, export_bytes

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "ducklake_datafusion" / "_rust.pyi"
JAVA_ERROR_NAMES = ROOT / "jvm/src/main/java/io/ducklake_datafusion/spark/ErrorNames.java"

TABLE = pa.schema(
    [
        pa.field("k", pa.int64()),
        pa.field("i", pa.int32()),
        pa.field("f", pa.float32()),
        pa.field("s", pa.string()),
        pa.field("ls", pa.large_string()),
        pa.field("b", pa.binary()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("dec", pa.decimal128(18, 3)),
        pa.field("ok", pa.bool_()),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("st", pa.struct([pa.field("x", pa.int64())])),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
    ]
)


@pytest.fixture(scope="module")
def rust():
    return _rust.extension()


# -- the stub -----------------------------------------------------------------------------


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text())


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__datafusion") and name.endswith("__"))


def _stub_names(body) -> dict[str, ast.AST]:
    names = {}
    for node in body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names[node.name] = node
    return {name: node for name, node in names.items() if _public(name) or name == "__new__"}


def _parameters(function: ast.FunctionDef) -> list[str]:
    args = function.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def _runtime_parameters(target) -> list[str] | None:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None  # no __text_signature__
    return [p.name for p in signature.parameters.values()]


def test_the_stub_names_everything_the_module_exports_and_nothing_else(rust):
    exported = {name for name in dir(rust) if _public(name)}
    assert exported == set(_stub_names(_stub().body)) - {"__new__"}


def test_the_stub_classes_have_the_modules_members_and_parameters(rust):
    for name, node in _stub_names(_stub().body).items():
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(rust, name)
        members = _stub_names(node.body)
        if issubclass(cls, BaseException):
            assert set(members) == set(), name
            continue
        own = {m for m in vars(cls) if _public(m)}
        assert own == set(members) - {"__new__"}, name
        for member, definition in members.items():
            if not isinstance(definition, ast.FunctionDef):
                continue
            if member == "__new__":  # the class's signature is its constructor's
                runtime = _runtime_parameters(cls)
                stubbed = _parameters(definition)[1:]  # without cls
            elif any(_is_property(d) for d in definition.decorator_list):
                assert isinstance(inspect.getattr_static(cls, member), property) or hasattr(
                    inspect.getattr_static(cls, member), "__get__"
                ), (name, member)
                continue
            else:
                runtime = _runtime_parameters(getattr(cls, member))
                runtime = runtime[1:] if runtime and runtime[0] in ("self", "$self") else runtime
                stubbed = _parameters(definition)[1:]  # without self
            assert runtime is not None, f"{name}.{member} has no text signature"
            assert runtime == stubbed, f"{name}.{member}"


def _is_property(decorator) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "property"


def test_the_stub_functions_have_the_modules_parameters(rust):
    for name, node in _stub_names(_stub().body).items():
        if isinstance(node, ast.FunctionDef):
            assert _runtime_parameters(getattr(rust, name)) == _parameters(node), name


def test_the_stub_constants_have_their_types(rust):
    assert isinstance(rust.DATAFUSION_VERSION, str)
    assert isinstance(rust.PLAN_VERSION, str)
    for name in ("PROVIDER_SPEC_FIELDS", "ERROR_CLASSES", "LOCATION_COLUMNS"):
        value = getattr(rust, name)
        assert isinstance(value, tuple) and all(isinstance(v, str) for v in value), name


# -- the Arrow shapes and the spec ----------------------------------------------------------


def test_the_python_schemas_are_the_ones_the_extension_expects(rust):
    expected = rust.boundary_schemas(TABLE)
    assert set(expected) == {"plan", "bounds", "rows"}
    assert expected["plan"].equals(PLAN_SCHEMA)
    assert expected["bounds"].equals(bounds_schema(TABLE))
    assert expected["rows"].equals(TABLE)
    # every column but the nested ones has bounds of its own type and a null count
    assert bounds_schema(TABLE).names[:3] == list(bounds_names("k"))
    assert not {"min:l", "min:st", "min:m"} & set(bounds_schema(TABLE).names)


def test_the_spec_has_the_attributes_the_provider_reads(rust):
    assert tuple(f.name for f in dataclasses.fields(ProviderSpec)) == rust.PROVIDER_SPEC_FIELDS
    assert ProviderSpec.__dataclass_params__.frozen


def test_the_location_columns_are_the_row_changes(rust):
    """A locating provider's columns are the ones a row change reads its rows' locations
    by (``provider/_change_target.py``)."""
    assert rust.LOCATION_COLUMNS == LOCATION_COLUMNS


SMALL = pa.schema([pa.field("k", pa.int64()), pa.field("s", pa.string())])


def _files(count: int = 1, *, current: bool = True) -> pa.RecordBatch:
    layout = {
        "read_schema": SMALL.serialize().to_pybytes(),
        "sources": [{"column": n, "physical": n, "cast": False} for n in SMALL.names],
        "snapshot_column": None,
        "current": current,
    }
    rows = [
        {
            "data_file_id": i,
            "url": f"file:///lake/x{i}.parquet",
            "size": 10,
            "footer_size": None,
            "record_count": 3,
            "deleted": None,
            "encrypted": False,
            "layout": layout,
        }
        for i in range(count)
    ]
    return pa.RecordBatch.from_pylist(rows, schema=PLAN_SCHEMA)


def _export(files: pa.RecordBatch | None = None) -> bytes:
    defaults = pa.RecordBatch.from_pydict({"k": [None], "s": [None]}, schema=SMALL)
    export = PlanExport(
        table="main.t",
        catalog="test",
        snapshot_id=5,
        schema=SMALL,
        files=_files() if files is None else files,
        field_ids={"k": 1, "s": 2},
        defaults=defaults,
        inlined=(),
    )
    return export_bytes(export)


def _restreamed(export: bytes, batch: pa.RecordBatch, **metadata) -> bytes:
    """``batch`` under ``export``'s metadata (``metadata`` replacing keys of it)."""
    meta = dict(pa.ipc.open_stream(export).schema.metadata)
    meta.update({f"ducklake_datafusion.{k}".encode(): v.encode() for k, v in metadata.items()})
    sink = pa.BufferOutputStream()
    schema = batch.schema.with_metadata(meta)
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(batch.replace_schema_metadata(meta))
    return sink.getvalue().to_pybytes()


def _spec(plan: bytes | None = None, bounds=None, paths=("lake/x0.parquet",), **kwargs):
    return ProviderSpec(
        plan=_export() if plan is None else plan,
        paths=paths,
        bounds=bounds,
        rows=(),
        storage={"kind": "local"},
        min_partitions=2,
        **kwargs,
    )


def test_a_spec_of_the_contract_makes_a_provider(rust):
    bounds = pa.RecordBatch.from_pydict(
        {
            "min:k": pa.array([1], pa.int64()),
            "max:k": pa.array([3], pa.int64()),
            "nulls:k": pa.array([0], pa.int64()),
        }
    )
    provider = rust.LakeProvider(_spec(bounds=bounds))
    assert repr(provider) == 'LakeProvider("main.t (snapshot 5)")'
    assert type(rust.LakeProvider(_spec())).__name__ == "LakeProvider"
    older = _export(_files(current=False))  # mapped by field id, with the defaults
    assert type(rust.LakeProvider(_spec(older))).__name__ == "LakeProvider"


def test_a_plan_off_the_contract_is_refused_naming_the_table_and_column(rust):
    export = _export()
    without_url = _restreamed(export, _files().drop_columns(["url"]))
    with pytest.raises(rust.ContractError, match=r'column "url" of the plan of main\.t'):
        rust.LakeProvider(_spec(without_url))
    narrow = _restreamed(export, _files().set_column(2, "size", pa.array([10], pa.int32())))
    with pytest.raises(rust.ContractError, match=r'column "size" .*is Int32, expected Int64'):
        rust.LakeProvider(_spec(narrow))
    with pytest.raises(rust.ContractError, match="has 1 files for 2 paths"):
        rust.LakeProvider(_spec(paths=("a.parquet", "b.parquet")))
    assert issubclass(rust.ContractError, ValueError)


def test_a_plan_export_of_another_version_is_refused(rust):
    newer = _restreamed(_export(), _files(), plan_version="2")
    with pytest.raises(rust.ContractError, match='version Some\\("2"\\).* reads version 1'):
        rust.LakeProvider(_spec(newer))
    assert rust.PLAN_VERSION == PLAN_VERSION  # one version, checked on both sides


def test_a_bounds_table_off_the_contract_is_refused_naming_the_table_and_column(rust):
    def bounds(name, values):
        return pa.RecordBatch.from_pydict({name: values})

    cases = [
        (bounds("min:k", pa.array([1], pa.int32())), "min:k", "is Int32, expected Int64"),
        (bounds("max:nope", pa.array([1], pa.int64())), "max:nope", "not a bound"),
        (bounds("nulls:s", pa.array([1], pa.int32())), "nulls:s", "expected Int64"),
    ]
    for batch, column, problem in cases:
        with pytest.raises(rust.ContractError, match=re.escape(problem)) as raised:
            rust.LakeProvider(_spec(bounds=batch))
        assert f'column "{column}" of the bounds table of main.t' in str(raised.value)
    two_rows = bounds("min:k", pa.array([1, 2], pa.int64()))
    with pytest.raises(rust.ContractError, match="has 2 rows for 1 files"):
        rust.LakeProvider(_spec(bounds=two_rows))


def test_rows_and_defaults_off_the_contract_are_refused(rust):
    other = pa.RecordBatch.from_pydict({"k": pa.array([1], pa.int64())})
    with pytest.raises(rust.ContractError, match=r'column "s" of the inlined rows of main\.t'):
        rust.LakeProvider(dataclasses.replace(_spec(), rows=(other,)))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, other.schema) as writer:
        writer.write_batch(other)
    text = base64.b64encode(sink.getvalue().to_pybytes()).decode()
    older = _files(current=False)
    other_defaults = _restreamed(_export(older), older, defaults=text)
    with pytest.raises(rust.ContractError, match=r'column "s" of the defaults of main\.t'):
        rust.LakeProvider(_spec(other_defaults))


def test_a_spec_missing_an_attribute_is_refused(rust):
    class Partial:
        plan = b""

    with pytest.raises(AttributeError, match="paths"):
        rust.LakeProvider(Partial())


# -- predicates ---------------------------------------------------------------------------


def test_predicates_are_typed_and_checked_when_made(rust):
    one = pa.array([5], pa.int64())
    predicate = rust.Predicate("cmp", "k", [one], op=">=")
    assert (predicate.kind, predicate.column, predicate.op) == ("cmp", "k", ">=")
    assert predicate.values[0].equals(one) and isinstance(predicate.values, tuple)
    with pytest.raises(AttributeError):
        predicate.column = "j"  # frozen
    for kind, values, op in (
        ("like", [one], None),
        ("cmp", [one], "??"),
        ("cmp", [one], None),
        ("null", [], "=="),
        ("between", [one], None),
        ("in", [], None),
    ):
        with pytest.raises(ValueError):
            rust.Predicate(kind, "k", values, op=op)


def test_every_comparison_and_kind_is_one_the_python_side_spells(rust):
    assert set(rust.Predicate.COMPARISONS) == set(_rust_lazy._COMPARISONS)
    one = pa.array([5], pa.int64())
    values = {"cmp": [one], "between": [one, one], "in": [one], "null": [], "not_null": []}
    assert set(rust.Predicate.KINDS) == set(values)
    assert isinstance(rust.Predicate.KINDS, tuple) and isinstance(rust.Predicate.COMPARISONS, tuple)
    for kind in rust.Predicate.KINDS:
        op = "==" if kind == "cmp" else None
        predicate = rust.Predicate(kind, "k", values[kind], op=op)
        assert _rust_lazy.predicate_filter([predicate]) is not None, kind


# -- error classes ------------------------------------------------------------------------


def test_every_error_class_the_extension_names_is_ours(rust):
    assert rust.ERROR_CLASSES
    assert set(rust.ERROR_CLASSES) <= set(errors.__all__)
    assert {"StoreConfigError", "ContractError"}.isdisjoint(errors.__all__)  # exceptions


def _java_error_names_from_source() -> set[str]:
    text = JAVA_ERROR_NAMES.read_text()
    return set(re.findall(r'public static final String \w+ = "(\w+)";', text))


def test_every_error_class_the_spark_jar_names_is_ours(spark):
    from ducklake_datafusion.spark.parquet._deleted_rows import has_reader

    source = _java_error_names_from_source()
    assert source and source <= set(errors.__all__)
    if not has_reader(spark):
        pytest.skip("the package's Spark jar is not built (jvm/build.sh): source checked only")
    names = spark._jvm.io.ducklake_datafusion.spark.ErrorNames
    loaded = set(names.all())
    assert loaded == source
    assert names.text("DataFileMissingError", "gone") == "DataFileMissingError: gone"


def test_the_jar_names_error_classes_through_error_names_only():
    """``DeletedRows.java`` and the other classes spell no class name of their own."""
    sources = JAVA_ERROR_NAMES.parent.glob("*.java")
    ours = set(errors.__all__)
    for source in sources:
        if source == JAVA_ERROR_NAMES:
            continue
        named = set(re.findall(r'"(\w+Error)\b', source.read_text()))
        assert not named & ours, source.name
