"""Export RocketMQ's RocksDB message index (RIP-82) to a Parquet dataset, and read one back.

Layout (a dataset kind of its own), one Delta table per table::

    OUT/rocksdb_records/      every record, RocksDB order; its commit pins the run
    OUT/rocksdb_bookkeeping/  lastOffsetPy, lastStoreTimeStamp

The run's record (format "rmqarrow-rocksdb-dataset", source, bookkeeping, row counts) is
in the pin commit (:mod:`~rmqarrow.converters.parquet.kind_dataset`); a dataset of the
older layout (``_rmqarrow.json``) is still read, and ``rmqarrow convert`` makes it Delta
tables.  The schemas are documented field by field in :mod:`rmqarrow.converters.schema`
(:data:`~rmqarrow.converters.schema.ROCKSDB_SCHEMAS`).  Records are streamed from the
database into the file in batches (memory stays flat for any size).  The source
is opened read-only (:meth:`rmqarrow.rocksdb.RocksDBIndex.open`): the broker's directory is
left byte for byte as it was.
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rmqarrow._lock import Wait
from rmqarrow._version import __version__
from rmqarrow.converters.parquet.kind_dataset import export_kind
from rmqarrow.converters.parquet.kind_read import (
    KIND_TABLES,
    kind_files,
    kind_manifest,
    kind_table,
)
from rmqarrow.converters.schema import (
    ROCKSDB_RECORDS_SCHEMA,
    ROCKSDB_SCHEMA_VERSION,
)
from rmqarrow.format.detect import ROCKSDB_DATASET_FORMAT, detect
from rmqarrow.rocksdb import RocksDBIndex
from rmqarrow.rocksdb.arrow import (
    RocksDBTables,
    bookkeeping_table,
    records_batches,
    rocksdb_tables,
)

__all__ = [
    "ROCKSDB_TABLES",
    "export_rocksdb",
    "read_rocksdb_dataset",
    "rocksdb_dataset_files",
    "rocksdb_source_tables",
]

ROCKSDB_TABLES = KIND_TABLES[ROCKSDB_DATASET_FORMAT]
_PART = "part-00000.parquet"


def export_rocksdb(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    wait: Wait = False,
    batch_rows: int = 65_536,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Export the database at ``source`` (or a broker root's) to ``out`` (Delta tables,
    one pinned run: :func:`~rmqarrow.converters.parquet.kind_dataset.export_kind`,
    ``overwrite`` a new version of an existing one); the manifest.

    ``progress`` is called with the records written so far after every batch."""
    started = time.perf_counter()
    with RocksDBIndex.open(source) as index:

        def write(staging: Path) -> dict[str, Any]:
            rows = 0
            (staging / "rocksdb_records").mkdir()
            with pq.ParquetWriter(
                staging / "rocksdb_records" / _PART, ROCKSDB_RECORDS_SCHEMA, compression="zstd"
            ) as writer:
                for batch in records_batches(index, batch_rows):
                    writer.write_batch(batch)
                    rows += batch.num_rows
                    if progress is not None:
                        progress(rows)
            book = bookkeeping_table(index)
            (staging / "rocksdb_bookkeeping").mkdir()
            pq.write_table(book, staging / "rocksdb_bookkeeping" / _PART)
            return {
                "format": ROCKSDB_DATASET_FORMAT,
                "layout_version": 1,
                "schema_version": ROCKSDB_SCHEMA_VERSION,
                # the writer as datasets have recorded it from the first release on
                "writer": f"rmqarrow {__version__} rmqarrow.converters.parquet.rocksdb_export",
                "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "source": {"path": str(index.path.absolute())},
                "bookkeeping": {r["name"]: r["value"] for r in book.to_pylist()},
                "tables": {
                    "rocksdb_records": {"rows": rows},
                    "rocksdb_bookkeeping": {"rows": book.num_rows},
                },
                "seconds": round(time.perf_counter() - started, 3),
            }

        return export_kind(out, ROCKSDB_DATASET_FORMAT, write, overwrite=overwrite, wait=wait)


def read_rocksdb_dataset(path: Path) -> RocksDBTables:
    """Both tables of an exported dataset, as its pinned run (or its manifest) has them
    (checked: format, schema version, rows)."""
    manifest = kind_manifest(path, ROCKSDB_DATASET_FORMAT)
    return RocksDBTables(*(kind_table(path, t, manifest) for t in ROCKSDB_TABLES))


def rocksdb_dataset_files(path: Path) -> tuple[list[Path], pa.Table]:
    """The records table's data files (what an engine reads itself) and the bookkeeping
    table, both of one snapshot of the dataset at ``path``."""
    manifest = kind_manifest(path, ROCKSDB_DATASET_FORMAT)
    return (
        kind_files(path, "rocksdb_records", manifest),
        kind_table(path, "rocksdb_bookkeeping", manifest),
    )


def rocksdb_source_tables(source: str | os.PathLike[str]) -> RocksDBTables:
    """The tables of an exported dataset, or of a database read now (in memory)."""
    src = Path(source)
    if detect(src).kind == "rocksdb_dataset":
        return read_rocksdb_dataset(src)
    return rocksdb_tables(src)
