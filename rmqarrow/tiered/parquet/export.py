"""Export tiered index files (RocketMQ RIP-65, both forms) to a Parquet dataset.

Layout (a dataset kind of its own; the classic ``files/ slots/ entries/`` one is untouched),
one Delta table per table::

    OUT/tiered_files/   one row per file   (TIERED_FILES_SCHEMA); its commit pins the run
    OUT/tiered_slots/   non-zero slots      (TIERED_SLOTS_SCHEMA)
    OUT/tiered_items/   every item          (TIERED_ITEMS_SCHEMA)

The run's record (format "rmqarrow-tiered-dataset", source, row counts) is in the pin
commit (:mod:`~rmqarrow.converters.parquet.kind_dataset`); a dataset of the older layout
(``_rmqarrow.json``) is still read, and ``rmqarrow convert`` makes it Delta tables.  The
schemas are documented field by field in :mod:`rmqarrow.converters.schema`, and
:mod:`~rmqarrow.tiered.parquet.importer` rebuilds every file byte for byte.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from rmqarrow._lock import Wait
from rmqarrow._version import __version__
from rmqarrow.converters.parquet.kind_dataset import export_kind
from rmqarrow.converters.parquet.kind_read import KIND_TABLES
from rmqarrow.converters.schema import TIERED_SCHEMA_VERSION
from rmqarrow.format.detect import TIERED_DATASET_FORMAT
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.tiered.arrow.tables import TieredTables, tiered_tables

__all__ = ["TIERED_FORMAT", "TIERED_TABLES", "export_tiered", "write_tiered_dataset"]

TIERED_FORMAT = TIERED_DATASET_FORMAT
TIERED_TABLES = KIND_TABLES[TIERED_DATASET_FORMAT]


def write_tiered_dataset(tables: TieredTables, out: Path, source: Path) -> dict[str, Any]:
    """Write the parts of ``tables`` into the (empty) folder ``out``; returns the
    manifest but its parts list."""
    by_name = {
        "tiered_files": tables.files,
        "tiered_slots": tables.slots,
        "tiered_items": tables.items,
    }
    for name, table in by_name.items():
        (out / name).mkdir()
        pq.write_table(table, out / name / "part-00000.parquet", compression="zstd")
    manifest: dict[str, Any] = {
        "format": TIERED_FORMAT,
        "layout_version": 1,
        "schema_version": TIERED_SCHEMA_VERSION,
        # the writer as datasets have recorded it from the first release on
        "writer": f"rmqarrow {__version__} rmqarrow.converters.parquet.tiered_export",
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "source": {
            "path": str(source.absolute()),
            "files": [
                {
                    "file_name": r["file_name"],
                    "relative_path": r["relative_path"],
                    "form": r["form"],
                    "size": r["file_size"],
                }
                for r in tables.file_rows()
            ],
        },
        "tables": {name: {"rows": t.num_rows} for name, t in by_name.items()},
    }
    return manifest


def export_tiered(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    wait: Wait = False,
) -> dict[str, Any]:
    """Export a tiered file or folder to the dataset ``out`` (Delta tables, one pinned run:
    :func:`~rmqarrow.converters.parquet.kind_dataset.export_kind`, ``overwrite`` a new
    version of an existing one); returns the manifest.  ``out``'s writer lock is held
    throughout (``wait``: see :func:`rmqarrow._lock.acquire`).  ``geometry`` or
    ``hash_slot_num``/``index_num`` (not both forms) give what is known of ``S`` and
    ``N``; the rest is found by the tiered rules."""
    src = Path(source)
    tables = tiered_tables(src, geometry_hint(geometry, hash_slot_num, index_num))
    return export_kind(
        out,
        TIERED_FORMAT,
        lambda staging: write_tiered_dataset(tables, staging, src),
        overwrite=overwrite,
        wait=wait,
    )
