"""Converters: native RocketMQ index files <-> Arrow tables and Parquet datasets.

- :mod:`converters.schema`: the ``files``, ``slots`` and ``entries`` schemas.
- :mod:`converters.scan`: streaming Arrow readers straight over native files.
- :mod:`converters.export` / :mod:`converters.importer`: Parquet datasets, both ways,
  atomically and byte-identically.
- :mod:`converters.duckdb_sql`, :mod:`converters.spark_sql`: the engines (imported lazily).
"""

from __future__ import annotations

from .dataset import open_dataset, read_dataset
from .export import export_store
from .importer import import_dataset
from .manifest import read_manifest, stale_reasons
from .scan import scan_file, scan_store, store_scanner
from .schema import ENTRIES_SCHEMA, FILES_SCHEMA, SCHEMAS, SLOTS_SCHEMA
from .tables import IndexTables, file_tables, store_tables

__all__ = [
    "ENTRIES_SCHEMA",
    "FILES_SCHEMA",
    "SCHEMAS",
    "SLOTS_SCHEMA",
    "IndexTables",
    "export_store",
    "file_tables",
    "import_dataset",
    "open_dataset",
    "read_dataset",
    "read_manifest",
    "scan_file",
    "scan_store",
    "stale_reasons",
    "store_scanner",
    "store_tables",
]
