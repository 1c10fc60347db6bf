"""Table metadata as pyarrow tables: snapshots(), tables(), files(), history().

Each equals what DuckDB's own functions return for the same lake (the table functions of
``functions.py`` are compared column by column in ``test_changes.py``; here the Python
methods are compared with DuckDB directly).
"""

from __future__ import annotations

from support.lakes import assert_same_rows

from ducklake_datafusion import DuckLakeCatalog


def test_metadata_methods(make_lake, lake_spec):
    lake = make_lake(lake_spec, inline_limit=0)
    lake.sql("CREATE TABLE lake.main.t (id INTEGER)")
    lake.sql("INSERT INTO lake.main.t SELECT i FROM range(100) r(i)")
    lake.sql("CREATE TABLE lake.main.other (x INTEGER)")
    lake.sql("INSERT INTO lake.main.other VALUES (1)")
    lake.sql("DELETE FROM lake.main.t WHERE id < 10")
    lake.sql("ALTER TABLE lake.main.t RENAME TO t2")
    lake.sql("INSERT INTO lake.main.t2 VALUES (1000)")
    snapshots = lake.reference(
        "SELECT snapshot_id, changes, author, commit_message FROM ducklake_snapshots('lake')"
    )
    tables = lake.reference(
        "SELECT table_name, schema_id, table_id, file_count, delete_file_count "
        "FROM ducklake_table_info('lake')"
    )
    files = lake.reference("SELECT data_file, delete_file FROM ducklake_list_files('lake', 't2')")
    catalog = DuckLakeCatalog(**lake.reader_args())
    ours = catalog.snapshots().select(["snapshot_id", "changes", "author", "commit_message"])
    assert_same_rows(ours, snapshots)
    assert_same_rows(
        catalog.tables().select(
            ["table_name", "schema_id", "table_id", "file_count", "delete_file_count"]
        ),
        tables,
    )
    table = catalog.table("main", "t2")
    listed = table.files().select(["data_file", "delete_file"])
    assert sorted(listed.to_pylist(), key=str) == sorted(files.to_pylist(), key=str)
    # history: the snapshots whose changes name this table (by id, or by name when created
    # or renamed), as DuckDB's own changes column shows them
    t2_id = next(r["table_id"] for r in tables.to_pylist() if r["table_name"] == "t2")
    expected = [
        row["snapshot_id"]
        for row in snapshots.to_pylist()
        if any(
            str(t2_id) in values or any(v.endswith((".t", ".t2")) for v in values)
            for _, values in row["changes"]
        )
    ]
    assert table.history().column("snapshot_id").to_pylist() == expected
    assert len(expected) >= 5  # create, insert, delete, rename, insert
