"""The DuckDB engine: SQL over a native store or a Parquet dataset, native semantics.

``connect(target)`` gives a connection with the ``files``, ``slots`` and ``entries``
views and the ``index_key_hash`` / ``index_lookup`` macros; ``answer_queries`` answers
key queries exactly as the native lookup does; :mod:`.stats` holds the analytics.
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
    from rmqarrow.converters.duckdb.stats import IndexStats, collect
    from rmqarrow.converters.duckdb.stats_html import html_target, render_html, write_html
    from rmqarrow.converters.duckdb.stats_plot import write_charts

__all__ = [
    "IndexStats",
    "SavedDatabase",
    "answer_queries",
    "check_against_log",
    "collect",
    "connect",
    "html_target",
    "lookup_table",
    "queries_table",
    "refuse_writing",
    "render_html",
    "run_statement",
    "save_database",
    "split_statements",
    "write_charts",
    "write_html",
    "writing_statement",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "IndexStats": "stats",
        "answer_queries": "sql",
        "check_against_log": "sql",
        "collect": "stats",
        "connect": "sql",
        "html_target": "stats_html",
        "lookup_table": "sql",
        "queries_table": "sql",
        "refuse_writing": "sql",
        "render_html": "stats_html",
        "run_statement": "sql",
        "split_statements": "sql",
        "SavedDatabase": "dbfile",
        "save_database": "dbfile",
        "write_charts": "stats_plot",
        "write_html": "stats_html",
        "writing_statement": "sql",
    },
)
