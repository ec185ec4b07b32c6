"""The DuckDB engine: SQL over a native store or a Parquet dataset, native semantics.

``connect(target)`` gives a connection with the ``files``, ``slots`` and ``entries``
views and the ``index_key_hash`` / ``index_lookup`` macros; ``answer_queries`` answers
key queries exactly as the native lookup does (the index-health figures are
:mod:`rmqarrow.converters.stats`'s).
Imported lazily: ``import rmqarrow.converters.duckdb`` does not load DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.converters.duckdb.dbfile import SavedDatabase, save_database
    from rmqarrow.converters.duckdb.sql import (
        answer_queries,
        check_against_log,
        connect,
        lookup_table,
        queries_table,
        refuse_writing,
        run_statement,
        split_statements,
        writing_statement,
    )

__all__ = [
    "SavedDatabase",
    "answer_queries",
    "check_against_log",
    "connect",
    "lookup_table",
    "queries_table",
    "refuse_writing",
    "run_statement",
    "save_database",
    "split_statements",
    "writing_statement",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "answer_queries": "sql",
        "check_against_log": "sql",
        "connect": "sql",
        "lookup_table": "sql",
        "queries_table": "sql",
        "refuse_writing": "sql",
        "run_statement": "sql",
        "split_statements": "sql",
        "SavedDatabase": "dbfile",
        "save_database": "dbfile",
        "writing_statement": "sql",
    },
)
