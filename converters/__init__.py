"""rmqarrow.converters: native RocketMQ index files <-> Arrow tables and Parquet datasets.

- :mod:`~rmqarrow.converters.schema`: every published Arrow schema, documented.
- :mod:`~rmqarrow.converters.arrow`: streaming Arrow scans straight over native files,
  whole-store tables, the CommitLog messages table.
- :mod:`~rmqarrow.converters.parquet`: export and import of Parquet datasets, atomic and
  byte-identical, with their manifest.
- :mod:`~rmqarrow.converters.duckdb` and :mod:`~rmqarrow.converters.spark`: the engines.

Names are imported lazily: ``import rmqarrow.converters`` loads nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if __name__ != "rmqarrow.converters":  # e.g. ``import converters`` from a checkout
    raise ImportError(f"import rmqarrow.converters, not {__name__}: converters/ is its folder")

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.converters.arrow.scan import scan_file, scan_store, store_scanner
    from rmqarrow.converters.arrow.tables import IndexTables, file_tables, store_tables
    from rmqarrow.converters.parquet.dataset import open_dataset, read_dataset
    from rmqarrow.converters.parquet.export import export_store
    from rmqarrow.converters.parquet.importer import import_dataset
    from rmqarrow.converters.parquet.manifest import one_snapshot, read_manifest, stale_reasons
    from rmqarrow.converters.schema import ENTRIES_SCHEMA, FILES_SCHEMA, SCHEMAS, SLOTS_SCHEMA

__all__ = [
    "ENTRIES_SCHEMA",
    "FILES_SCHEMA",
    "SCHEMAS",
    "SLOTS_SCHEMA",
    "IndexTables",
    "export_store",
    "file_tables",
    "import_dataset",
    "one_snapshot",
    "open_dataset",
    "read_dataset",
    "read_manifest",
    "scan_file",
    "scan_store",
    "stale_reasons",
    "store_scanner",
    "store_tables",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "ENTRIES_SCHEMA": "schema",
        "FILES_SCHEMA": "schema",
        "SCHEMAS": "schema",
        "SLOTS_SCHEMA": "schema",
        "IndexTables": "arrow.tables",
        "export_store": "parquet.export",
        "file_tables": "arrow.tables",
        "import_dataset": "parquet.importer",
        "one_snapshot": "parquet.manifest",
        "open_dataset": "parquet.dataset",
        "read_dataset": "parquet.dataset",
        "read_manifest": "parquet.manifest",
        "scan_file": "arrow.scan",
        "scan_store": "arrow.scan",
        "stale_reasons": "parquet.manifest",
        "store_scanner": "arrow.scan",
        "store_tables": "arrow.tables",
    },
)
