"""Index keys of many message records at once, the vectorized :func:`records.index_keys`.

``IndexService.buildIndex`` puts, for each record, ``topic#UNIQ_KEY`` (when present and
non-empty) and then ``topic#token`` for every non-empty token of KEYS split on single
spaces; a table with a ``tags`` column (given only to follow 5.4+ rules, see
:mod:`rmqarrow.format.records`) then puts ``topic#T#tags`` for each non-empty tags.
:func:`expand_keys` does this for a whole table with ``pyarrow.compute`` (utf8
split, list flatten, element-wise join) and a scatter that puts each record's keys in
that order without sorting.  The columns of a record table are read by
:func:`record_columns`, which validates them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqarrow.errors import InvalidKeyError, InvalidValueError
from rmqarrow.format.records import (
    KEY_SEPARATOR,
    TAG_INDEX_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)

__all__ = ["ExpandedKeys", "RecordColumns", "expand_keys", "record_columns"]


@dataclass(frozen=True)
class RecordColumns:
    """The numeric columns of a record table as int64 numpy arrays, and the rollbacks."""

    commit_log_offset: np.ndarray
    store_timestamp: np.ndarray
    rollback: np.ndarray  # bool


@dataclass(frozen=True)
class ExpandedKeys:
    """The index keys of a record table in put order, and the record each came from."""

    keys: pa.Array  # string: topic#key
    record: np.ndarray  # int64, non-decreasing
    counts: np.ndarray  # int64 per record: how many keys it puts (0 for rollbacks)


def _column(records: pa.Table | pa.RecordBatch, name: str) -> pa.Array | None:
    if name not in records.schema.names:
        return None
    col = records.column(name)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if isinstance(col, pa.ChunkedArray):  # no chunks at all
            col = pa.array([], col.type)
    return col


def _int64_column(records: pa.Table | pa.RecordBatch, name: str, default: int | None) -> np.ndarray:
    col = _column(records, name)
    n = records.num_rows
    if col is None:
        if default is None:
            raise InvalidValueError(f"record table: missing column {name!r}")
        return np.full(n, default, dtype=np.int64)
    if not pa.types.is_integer(col.type):
        raise InvalidValueError(f"record table: column {name!r} must be integers, got {col.type}")
    if col.null_count:
        if default is None:
            raise InvalidValueError(
                f"record table: column {name!r} holds {col.null_count} nulls; every record "
                "needs one"
            )
        col = col.fill_null(default)
    if pa.types.is_uint64(col.type) and len(col) and pc.max(col).as_py() > 2**63 - 1:
        raise InvalidValueError(f"record table: column {name!r} holds values beyond int64")
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)


def record_columns(records: pa.Table | pa.RecordBatch) -> RecordColumns:
    """Offsets, timestamps and the rollback mask (a null or missing sys_flag is 0)."""
    offsets = _int64_column(records, "commit_log_offset", None)
    stamps = _int64_column(records, "store_timestamp", None)
    flags = _int64_column(records, "sys_flag", 0)
    rollback = (flags & TRANSACTION_TYPE_MASK) == TRANSACTION_ROLLBACK_TYPE
    return RecordColumns(offsets, stamps, rollback)


def _string_column(records: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
    col = _column(records, name)
    n = records.num_rows
    if col is None:
        return pa.nulls(n, pa.large_string())
    if pa.types.is_null(col.type):
        return pa.nulls(n, pa.large_string())
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        raise InvalidKeyError(f"record table: column {name!r} must be strings, got {col.type}")
    return col.cast(pa.large_string())


def expand_keys(records: pa.Table | pa.RecordBatch, skip: np.ndarray | None = None) -> ExpandedKeys:
    """The keys ``buildIndex`` puts for each record (none for records where ``skip``)."""
    n = records.num_rows
    topic = _string_column(records, "topic")
    uniq = _string_column(records, "uniq_key")
    keys = _string_column(records, "keys")
    live = np.ones(n, dtype=bool) if skip is None else ~np.asarray(skip, dtype=bool)

    u_valid = np.asarray(pc.fill_null(pc.greater(pc.binary_length(uniq), 0), False), dtype=bool)
    u_valid &= live
    u_records = np.flatnonzero(u_valid)

    split = pc.split_pattern(keys, KEY_SEPARATOR)
    tokens = pc.list_flatten(split)
    t_records = np.asarray(pc.list_parent_indices(split), dtype=np.int64)
    t_keep = np.asarray(pc.greater(pc.binary_length(tokens), 0), dtype=bool)
    t_keep &= live[t_records]
    if not t_keep.all():
        keep_idx = np.flatnonzero(t_keep)
        tokens = tokens.take(keep_idx)
        t_records = t_records[keep_idx]

    tags = _string_column(records, "tags")
    g_valid = np.asarray(pc.fill_null(pc.greater(pc.binary_length(tags), 0), False), dtype=bool)
    g_valid &= live
    g_records = np.flatnonzero(g_valid)

    u_count = u_valid.astype(np.int64)
    t_count = np.bincount(t_records, minlength=n).astype(np.int64)
    counts = u_count + t_count + g_valid.astype(np.int64)
    start = np.cumsum(counts) - counts
    total = int(counts.sum())
    # uniq key first, then the tokens in order: scatter sources into place
    source = np.empty(total, dtype=np.int64)
    source[start[u_records]] = np.arange(u_records.size)
    t_first = np.cumsum(t_count) - t_count
    rank = np.arange(t_records.size) - t_first[t_records]
    source[start[t_records] + u_count[t_records] + rank] = u_records.size + np.arange(
        t_records.size
    )
    # the tag entry last: its value is "T#tags", joined to the topic like the others
    g_first = u_records.size + t_records.size
    source[start[g_records] + counts[g_records] - 1] = g_first + np.arange(g_records.size)
    tag_values = pc.binary_join_element_wise(
        pa.scalar(TAG_INDEX_TYPE, pa.large_string()),
        tags.take(g_records),
        pa.scalar("#", pa.large_string()),
    )
    values = pa.concat_arrays([uniq.take(u_records), tokens.cast(pa.large_string()), tag_values])
    record = np.repeat(np.arange(n, dtype=np.int64), counts)
    sep = pa.scalar("#", pa.large_string())
    full = pc.binary_join_element_wise(topic.take(record), values.take(source), sep)
    if full.null_count:
        bad = int(record[np.flatnonzero(np.asarray(full.is_null()))[0]])
        raise InvalidKeyError(f"record {bad}: a record's topic must be str, got None")
    return ExpandedKeys(full, record, counts)
