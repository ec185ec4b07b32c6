"""Converters: native RocketMQ index files <-> Arrow tables and Parquet datasets.

Engines (DuckDB, Spark) are imported lazily inside the functions that use them.
"""

from __future__ import annotations

from .schema import ENTRIES_SCHEMA, FILES_SCHEMA, SCHEMAS, SLOTS_SCHEMA
from .tables import IndexTables, file_tables, store_tables

__all__ = [
    "ENTRIES_SCHEMA",
    "FILES_SCHEMA",
    "SCHEMAS",
    "SLOTS_SCHEMA",
    "IndexTables",
    "file_tables",
    "store_tables",
]
