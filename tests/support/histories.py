"""Lake histories that several test modules write and read back.

``write_history`` (time travel, the count, the plan export): inserts in files and inlined,
deletes in files and inlined, updates, schema changes, compaction and expiry;
``write_encrypted_history`` (encrypted lakes, and the reader on another duckdb).
"""

from __future__ import annotations

import datetime as dt

from datafusion import SessionContext

from ducklake_datafusion import DuckLakeCatalog, register

EXPIRED = (3, 4)


def write_history(lake) -> None:
    """Snapshots 1..N of table ``t``; snapshots 3 and 4 are expired at the end."""
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, v DOUBLE)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, i / 4 FROM range(200) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 's' || i, i / 4 FROM range(200, 300) r(i)")
    lake.sql("INSERT INTO lake.main.t VALUES (1000, 'inl', 0.5), (1001, NULL, NULL)")  # inlined
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 3")  # delete files
    lake.sql("DELETE FROM lake.main.t WHERE id IN (5, 250, 1001)")  # inlined deletes
    lake.sql("UPDATE lake.main.t SET v = -v WHERE id % 50 = 7")
    lake.sql("UPDATE lake.main.t SET s = 'upd' WHERE id = 1000")  # inlined update
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO s2")
    lake.sql("ALTER TABLE lake.main.t ALTER COLUMN id TYPE BIGINT")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'n' || i, 1.5, i FROM range(300, 330) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'n' || i, 2.5, i FROM range(330, 360) r(i)")
    lake.sql("CALL ducklake_merge_adjacent_files('lake')")
    lake.sql("DELETE FROM lake.main.t WHERE id IN (301, 345)")  # rows of the merged file
    lake.sql("ALTER TABLE lake.main.t DROP COLUMN v")
    lake.sql("CALL ducklake_flush_inlined_data('lake')")
    lake.sql("DELETE FROM lake.main.t WHERE id < 100 AND id % 10 <> 0")
    lake.sql("INSERT INTO lake.main.t VALUES (2000, 'last', 1)")
    versions = ", ".join(str(v) for v in EXPIRED)
    lake.sql(f"CALL ducklake_expire_snapshots('lake', versions => [{versions}])")


def snapshot_times(lake) -> dict[int, dt.datetime]:
    rows = lake.reference("SELECT snapshot_id, snapshot_time FROM ducklake_snapshots('lake')")
    return {r["snapshot_id"]: r["snapshot_time"] for r in rows.to_pylist()}


def session(lake, **pin) -> SessionContext:
    ctx = SessionContext()
    register(ctx, "lake", DuckLakeCatalog(**lake.reader_args(), **pin))
    return ctx


def write_encrypted_history(lake) -> None:
    lake.sql("CREATE TABLE lake.main.t (id INTEGER, s VARCHAR, st STRUCT(a INTEGER))")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'v' || i, {'a': i} FROM range(1000) r(i)")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'w' || i, NULL FROM range(1000, 1500) r(i)")
    lake.sql("DELETE FROM lake.main.t WHERE id % 10 = 3")  # encrypted delete files
    lake.sql("DELETE FROM lake.main.t WHERE id IN (1, 2)")  # inlined deletes
    lake.sql("UPDATE lake.main.t SET s = 'upd' WHERE id % 100 = 5")
    lake.sql("INSERT INTO lake.main.t VALUES (5000, 'inlined', {'a': 1})")
    lake.sql("ALTER TABLE lake.main.t ADD COLUMN w INTEGER DEFAULT 7")
    lake.sql("ALTER TABLE lake.main.t RENAME COLUMN s TO s2")
    lake.sql("INSERT INTO lake.main.t SELECT i, 'n' || i, NULL, i FROM range(2000, 2100) r(i)")
    lake.sql("CALL ducklake_flush_inlined_data('lake')")
