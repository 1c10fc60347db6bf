"""Our files' Parquet statistics, judged by every reader that prunes with them.

A reader that skips row groups or files by their footer's min/max drops rows when a bound
is wrong, and which bounds are wrong depends on the reader: DuckDB orders NaN above every
number, DataFusion by IEEE total order, and pyarrow's writer leaves NaN out of a float
chunk's bounds. So every file our writers write is read here by each reader that prunes
with its footer, for several hundred predicates over edge values, and each count must
equal the same reader's count over the same rows held in memory (where nothing is pruned):

* DuckDB through the lake's catalog, and DuckDB's ``read_parquet`` over our files alone;
* DataFusion's own ``register_parquet`` over our files alone;
* our reader (the Rust scan and the exact path) over our files, and over DuckDB's own
  files of the same rows.

The rows: edge values of every scalar type we write (NaN, +-inf, -0.0, NULL, the extremes
of every integer width, 0001-01-01 and 9999-12-31, long and non-ASCII text, empty text and
blobs), in files of mixed values, a file whose float chunks hold only NaN, a file without
NaN, and a file of several row groups where NaN is in some groups only; written by
``append`` and by DataFusion's ``INSERT``.
"""

from __future__ import annotations

import math
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext
from support.predicates import (
    EDGES,
    FLOATS,
    assert_every_reader_agrees,
    data_files,
    datafusion_counts,
    edge_rows,
    mismatches,
    predicates,
)
from support.writes import META

from ducklake_datafusion import DuckLakeCatalog, register
from ducklake_datafusion.write import _files
from ducklake_datafusion.write._footer_stats import without_bounds
from ducklake_datafusion.write._thrift import decode_struct, encode_struct


def _batches() -> list[pa.Table]:
    """The files' rows: mixed, floats only NaN, no NaN; the fourth (written with row
    groups of 40 rows) holds NaN in its first row group only."""
    return [
        edge_rows(300, 0),
        edge_rows(120, 3, only_nan=True),
        edge_rows(200, 5, no_nan=True),
        pa.concat_tables([edge_rows(40, 1), edge_rows(80, 2, no_nan=True)]),
    ]


@pytest.fixture(scope="module")
def lakes(tmp_path_factory):
    """One lake, tables ``appended`` (``append``), ``inserted`` (DataFusion INSERT) and
    ``theirs`` (DuckDB's own INSERTs) of the same rows; built once for the module."""
    from support.lakes import LakeSpec, make_lake

    lake = make_lake(LakeSpec("duckdb", "local"), tmp_path_factory.mktemp("footers"))
    batches = _batches()
    catalog = DuckLakeCatalog(**lake.reader_args())
    saved = _files.ROW_GROUP_ROWS
    try:
        catalog.create_table("main.appended", batches[0].schema)
        table = catalog.table("main", "appended")
        ctx = SessionContext()
        register(ctx, "lake", catalog)
        ctx.sql("CREATE TABLE lake.main.inserted AS SELECT * FROM lake.main.appended").collect()
        for index, batch in enumerate(batches):
            _files.ROW_GROUP_ROWS = 40 if index == 3 else saved
            table.append(batch)
            ctx.register_record_batches(f"src{index}", [batch.to_batches()])
            ctx.sql(f"INSERT INTO lake.main.inserted SELECT * FROM src{index}").collect()
    finally:
        _files.ROW_GROUP_ROWS = saved
    con = lake.attach()
    lake.sql("CREATE TABLE lake.main.theirs AS SELECT * FROM lake.main.appended LIMIT 0")
    for index, batch in enumerate(batches):
        con.register(f"src{index}", batch)
        lake.sql(f"INSERT INTO lake.main.theirs SELECT * FROM src{index}")
    lake.detach()
    yield lake, pa.concat_tables(batches)
    lake.close()


@pytest.mark.parametrize("table", ["appended", "inserted"])
def test_every_reader_prunes_our_files_rightly(lakes, table):
    lake, rows = lakes
    assert len(data_files(lake, table)) == 4
    assert assert_every_reader_agrees(lake, table, rows) > 300


def test_our_reader_prunes_duckdbs_files_rightly(lakes):
    """DuckDB's own files of the same rows, through our reader: equal to DataFusion over
    the rows in memory (DuckDB 1.5.5's own reader gets ``b = '\\x00'::BLOB`` wrong on
    them; ours must not)."""
    lake, rows = lakes
    ctx = SessionContext()
    ctx.register_record_batches("mem", [rows.to_batches()])
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args()))
    for name in EDGES:
        cases = predicates(rows, name)
        truth = datafusion_counts(ctx, "mem", name, cases)
        counts = datafusion_counts(ctx, "lake.main.theirs", name, cases)
        wrong = mismatches(cases, counts, truth)
        assert not wrong, f"theirs.{name}: (predicate, count, in memory) {wrong[:5]}"


