"""RocketMQ's RocksDB message index as Arrow: ``rocksdb_records`` streamed in RocksDB
order, ``rocksdb_bookkeeping`` (schemas: :data:`~rmqarrow.converters.schema.ROCKSDB_SCHEMAS`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqarrow.converters.schema import ROCKSDB_BOOKKEEPING_SCHEMA, ROCKSDB_RECORDS_SCHEMA
from rmqarrow.rocksdb import BOOKKEEPING_KEYS, RocksDBIndex, decode_key

__all__ = [
    "RocksDBTables",
    "bookkeeping_table",
    "records_batches",
    "records_reader",
    "rocksdb_tables",
]

_BATCH = 65_536
_LONG = 8
_MIN_RECORD = 2 * _LONG + len("@t@U@u@")
HOUR_MS = 3_600_000


def _slow_batch(rows: list[tuple[bytes, bytes]]) -> pa.RecordBatch:
    """The reference decoder, one key at a time (:func:`rmqarrow.rocksdb.decode_key`)."""
    cols: dict[str, list[object]] = {f.name: [] for f in ROCKSDB_RECORDS_SCHEMA}
    for k, v in rows:
        d = decode_key(k)
        cols["hour"].append(d.hour)
        cols["topic"].append(d.topic)
        cols["type"].append(d.index_type)
        cols["key"].append(d.key)
        cols["uniq_key"].append(d.uniq_key)
        cols["offset"].append(d.offset)
        cols["store_time"].append(
            int.from_bytes(v, "big", signed=True) if len(v) == _LONG else None
        )
        cols["key_tail"].append(d.key_tail)
    return pa.RecordBatch.from_pydict(cols, schema=ROCKSDB_RECORDS_SCHEMA)


def _longs(data: np.ndarray[Any, Any], starts: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The big-endian int64 at each start of ``data``."""
    idx = starts.astype(np.int64)[:, None] + np.arange(_LONG)
    return np.ascontiguousarray(data[idx]).view(">i8").ravel().astype(np.int64)


def _offsets(arr: pa.Array) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    bufs = arr.buffers()
    off = np.frombuffer(bufs[1], np.int32, len(arr) + 1, arr.offset * 4)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return off, data


def _binary(items: list[bytes]) -> pa.Array:
    """A binary array built from one joined buffer (faster than converting item by item)."""
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, items), np.int64, len(items)), out=offsets[1:])
    if offsets[-1] >= 1 << 31:  # beyond 32-bit offsets: Arrow's own conversion says so
        return pa.array(items, pa.binary())
    offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(
        pa.binary(), len(items), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(items))]
    )


def _fast_batch(keys: list[bytes], values: list[bytes]) -> pa.RecordBatch | None:
    """The same batch decoded column-wise, or None when a key needs the reference decoder
    (a short key, a value not 8 bytes, not UTF-8, '@' inside a field, a bad hour)."""
    karr, varr = _binary(keys), _binary(values)
    koff, kdata = _offsets(karr)
    voff, vdata = _offsets(varr)
    if (np.diff(koff) < _MIN_RECORD).any() or (np.diff(voff) != _LONG).any():
        return None
    hour = _longs(kdata, koff[:-1])
    if ((hour <= 0) | (hour % HOUR_MS != 0)).any():
        return None
    try:
        middle = pc.binary_slice(karr, _LONG, -_LONG).cast(pa.string())
    except pa.ArrowInvalid:
        return None
    parts = pc.split_pattern(middle, "@")
    count = pc.list_value_length(parts)
    if pc.min(count).as_py() < 5:  # the parts read below must exist
        return None
    kind, topic, last = (pc.list_element(parts, i) for i in (2, 1, 4))
    is_u = pc.equal(kind, "U")
    ok = pc.and_(
        pc.equal(count, pc.if_else(is_u, 5, 6)),
        pc.and_(pc.starts_with(middle, "@"), pc.ends_with(middle, "@")),
    )
    ok = pc.and_(ok, pc.and_(pc.is_in(kind, pa.array(["K", "T", "U"])), pc.not_equal(topic, "")))
    if not pc.all(ok).as_py():
        return None
    third = pc.list_element(parts, 3)
    null = pa.scalar(None, pa.string())
    return pa.RecordBatch.from_arrays(
        [
            pa.array(hour, pa.int64()),
            topic,
            kind,
            pc.if_else(is_u, null, third),
            pc.if_else(is_u, third, last),
            pa.array(_longs(kdata, koff[1:] - _LONG), pa.int64()),
            pa.array(_longs(vdata, voff[:-1]), pa.int64()),
            pc.binary_slice(karr, _LONG, 1 << 30),
        ],
        schema=ROCKSDB_RECORDS_SCHEMA,
    )


def _batch(keys: list[bytes], values: list[bytes]) -> pa.RecordBatch:
    fast = _fast_batch(keys, values)
    return fast if fast is not None else _slow_batch(list(zip(keys, values, strict=True)))


def records_batches(index: RocksDBIndex, batch_rows: int = _BATCH) -> Iterator[pa.RecordBatch]:
    """The ``default`` family's records as batches, in RocksDB order (decoded column-wise,
    a batch holding an unusual key by the reference decoder: the same values)."""
    pairs = index.iter_pairs()
    skip = set(BOOKKEEPING_KEYS)
    while chunk := list(islice(pairs, batch_rows)):
        keys, values = (list(c) for c in zip(*chunk, strict=True))
        if skip.intersection(keys):  # the two bookkeeping keys: not records
            kept = [(k, v) for k, v in chunk if k not in skip]
            if not kept:
                continue
            keys, values = [k for k, _ in kept], [v for _, v in kept]
        yield _batch(keys, values)


def records_reader(index: RocksDBIndex, batch_rows: int = _BATCH) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(
        ROCKSDB_RECORDS_SCHEMA, records_batches(index, batch_rows)
    )


def bookkeeping_table(index: RocksDBIndex) -> pa.Table:
    names, values = [], []
    for k in BOOKKEEPING_KEYS:
        raw = index.get(k)
        if raw is None:
            continue
        names.append(k.decode())
        values.append(int.from_bytes(raw, "big", signed=True) if len(raw) == _LONG else None)
    return pa.table({"name": names, "value": values}, schema=ROCKSDB_BOOKKEEPING_SCHEMA)


@dataclass(frozen=True)
class RocksDBTables:
    records: pa.Table
    bookkeeping: pa.Table


def rocksdb_tables(path: str | os.PathLike[str]) -> RocksDBTables:
    """Both tables of the database at ``path`` (or a broker root), in memory."""
    with RocksDBIndex.open(path) as index:
        return RocksDBTables(records_reader(index).read_all(), bookkeeping_table(index))
