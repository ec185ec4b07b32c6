"""Export RocketMQ's RocksDB message index (RIP-82) to a Parquet dataset, and read one back.

Layout (a dataset kind of its own)::

    OUT/_rmqarrow.json                          manifest, format "rmqarrow-rocksdb-dataset"
    OUT/rocksdb_records/part-00000.parquet      every record, RocksDB order
    OUT/rocksdb_bookkeeping/part-00000.parquet  lastOffsetPy, lastStoreTimeStamp

The schemas are documented field by field in :mod:`rmqarrow.converters.schema`
(:data:`~rmqarrow.converters.schema.ROCKSDB_SCHEMAS`).  Records are streamed from the
database into the file in batches (memory stays flat for any size); the dataset appears
whole by one rename (:func:`~rmqarrow.converters.parquet.atomic.atomic_dir`).  The source
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

import pyarrow.parquet as pq
from rmqarrow.converters.arrow.rocksdb import (
    RocksDBTables,
    bookkeeping_table,
    records_batches,
    rocksdb_tables,
)
from rmqarrow.converters.parquet.atomic import atomic_dir
from rmqarrow.converters.parquet.manifest import load_manifest_json, write_manifest
from rmqarrow.converters.schema import (
    ROCKSDB_RECORDS_SCHEMA,
    ROCKSDB_SCHEMA_VERSION,
)

from rmqarrow._lock import Wait
from rmqarrow.errors import DatasetError
from rmqarrow.format.detect import ROCKSDB_DATASET_FORMAT, detect
from rmqarrow.rocksdb import RocksDBIndex

__all__ = ["ROCKSDB_TABLES", "export_rocksdb", "rocksdb_source_tables"]

ROCKSDB_TABLES = ("rocksdb_records", "rocksdb_bookkeeping")
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
    """Export the database at ``source`` (or a broker root's) to ``out``; the manifest.

    ``progress`` is called with the records written so far after every batch."""
    from rmqarrow._version import __version__

    started = time.perf_counter()
    with (
        RocksDBIndex.open(source) as index,
        atomic_dir(out, overwrite=overwrite, wait=wait) as staging,
    ):
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
        manifest: dict[str, Any] = {
            "format": ROCKSDB_DATASET_FORMAT,
            "layout_version": 1,
            "schema_version": ROCKSDB_SCHEMA_VERSION,
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
        write_manifest(staging, manifest)
    return manifest


def read_rocksdb_dataset(path: Path) -> RocksDBTables:
    """Both tables of an exported dataset (checked: its manifest and schema version)."""
    manifest = load_manifest_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != ROCKSDB_DATASET_FORMAT:
        raise DatasetError(
            f"{path}: not a RocksDB-index dataset (format "
            f"{ROCKSDB_DATASET_FORMAT!r} expected in its manifest)"
        )
    if manifest.get("schema_version") != ROCKSDB_SCHEMA_VERSION:
        raise DatasetError(
            f"{path}: schema version {manifest.get('schema_version')!r}, "
            f"this rmqarrow reads {ROCKSDB_SCHEMA_VERSION!r}; export it again"
        )
    return RocksDBTables(
        pq.read_table(path / "rocksdb_records"), pq.read_table(path / "rocksdb_bookkeeping")
    )


def rocksdb_source_tables(source: str | os.PathLike[str]) -> RocksDBTables:
    """The tables of an exported dataset, or of a database read now (in memory)."""
    src = Path(source)
    if detect(src).kind == "rocksdb_dataset":
        return read_rocksdb_dataset(src)
    return rocksdb_tables(src)
