"""Spark's ``DELETE FROM`` by catalog metadata alone (``SupportsDeleteV2``): whole files ended.

``delete_where`` ``{namespace, name, filters, dry_run?, author?, commit_message?,
commit_extra_info?}`` -> ``{snapshot, files, rows, decided}``. The filters are Spark's predicates in the pushed filters'
JSON (``_filters_json``), all of which must translate (a delete must not widen). The table
is read at the latest snapshot; each live file is matched whole or not at all by its
statistics and partition values (``scan.whole_file_match``), and the files matched whole
are ended as DuckDB ends a data file all of whose rows a statement deletes, through the
core's row changes (``write.TableChange``), as one snapshot. Nothing is read but the
catalog (and the delete files of files that have them, whose rows are already gone).

A delete that some file matches in part, or that may match rows inlined in the catalog,
is refused by name and deletes nothing: those rows need a row-level delete. A ``dry_run``
only answers whether the catalog decides the delete (``decided``: Spark's
``canDeleteWhere``), so that Spark rewrites any other into its row-level form
(``_change``), which reads the rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from ...errors import UnsupportedFeatureError
from ...read import FILE_ID, POSITION, ROW_ID
from ...scan import Lake, to_expression, whole_file_match
from ...write import TableChange, commit_changes
from ._filters_json import whole_json_filter
from ._write import commit_options

__all__ = ["delete_where_response"]


def delete_where_response(lake: Lake, request: Mapping) -> dict:
    namespace, name = str(request["namespace"]), str(request["name"])
    table = lake.table(namespace, name)
    statement = f"DELETE FROM {namespace}.{name}"
    try:
        condition = whole_json_filter(request["filters"], table.columns)
    except UnsupportedFeatureError as exc:
        raise UnsupportedFeatureError(f"{statement} of {lake.description}: {exc}") from exc
    if condition is not None:
        statement += f" WHERE {to_expression(condition)}"
    match = whole_file_match(table, condition)
    undecided = []
    if match.partial:
        example = match.partial[0].file.url
        undecided.append(
            f"{len(match.partial)} of its data files (e.g. {example}) hold rows that match "
            "and rows that may not, by their statistics and partition values"
        )
    if condition is not None and match.inlined_rows:
        undecided.append(f"{match.inlined_rows} rows are inlined in the catalog")
    if request.get("dry_run"):
        rows = sum(t.record_count for t in match.whole)
        return {
            "snapshot": table.snapshot_id,
            "files": len(match.whole),
            "rows": rows,
            "decided": not undecided,
        }
    if undecided:
        raise UnsupportedFeatureError(
            f"{statement} at snapshot {table.snapshot_id} of {lake.description}: "
            f"{'; '.join(undecided)}. A delete of whole files, decided by the catalog, cannot "
            "delete these rows, and nothing was deleted; the table changed since Spark planned "
            "the statement: run it again (Spark then deletes these rows one by one)"
        )
    change = TableChange(table)
    change.delete(_locations(match))
    snapshot = commit_changes([change], commit_options(request))
    return {
        "snapshot": snapshot,
        "files": len(match.whole),
        "rows": change.deleted_count,
        "decided": True,
    }


def _locations(match) -> pa.Table:
    """Every row of the files matched whole (and the inlined rows, when all match) as the
    core's row locations."""
    files = [np.full(t.record_count, t.data_file_id, np.int64) for t in match.whole]
    positions = [np.arange(t.record_count, dtype=np.int64) for t in match.whole]
    file_ids = pa.array(np.concatenate(files) if files else [], pa.int64())
    n = len(file_ids)
    inlined = pa.array(match.inlined_row_ids, pa.int64())
    return pa.table(
        {
            ROW_ID: pa.concat_arrays([pa.nulls(n, pa.int64()), inlined]),
            FILE_ID: pa.concat_arrays([file_ids, pa.nulls(len(inlined), pa.int64())]),
            POSITION: pa.concat_arrays(
                [
                    pa.array(np.concatenate(positions) if positions else [], pa.int64()),
                    pa.nulls(len(inlined), pa.int64()),
                ]
            ),
        }
    )