def _chunk_bounds(path: str) -> dict[str, list[bool]]:
    """Per leaf column: whether each row group's chunk has min/max in the footer."""
    meta = pq.read_metadata(path)
    out: dict[str, list[bool]] = {}
    for group in range(meta.num_row_groups):
        for index in range(meta.num_columns):
            chunk = meta.row_group(group).column(index)
            stats = chunk.statistics
            out.setdefault(chunk.path_in_schema, []).append(
                bool(stats is not None and stats.has_min_max)
            )
    return out


def test_footers_keep_bounds_but_none_beside_nan(lakes):
    """In our files, a float column holding NaN anywhere in the file has no min/max in
    any of its row groups; every other chunk that holds a value has them, as in DuckDB's
    files of the same rows (whose NaN chunks have none either)."""
    lake, _ = lakes
    for table in ("appended", "inserted"):
        for path in data_files(lake, table):
            read = pq.read_table(path)
            for name, has_bounds in _chunk_bounds(path).items():
                values = read[name]
                is_float = name in FLOATS
                nan_in_file = is_float and any(
                    v is not None and math.isnan(v) for v in values.to_pylist()
                )
                if nan_in_file:
                    assert not any(has_bounds), f"{table} {path} {name}: bounds beside NaN"
                elif values.null_count < len(values):
                    assert all(has_bounds), f"{table} {path} {name}: bounds lost"
    for path in data_files(lake, "theirs"):
        meta = pq.read_metadata(path)
        for group in range(meta.num_row_groups):
            for index in range(meta.num_columns):
                chunk = meta.row_group(group).column(index)
                if chunk.path_in_schema in FLOATS and chunk.statistics.has_min_max:
                    low, high = chunk.statistics.min, chunk.statistics.max
                    assert not (math.isnan(low) or math.isnan(high)), path


def test_catalog_nan_flags_match_duckdbs(lakes):
    """``contains_nan`` and the float bounds in the catalog are DuckDB's for the same
    files' rows (the catalog guards our reader; the footer guards everyone else)."""
    lake, _ = lakes

    def flags(table: str) -> list[tuple]:
        return [
            tuple(r.values())
            for r in lake.reference(
                f"SELECT f.file_order, c.column_name, s.min_value, s.max_value, s.contains_nan "
                f"FROM {META}.ducklake_file_column_stats s "
                f"JOIN {META}.ducklake_data_file f USING (data_file_id) "
                f"JOIN {META}.ducklake_table t ON t.table_id = f.table_id "
                f"JOIN {META}.ducklake_column c ON c.column_id = s.column_id "
                f"AND c.table_id = t.table_id WHERE t.table_name = ? AND c.column_name IN "
                f"('f32', 'f64', 'f64_inf') ORDER BY ALL",
                params=[table],
            ).to_pylist()
        ]

    assert flags("appended") == flags("theirs")
    assert flags("inserted") == flags("theirs")


def test_footer_codec_gives_back_the_bytes_it_read(lakes):
    """The footer edit decodes and encodes the whole Thrift tree: untouched, every footer
    (ours, written by pyarrow, and DuckDB's) comes back byte for byte, and dropping the
    bounds of a chunk changes that chunk's statistics alone."""
    lake, _ = lakes
    for table in ("appended", "inserted", "theirs"):
        for path in data_files(lake, table):
            with open(path, "rb") as handle:
                raw = handle.read()
            size = int.from_bytes(raw[-8:-4], "little")
            footer = raw[-8 - size : -8]
            assert encode_struct(decode_struct(footer)) == footer, path
            edited_footer = without_bounds(footer, [(0, 1)])
            rest = raw[: -8 - size]
            edited = pq.read_metadata(
                pa.BufferReader(
                    rest + edited_footer + struct.pack("<i", len(edited_footer)) + b"PAR1"
                )
            )
            before = pq.read_metadata(path)
            for index in range(before.num_columns):
                old = before.row_group(0).column(index).statistics
                new = edited.row_group(0).column(index).statistics
                if index == 1:
                    assert new is None or not new.has_min_max
                    assert (new.null_count if new else None) == (old.null_count if old else None)
                else:
                    assert (old is None) == (new is None)
                    assert old is None or old.to_dict() == new.to_dict()
