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

import pyarrow as pa
from rmqarrow.converters.arrow.scan import decode_entries, iter_file_batches, repeated_string
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.layout import Geometry, MappedIndex, check_header, map_regions
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
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    piece_rows: int = DEFAULT_PIECE_ROWS,
) -> list[Piece]:
    """The pieces of ``table`` over every index file of ``store_dir`` (oldest first).

    ``store_dir`` may also be a single index file.
    ``entries`` gets one piece per ``piece_rows`` positions of each file (at least one per
    file, even an empty one); ``files`` and ``slots`` one piece per file.  Geometry and
    header are checked here, so a bad file fails before any task runs.
    """
    _check_table(table)
    if piece_rows < 1:
        raise InvalidValueError(f"piece_rows must be a positive int, got {piece_rows!r}")
    pieces: list[Piece] = []
    source = Path(store_dir).absolute()  # executors resolve paths in their own work dirs
    for path in [source] if source.is_file() else list_index_files(source):
        geometry = geometry_of(path, hash_slot_num, index_num)
        mapped = map_regions(path, geometry, writable=False)
        try:
            count = max(_index_count(mapped), 1)
        finally:
            mapped.close()
        base = Piece(str(path), table, geometry.hash_slot_num, geometry.index_num)
        if table != "entries":
            pieces.append(base)
            continue
        starts = range(1, count, piece_rows) if count > 1 else range(1, 2)
        for start in starts:
            pieces.append(
                Piece(base.path, table, base.hash_slot_num, base.index_num, start,
                      min(start + piece_rows, count))
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
            piece.path, table, hash_slot_num=piece.hash_slot_num, index_num=piece.index_num,
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
        for start in range(max(piece.start, 1), stop, batch_rows):
            end = min(start + batch_rows, stop)
            cols = decode_entries(
                mapped.entries[start:end], start, begin, mapped.geometry.hash_slot_num
            )
            arrays = [names.slice(0, end - start)] + [cols[f] for f in schema.names[1:]]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        mapped.close()
