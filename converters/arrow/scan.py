"""Streaming scans: Arrow record batches straight over the memory map of native files.

Nothing is materialised beyond one batch: each batch decodes ``batch_rows`` records of a
file's region (big-endian to native) into fresh arrays, so a batch never pins the map and
a default-geometry file (19,999,999 entries) streams in ~20 batches of 1 Mi rows.

* :func:`scan_file` / :func:`scan_store` return a :class:`pyarrow.RecordBatchReader` of one
  table (``files``, ``slots`` or ``entries``) in exactly
  :data:`rmqarrow.converters.schema.SCHEMAS`'s
  schema, for one file or a whole store directory (files oldest first, as RocketMQ orders
  them).  DuckDB (``duckdb.sql("SELECT ... FROM reader")``), Polars and pyarrow consume
  such a reader directly; it can be read once.
* :func:`store_scanner` wraps the reader in a :class:`pyarrow.dataset.Scanner` with column
  projection and a filter expression, for ``pyarrow.dataset``-style use.
* :func:`iter_file_batches` is the generator underneath (one file, one table).

Rows and values equal :func:`rmqarrow.converters.arrow.tables.store_tables` (the reference
decoder); only
the batching differs.  The ``file_name`` column is built once per file and sliced, so it
costs one memcpy of ``len(name) * batch_rows`` bytes per file, not a Python list.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow.errors import InvalidValueError, StoreNotFoundError
from rmqarrow.format.layout import (
    Geometry,
    GeometryHint,
    MappedIndex,
    check_header,
    geometry_hint,
    map_regions,
)
from rmqarrow.format.naming import list_index_files

if TYPE_CHECKING:
    import pyarrow.dataset as pads

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "TABLES",
    "decode_entries",
    "files_batch",
    "iter_file_batches",
    "repeated_string",
    "scan_file",
    "scan_store",
    "source_paths",
    "store_scanner",
]

DEFAULT_BATCH_ROWS = 1 << 20
TABLES = ("files", "slots", "entries")


def repeated_string(value: str, n: int) -> pa.Array:
    """A ``string`` array of ``n`` copies of ``value``, built from two buffers (no list)."""
    raw = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    if offsets[-1] > np.iinfo(np.int32).max:
        return pa.array(np.full(n, value, dtype=object), pa.string())
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(raw * n)]
    )


def decode_entries(
    records: np.ndarray, first_position: int, begin_timestamp: int, hash_slot_num: int
) -> dict[str, np.ndarray]:
    """The native columns of a run of ENTRY_DTYPE records starting at ``first_position``."""
    key_hash = records["key_hash"].astype(np.int32)
    time_diff = records["time_diff"].astype(np.int32)
    with np.errstate(over="ignore"):
        store_ts = np.int64(begin_timestamp) + time_diff.astype(np.int64) * np.int64(1000)
    return {
        "position": np.arange(first_position, first_position + len(records), dtype=np.int32),
        "key_hash": key_hash,
        "slot": np.fmod(key_hash, np.int32(hash_slot_num)).astype(np.int32),
        "phy_offset": records["phy_offset"].astype(np.int64),
        "time_diff": time_diff,
        "store_timestamp": store_ts,
        "prev_index": records["prev_index"].astype(np.int32),
    }


def _check_table(table: str) -> pa.Schema:
    try:
        return SCHEMAS[table]
    except KeyError:
        raise InvalidValueError(
            f"unknown table {table!r}; expected one of {', '.join(TABLES)}"
        ) from None


def _check_batch_rows(batch_rows: int) -> None:
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InvalidValueError(f"batch_rows must be a positive int, got {batch_rows!r}")


def files_batch(m: MappedIndex, name: str) -> pa.RecordBatch:
    """The one-row ``files`` batch of a mapped file (its header and geometry)."""
    h = m.header[0]
    g = m.geometry
    values: list[int] = [
        int(h["begin_timestamp"]),
        int(h["end_timestamp"]),
        int(h["begin_phy_offset"]),
        int(h["end_phy_offset"]),
        int(h["hash_slot_count"]),
        int(h["index_count"]),
        g.hash_slot_num,
        g.index_num,
    ]
    cols: list[Any] = [[name]] + [[v] for v in values]
    return pa.RecordBatch.from_arrays(cols, schema=SCHEMAS["files"])


def iter_file_batches(
    path: str | os.PathLike[str],
    table: str,
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Yield one table of one native file as record batches of at most ``batch_rows`` rows.

    The geometry is ``geometry`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or ``hash_slot_num``/``index_num`` (not both forms);
    what is not given is fitted from the file's size."""
    schema = _check_table(table)
    _check_batch_rows(batch_rows)
    p = Path(path)
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    m = map_regions(p, geometry_of(p, hint), writable=False)
    try:
        check_header(p, m.geometry, m.header)
        name = p.name
        if table == "files":
            yield files_batch(m, name)
            return
        # the file's name once per row of the largest batch it can give (a tiny file's
        # batches are tiny: names for a million rows would cost more than the file)
        count = max(int(m.header[0]["index_count"]), 1)
        most = m.geometry.hash_slot_num if table == "slots" else count - 1
        names = repeated_string(name, max(min(batch_rows, most), 0))
        if table == "slots":
            for start in range(0, m.geometry.hash_slot_num, batch_rows):
                chunk = m.slots[start : start + batch_rows]
                idx = np.flatnonzero(chunk)
                if len(idx) == 0:
                    continue
                yield pa.RecordBatch.from_arrays(
                    [
                        names.slice(0, len(idx)),
                        (idx + start).astype(np.int32),
                        chunk[idx].astype(np.int32),
                    ],
                    schema=schema,
                )
            return
        h = m.header[0]
        begin = int(h["begin_timestamp"])  # count: as read above, the names fit it
        for start in range(1, count, batch_rows):
            stop = min(start + batch_rows, count)
            cols = decode_entries(m.entries[start:stop], start, begin, m.geometry.hash_slot_num)
            arrays = [names.slice(0, stop - start)] + [cols[f] for f in schema.names[1:]]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        m.close()


