"""Native index files as Arrow record batches, split into position ranges (no pyspark).

The Spark data source and the distributed exporter both cut a store into *pieces*: one
per file for ``files`` and ``slots``, one per range of entry positions for ``entries``
(big files are split, so many cores read one file).  A piece is a small picklable value;
:func:`piece_batches` maps its file with :func:`rmqarrow.format.layout.map_regions` and turns
the numpy views into batches in the schemas of :mod:`rmqarrow.converters.schema`, computing every
column with :mod:`rmqarrow.converters.arrow.scan`'s decoders (so values equal
:func:`rmqarrow.converters.arrow.tables.file_tables`, the reference).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from rmqarrow.converters.arrow.scan import decode_entries, iter_file_batches, repeated_string
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.converters.spark.pushdown import Pushdown, chain_positions

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.layout import Geometry, GeometryHint, MappedIndex, check_header, map_regions
from rmqarrow.format.naming import list_index_files

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_PIECE_ROWS",
    "TABLES",
    "Piece",
    "piece_batches",
    "plan_pieces",
]

TABLES = ("files", "slots", "entries")
DEFAULT_PIECE_ROWS = 2_500_000
DEFAULT_BATCH_ROWS = 1 << 17


@dataclass(frozen=True)
class Piece:
    """Rows ``start .. stop-1`` of one table of one file (positions for ``entries``)."""

    path: str
    table: str
    hash_slot_num: int
    index_num: int
    start: int = 0
    stop: int = 0
    pushdown: Pushdown | None = None

    @property
    def geometry(self) -> Geometry:
        return Geometry(self.hash_slot_num, self.index_num)


def _check_table(table: str) -> str:
    if table not in TABLES:
        raise InvalidValueError(f"unknown table {table!r}; expected one of {', '.join(TABLES)}")
    return table


def _index_count(mapped: MappedIndex) -> int:
    check_header(mapped.path, mapped.geometry, mapped.header)
    return int(mapped.header[0]["index_count"])


def plan_pieces(
    store_dir: str | os.PathLike[str],
    table: str = "entries",
    *,
    geometry: GeometryHint = GeometryHint.NONE,
    piece_rows: int = DEFAULT_PIECE_ROWS,
    pushdown: Pushdown | None = None,
) -> list[Piece]:
    """The pieces of ``table`` over every index file of ``store_dir`` (oldest first).

    ``store_dir`` may also be a single index file.
    ``entries`` gets one piece per ``piece_rows`` positions of each file (at least one per
    file, even an empty one); ``files`` and ``slots`` one piece per file.  Geometry and
    header are checked here, so a bad file fails before any task runs.  ``pushdown``
    (:mod:`rmqarrow.converters.spark.pushdown`) skips files by name, clips entries to its
    position range, and reads wanted slots' chains as one piece per file.
    """
    if pushdown is not None and pushdown.empty:
        pushdown = None
    _check_table(table)
    if piece_rows < 1:
        raise InvalidValueError(f"piece_rows must be a positive int, got {piece_rows!r}")
    pieces: list[Piece] = []
    source = Path(store_dir).absolute()  # executors resolve paths in their own work dirs
    for path in [source] if source.is_file() else list_index_files(source):
        if pushdown is not None and not pushdown.keeps_file(path.name):
            continue
        fitted = geometry_of(path, geometry)
        mapped = map_regions(path, fitted, writable=False)
        try:
            count = max(_index_count(mapped), 1)
        finally:
            mapped.close()
        base = Piece(str(path), table, fitted.hash_slot_num, fitted.index_num, pushdown=pushdown)
        if table != "entries":
            pieces.append(base)
            continue
        first, end = 1, count
        if pushdown is not None:
            if pushdown.pos_min is not None:
                first = max(first, pushdown.pos_min)
            if pushdown.pos_max is not None:
                end = min(end, pushdown.pos_max + 1)
            if end <= first:
                continue
            if pushdown.chain_slots(fitted.hash_slot_num) is not None:
                piece_rows = max(count, 1)  # chains are short: one piece per file
        starts = range(first, end, piece_rows) if count > 1 else range(1, 2)
        for start in starts:
            pieces.append(
                Piece(
                    base.path,
                    table,
                    base.hash_slot_num,
                    base.index_num,
                    start,
                    min(start + piece_rows, end),
                    pushdown,
                )
            )
    return pieces


def piece_batches(
    piece: Piece,
    *,
    schema: pa.Schema | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Decode one piece into record batches of at most ``batch_rows`` rows.

    ``schema`` defaults to the table's schema in :mod:`rmqarrow.converters.schema`; a caller may
    pass the same columns with other nullability/metadata (Spark wants nullable fields).
    An entries piece is clipped to the file's header ``index_count``.
    """
    table = _check_table(piece.table)
    schema = SCHEMAS[table] if schema is None else schema
    if table != "entries":
        for batch in iter_file_batches(
            piece.path,
            table,
            geometry=piece.geometry,
            batch_rows=batch_rows,
        ):
            yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)
        return
    path = Path(piece.path)
    mapped = map_regions(path, piece.geometry, writable=False)
    try:
        count = max(_index_count(mapped), 1)
        begin = int(mapped.header[0]["begin_timestamp"])
        stop = min(piece.stop, count)
        names = repeated_string(path.name, min(batch_rows, max(stop - piece.start, 0)))
        hsn = mapped.geometry.hash_slot_num
        push = piece.pushdown
        chains = _chain_union(mapped, count, push) if push is not None else None
        if chains is not None:
            chains = chains[(chains >= max(piece.start, 1)) & (chains < stop)]
            for i in range(0, len(chains), batch_rows):
                positions = chains[i : i + batch_rows]
                cols = decode_entries(mapped.entries[positions], 0, begin, hsn)
                cols["position"] = positions.astype(np.int32)
                yield _entries_batch(cols, path.name, names, schema, push)
            return
        for start in range(max(piece.start, 1), stop, batch_rows):
            end = min(start + batch_rows, stop)
            cols = decode_entries(mapped.entries[start:end], start, begin, hsn)
            if push is None:
                arrays = [names.slice(0, end - start)] + [cols[f] for f in schema.names[1:]]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            else:
                yield _entries_batch(cols, path.name, names, schema, push)
    finally:
        mapped.close()


def _chain_union(mapped: MappedIndex, count: int, push: Pushdown) -> np.ndarray | None:
    """Ascending positions on the wanted slots' chains; None: read the positions in order."""
    wanted = push.chain_slots(mapped.geometry.hash_slot_num)
    if wanted is None:
        return None
    parts = []
    for slot in wanted:
        chain = chain_positions(mapped.slots, mapped.entries, count, slot)
        if chain is None:
            return None  # a damaged chain: scan this file (the masks still apply)
        parts.append(chain)
    if not parts:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(parts))


def _entries_batch(
    cols: dict[str, np.ndarray],
    name: str,
    names: pa.Array,
    schema: pa.Schema,
    push: Pushdown | None,
) -> pa.RecordBatch:
    """Decoded entry columns as a batch, keeping only rows the pushed filters may pass."""
    keep = push.mask(cols) if push is not None else None
    if keep is not None:
        cols = {k: v[keep] for k, v in cols.items()}
    n = len(cols["position"])
    if n > len(names):
        names = repeated_string(name, n)
    arrays = [names.slice(0, n)] + [cols[f] for f in schema.names[1:]]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
