"""The demo's example questions, asked in DuckDB and in Spark SQL (SQL shown verbatim).

Keys and times reach SQL only as bound parameters (``?`` in DuckDB, ``:name`` in Spark).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmqarrow._text import print_table

__all__ = ["DUCKDB_QUESTIONS", "SPARK_QUESTIONS", "ask_duckdb", "ask_spark"]

Echo = Callable[[str], None]

DUCKDB_QUESTIONS: list[tuple[str, str]] = [
    (
        "Where are the messages of {key}? (the native lookup as a DuckDB table macro;\n"
        "     times as the index reads them: the file's begin + whole seconds)",
        "SELECT file_name, position, phy_offset, epoch_ms(store_timestamp) AS stored\n"
        "FROM index_lookup(?, 64)",
    ),
    (
        "What was indexed in the minute from {minute}? (key-less time scan; RocketMQ "
        "itself cannot answer this)",
        "SELECT file_name, count(*) AS entries, count(DISTINCT key_hash) AS hashes,\n"
        "       min(phy_offset) AS first_offset, max(phy_offset) AS last_offset\n"
        "FROM entries WHERE store_timestamp BETWEEN ? AND ?\n"
        "GROUP BY file_name ORDER BY file_name",
    ),
    (
        "How full is each file, and which time does it cover?",
        "SELECT file_name, index_count - 1 AS entries,\n"
        "       round(100.0 * (index_count - 1) / (index_num - 1), 1) AS fill_pct,\n"
        "       hash_slot_count AS used_slots,\n"
        "       epoch_ms(begin_timestamp) AS first, epoch_ms(end_timestamp) AS last\n"
        "FROM files ORDER BY file_name",
    ),
    (
        "Where do store times go backwards? (these entries cut native chains early)",
        "SELECT file_name, count(*) AS out_of_order_entries\n"
        "FROM (SELECT file_name, store_timestamp,\n"
        "             max(store_timestamp) OVER (PARTITION BY file_name ORDER BY position\n"
        "               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newest_before\n"
        "      FROM entries)\n"
        "WHERE store_timestamp < newest_before\n"
        "GROUP BY file_name ORDER BY file_name",
    ),
]

SPARK_QUESTIONS: list[tuple[str, str]] = [
    (
        "Entries and distinct key hashes per file",
        "SELECT file_name, count(*) AS entries, count(DISTINCT key_hash) AS hashes\n"
        "FROM entries GROUP BY file_name ORDER BY file_name",
    ),
    (
        "Every entry with the hash of {key}, hashed in the JVM (no time window: the chain "
        "walk then returns exactly these)",
        "SELECT e.file_name, e.position, e.phy_offset, e.store_timestamp\n"
        "FROM (SELECT CAST(reflect('java.util.Objects', 'hashCode', :key) AS INT) AS h) q\n"
        "JOIN entries e\n"
        "  ON e.key_hash = CASE WHEN q.h = -2147483648 THEN 0 ELSE abs(q.h) END\n"
        "ORDER BY e.file_name DESC, e.position DESC",
    ),
]


def _show_sql(echo: Echo, sql: str) -> None:
    for line in sql.split("\n"):
        echo(f"    {line}")


def _show_table(echo: Echo, table: Any, limit: int = 12) -> None:
    rows = table.slice(0, limit).to_pylist()
    cols = table.column_names
    buf = io.StringIO()
    print_table([[r[c] for c in cols] for r in rows], cols, buf)
    for line in buf.getvalue().rstrip("\n").split("\n"):
        echo(f"  {line}")
    if table.num_rows > limit:
        echo(f"  ... {table.num_rows - limit} more rows")


def ask_duckdb(dataset: Path, key: str, minute_ms: int, echo: Echo) -> list[dict[str, Any]]:
    """Ask :data:`DUCKDB_QUESTIONS` over the dataset; returns what was asked and found."""
    from rmqarrow.converters.duckdb.sql import connect

    minute = dt.datetime.fromtimestamp(minute_ms / 1000, dt.UTC).strftime("%H:%M UTC")
    params: list[list[Any]] = [[key], [minute_ms, minute_ms + 59_999], [], []]
    asked = []
    con = connect(dataset)
    try:
        for (title, sql), p in zip(DUCKDB_QUESTIONS, params, strict=True):
            echo(f"\n  Q: {title.format(key=key, minute=minute)}")
            _show_sql(echo, sql)
            if p:
                echo(f"    -- parameters: {p}")
            table = con.sql(sql, params=p or None).to_arrow_table()
            _show_table(echo, table)
            asked.append({"engine": "duckdb", "sql": sql, "params": p, "rows": table.num_rows})
    finally:
        con.close()
    return asked


def ask_spark(dataset: Path, key: str, master: str | None, echo: Echo) -> list[dict[str, Any]]:
    """Ask :data:`SPARK_QUESTIONS` over the dataset (Spark SQL views over Parquet)."""
    from rmqarrow.converters.spark.session import get_spark
    from rmqarrow.converters.spark.sql import register_tables

    spark = get_spark(master)
    register_tables(spark, dataset)
    asked = []
    for title, sql in SPARK_QUESTIONS:
        args = {"key": key} if ":key" in sql else None
        echo(f"\n  Q: {title.format(key=key)}")
        _show_sql(echo, sql)
        if args:
            echo(f"    -- parameters: {args}")
        table = spark.sql(sql, args=args).toArrow()
        _show_table(echo, table)
        asked.append({"engine": "spark", "sql": sql, "params": args, "rows": table.num_rows})
    return asked