def source_paths(source: str | os.PathLike[str]) -> list[Path]:
    """The index files of a store directory (oldest first), or ``[source]`` for one file."""
    p = Path(source)
    return [p] if p.is_file() else list_index_files(p)


def _reader(
    paths: Sequence[Path],
    table: str,
    geometry: GeometryHint,
    batch_rows: int,
) -> pa.RecordBatchReader:
    schema = _check_table(table)
    _check_batch_rows(batch_rows)

    def batches() -> Iterator[pa.RecordBatch]:
        for p in paths:
            yield from iter_file_batches(p, table, geometry=geometry, batch_rows=batch_rows)

    return pa.RecordBatchReader.from_batches(schema, batches())


def scan_file(
    path: str | os.PathLike[str],
    table: str,
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> pa.RecordBatchReader:
    """A reader over one table of one native index file (geometry as for
    :func:`iter_file_batches`)."""
    p = Path(path)
    if not p.is_file():
        raise StoreNotFoundError(f"{p}: no such index file")
    return _reader([p], table, geometry_hint(geometry, hash_slot_num, index_num), batch_rows)


def scan_store(
    store_dir: str | os.PathLike[str],
    table: str,
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> pa.RecordBatchReader:
    """A reader over one table of every file of a store directory (or of one file), oldest
    file first (geometry as for :func:`iter_file_batches`)."""
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    return _reader(source_paths(store_dir), table, hint, batch_rows)


def store_scanner(
    store_dir: str | os.PathLike[str],
    table: str,
    *,
    columns: list[str] | None = None,
    filter: pads.Expression | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> pads.Scanner:
    """A one-shot :class:`pyarrow.dataset.Scanner` over :func:`scan_store` (projection and
    filter pushed into the stream), e.g. ``store_scanner(d, "entries",
    filter=pc.field("key_hash") == h).to_table()``."""
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    reader = scan_store(store_dir, table, geometry=hint, batch_rows=batch_rows)
    return pads.Scanner.from_batches(reader, columns=columns, filter=filter)
