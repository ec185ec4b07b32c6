"""RocketMQ's RocksDB message index as Arrow: ``rocksdb_records`` streamed in RocksDB
order, ``rocksdb_bookkeeping`` (schemas: :data:`~rmqarrow.converters.schema.ROCKSDB_SCHEMAS`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from rmqarrow.converters.schema import ROCKSDB_BOOKKEEPING_SCHEMA, ROCKSDB_RECORDS_SCHEMA

from rmqarrow.rocksdb import BOOKKEEPING_KEYS, RocksDBIndex, decode_key

__all__ = ["RocksDBTables", "bookkeeping_table", "records_batches", "records_reader",
           "rocksdb_tables"]

_BATCH = 65_536
_LONG = 8


def _batch(rows: list[tuple[bytes, bytes]]) -> pa.RecordBatch:
    cols: dict[str, list[object]] = {f.name: [] for f in ROCKSDB_RECORDS_SCHEMA}
    for k, v in rows:
        d = decode_key(k)
        cols["hour"].append(d.hour)
        cols["topic"].append(d.topic)
        cols["type"].append(d.index_type)
        cols["key"].append(d.key)
        cols["uniq_key"].append(d.uniq_key)
        cols["offset"].append(d.offset)
        cols["store_time"].append(int.from_bytes(v, "big", signed=True)
                                  if len(v) == _LONG else None)
        cols["key_tail"].append(d.key_tail)
    return pa.RecordBatch.from_pydict(cols, schema=ROCKSDB_RECORDS_SCHEMA)


def records_batches(index: RocksDBIndex, batch_rows: int = _BATCH) -> Iterator[pa.RecordBatch]:
    """The ``default`` family's records as batches, in RocksDB order."""
    rows: list[tuple[bytes, bytes]] = []
    for k, v in index.iter_pairs():
        if k in BOOKKEEPING_KEYS:
            continue
        rows.append((k, v))
        if len(rows) >= batch_rows:
            yield _batch(rows)
            rows = []
    if rows:
        yield _batch(rows)


def records_reader(index: RocksDBIndex, batch_rows: int = _BATCH) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(ROCKSDB_RECORDS_SCHEMA,
                                             records_batches(index, batch_rows))


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
