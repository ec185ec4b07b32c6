"""A streaming query's micro-batches into a Delta table, each exactly once, without
Delta's Spark connector.

Spark's file sink (``writeStream.format("parquet")``) is exactly once only for readers
that follow its ``_spark_metadata`` log; any other reader of the folder (DuckDB, Polars,
delta-rs, a plain ``read_parquet`` glob) also reads the files of a batch that was killed
half-way and written again.  :func:`delta_batch_writer` returns the function to pass to
``foreachBatch``: it commits each micro-batch to a Delta table through ``deltalake``
(delta-rs) with an application transaction (``app_id``, batch id) in the same commit,
so a batch Spark replays after a crash (same id: Spark logs a batch's offsets before it
runs it, and runs it again on restart) finds its id already committed and is skipped.
Readers of the table see each entry once, at every version.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError

from rmqarrow.errors import InvalidValueError

__all__ = ["committed_batch", "delta_batch_writer"]

log = logging.getLogger("rmqarrow.spark.delta")


def committed_batch(
    path: str | os.PathLike[str],
    app_id: str,
    storage_options: Mapping[str, str] | None = None,
) -> int | None:
    """The last batch id ``app_id`` committed to the Delta table at ``path``; None when
    it committed none (or there is no table yet)."""
    try:
        table = DeltaTable(os.fspath(path), storage_options=dict(storage_options or {}))
    except TableNotFoundError:
        return None
    version = table.transaction_version(app_id)
    return None if version is None else int(version)


def delta_batch_writer(
    path: str | os.PathLike[str],
    app_id: str,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> Callable[[Any, int], None]:
    """``foreachBatch`` function appending each micro-batch to the Delta table at ``path``
    exactly once (module doc).

    ``app_id`` names the query in the table's log: one per streaming query (keep it with
    the query's checkpoint; two queries writing one table need two ids).  A batch whose
    id is at or below the last one ``app_id`` committed is skipped with a warning; an empty
    batch commits nothing.  The batch is collected to the driver as Arrow
    (``DataFrame.toArrow``), so bound it with ``maxEntriesPerTrigger`` /
    ``maxFilesPerTrigger``.  The table is created by the first batch (schema of the
    stream).
    """
    if not isinstance(app_id, str) or not app_id.strip():
        raise InvalidValueError(f"app_id must be a non-empty string, got {app_id!r}")
    target = os.fspath(path)
    options = dict(storage_options or {})

    def write(batch: Any, batch_id: int) -> None:
        done = committed_batch(target, app_id, options)
        if done is not None and batch_id <= done:
            # a warning, not a note: a replay happens once after a crash, while a new
            # checkpoint under an old app id would skip every batch up to the old one's
            log.warning(
                "batch %d of %s is in %s already (last committed: %d), skipped: a replay "
                "after a restart; if this query started on a new checkpoint, give it a new "
                "app id, or its batches up to %d are never written",
                batch_id,
                app_id,
                target,
                done,
                done,
            )
            return
        data = batch.toArrow()
        if data.num_rows == 0:
            return
        write_deltalake(
            target,
            data,
            mode="append",
            storage_options=options or None,
            commit_properties=CommitProperties(
                app_transactions=[Transaction(app_id=app_id, version=int(batch_id))],
                custom_metadata={"rmqarrow": {"app": app_id, "batch": int(batch_id)}},
            ),
        )

    return write
