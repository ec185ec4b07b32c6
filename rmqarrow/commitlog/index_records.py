"""The fast path the index build needs: message records as Arrow batches.

``index_records`` yields the columns ``IndexService.buildIndex`` reads from a dispatch
request (topic, KEYS, UNIQ_KEY, commit-log offset, store timestamp, SYSFLAG) for every
message record in commit-log order, rollback records included: deciding what to index is
the index service's job.  Frames are checked by the same walk as the full reader; the
fields are decoded vectorized (see :mod:`._columns`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa

from rmqarrow.commitlog.columns import decode_columns
from rmqarrow.commitlog.reader import CommitLogReader
from rmqarrow.errors import InvalidValueError

__all__ = ["DEFAULT_BATCH_ROWS", "INDEX_RECORDS_SCHEMA", "index_record_batches", "index_records"]

DEFAULT_BATCH_ROWS = 65_536


def _field(name: str, type_: pa.DataType, nullable: bool, description: str) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": description})


INDEX_RECORDS_SCHEMA = pa.schema(
    [
        _field("topic", pa.string(), False, "message topic"),
        _field("keys", pa.string(), True, "KEYS property, raw (space separated); null if absent"),
        _field("uniq_key", pa.string(), True, "UNIQ_KEY property; null if absent"),
        _field("commit_log_offset", pa.int64(), False, "physical offset of the record"),
        _field("store_timestamp", pa.int64(), False, "STORETIMESTAMP, epoch ms"),
        _field("sys_flag", pa.int32(), False, "SYSFLAG as stored (transaction type in 0xC)"),
    ],
    metadata={"rmqarrow.table": "index_records"},
)


def index_record_batches(
    reader: CommitLogReader, *, start_offset: int = 0, batch_rows: int = DEFAULT_BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """:func:`index_records` over an open reader (its ``lenient`` and ``problems`` apply)."""
    if batch_rows < 1:
        raise InvalidValueError(f"batch_rows must be >= 1, got {batch_rows}")
    for file, buf, positions in reader.positions(start_offset):
        for lo in range(0, len(positions), batch_rows):
            cols = decode_columns(buf, positions[lo : lo + batch_rows], file.start_offset)
            yield pa.RecordBatch.from_arrays(
                [
                    cols.topic,
                    cols.keys(),
                    cols.uniq_key(),
                    pa.array(cols.physical_offset, pa.int64()),
                    pa.array(cols.store_timestamp, pa.int64()),
                    pa.array(cols.sys_flag, pa.int32()),
                ],
                schema=INDEX_RECORDS_SCHEMA,
            )
            del cols


def index_records(
    commitlog_dir: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    lenient: bool = False,
    mapped_file_size: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches of at most ``batch_rows`` rows in :data:`INDEX_RECORDS_SCHEMA`, in log order.

    A batch never spans two files.  Damage raises :class:`CommitLogError` after the
    batches before it (strict), or is warned about and its file's rest skipped (lenient).
    """
    reader = CommitLogReader(commitlog_dir, mapped_file_size=mapped_file_size, lenient=lenient)
    return index_record_batches(reader, start_offset=start_offset, batch_rows=batch_rows)
