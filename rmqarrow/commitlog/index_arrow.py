"""The fast path the index build needs: message records as Arrow batches.

``index_records`` yields the columns ``IndexService.buildIndex`` reads from a dispatch
request (topic, KEYS, UNIQ_KEY, commit-log offset, store timestamp, SYSFLAG) for every
message record in commit-log order, rollback records included: deciding what to index is
the index service's job.  Frames are checked by the same walk as the full reader; the
fields are decoded vectorized (see :mod:`.columns`), or, with numba, by one compiled pass
over the mapped bytes that splits the properties as ``string2messageProperties`` does and
copies the topic, KEYS and UNIQ_KEY bytes straight into Arrow buffers
(:func:`._walk_numba.index_fields`); both give the same batches (tested).

With ``tags`` the batches also carry the TAGS property (:data:`INDEX_RECORDS_TAGS_SCHEMA`),
which releases from 5.4 on index (:func:`rmqarrow.format.records.indexes_tags`); those are
decoded by the vectorized path.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

from rmqarrow._optional import compiled_kernels
from rmqarrow.commitlog._walk import Buf
from rmqarrow.commitlog.columns import decode_columns
from rmqarrow.commitlog.reader import CommitLogReader
from rmqarrow.errors import InvalidValueError

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "INDEX_RECORDS_SCHEMA",
    "INDEX_RECORDS_TAGS_SCHEMA",
    "index_record_batches",
    "index_records",
]

DEFAULT_BATCH_ROWS = 65_536
#: Batches decoded at once (the compiled pass releases the GIL).
THREADS = 2


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
#: :data:`INDEX_RECORDS_SCHEMA` and the TAGS property, for the rules of 5.4 and later.
INDEX_RECORDS_TAGS_SCHEMA = INDEX_RECORDS_SCHEMA.append(
    _field("tags", pa.string(), True, "TAGS property; null if absent")
)


def index_record_batches(
    reader: CommitLogReader,
    *,
    start_offset: int = 0,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    end_offset: int | None = None,
    tags: bool = False,
) -> Iterator[pa.RecordBatch]:
    """:func:`index_records` over an open reader (its ``lenient`` and ``problems`` apply);
    ``end_offset`` stops before the first file starting at or after it (one file a task)."""
    if batch_rows < 1:
        raise InvalidValueError(f"batch_rows must be >= 1, got {batch_rows}")
    kernels = None if tags else compiled_kernels("rmqarrow.commitlog._walk_numba")
    if kernels is not None:
        yield from _compiled_batches(kernels, reader, start_offset, batch_rows, end_offset)
        return
    for file, buf, positions in reader.positions(start_offset, end_offset):
        for lo in range(0, len(positions), batch_rows):
            part = positions[lo : lo + batch_rows]
            cols = decode_columns(buf, part, file.start_offset)
            arrays = [
                cols.topic,
                cols.keys(),
                cols.uniq_key(),
                pa.array(cols.physical_offset, pa.int64()),
                pa.array(cols.store_timestamp, pa.int64()),
                pa.array(cols.sys_flag, pa.int32()),
            ]
            if tags:
                arrays.append(cols.tags())
            yield pa.RecordBatch.from_arrays(
                arrays, schema=INDEX_RECORDS_TAGS_SCHEMA if tags else INDEX_RECORDS_SCHEMA
            )
            del cols


def _compiled_batches(
    kernels: ModuleType,
    reader: CommitLogReader,
    start_offset: int,
    batch_rows: int,
    end_offset: int | None,
) -> Iterator[pa.RecordBatch]:
    """The batches decoded by the compiled pass, ``THREADS`` at once, yielded in order.

    A file's batches are all done before the reader moves on (its mapping closes then).
    """
    with ThreadPoolExecutor(THREADS, thread_name_prefix="rmqarrow-records") as pool:
        for file, buf, positions in reader.positions(start_offset, end_offset):
            pending: deque[Future[pa.RecordBatch]] = deque()
            try:
                for lo in range(0, len(positions), batch_rows):
                    if len(pending) >= THREADS:
                        yield pending.popleft().result()
                    pending.append(
                        pool.submit(
                            _compiled_batch,
                            kernels,
                            buf,
                            positions[lo : lo + batch_rows],
                            file.start_offset,
                        )
                    )
                while pending:
                    yield pending.popleft().result()
            finally:
                for left in pending:  # the consumer stopped early: let them finish first
                    left.cancel()
                wait(pending)


def _compiled_batch(
    kernels: ModuleType, buf: Buf, positions: np.ndarray[Any, Any], file_start: int
) -> pa.RecordBatch:
    """One batch decoded by the compiled pass (every byte copied out of the mapping)."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    try:
        pos = np.ascontiguousarray(positions, dtype=np.int64)
        ints, texts = kernels.index_fields(arr, pos)
    finally:
        del arr  # no view of the mapping may outlive this call
    return pa.RecordBatch.from_arrays(
        [
            *(_strings(offsets, data) for offsets, data in texts),
            pa.array(pos + file_start, pa.int64()),
            pa.array(ints[:, 1], pa.int64()),
            pa.array(ints[:, 0].astype(np.int32), pa.int32()),
        ],
        schema=INDEX_RECORDS_SCHEMA,
    )


def _strings(offsets: np.ndarray[Any, Any], data: np.ndarray[Any, Any]) -> pa.Array:
    """A string array of the kernel's (offsets, data), where ``-1 - end`` marks a null;
    invalid UTF-8 is decoded with replacement characters, as Java's ``new String`` does."""
    n = offsets.size - 1
    valid = offsets[1:] >= 0
    nulls = n - int(np.count_nonzero(valid))
    bitmap = None
    if nulls:
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        offsets = np.where(offsets < 0, -1 - offsets, offsets)
    binary = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], nulls
    )
    try:
        return binary.cast(pa.large_string()).cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array(
            [
                None if b is None else b.decode("utf-8", errors="replace")
                for b in binary.to_pylist()
            ],
            pa.string(),
        )


def index_records(
    commitlog_dir: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    lenient: bool = False,
    mapped_file_size: int | None = None,
    tags: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Batches of at most ``batch_rows`` rows in :data:`INDEX_RECORDS_SCHEMA`, in log order
    (:data:`INDEX_RECORDS_TAGS_SCHEMA` with ``tags``).

    A batch never spans two files.  Damage raises :class:`CommitLogError` after the
    batches before it (strict), or is warned about and its file's rest skipped (lenient).
    """
    reader = CommitLogReader(commitlog_dir, mapped_file_size=mapped_file_size, lenient=lenient)
    return index_record_batches(reader, start_offset=start_offset, batch_rows=batch_rows, tags=tags)
