"""DuckDB answers ``queryOffset`` on RocketMQ's RocksDB message index (RIP-82) exactly as
the native walk: over the database (read now, read-only) or an exported dataset.

The search runs as SQL (:func:`rmqarrow.rocksdb.search_sql`: hours, byte-prefix range,
window, order, cap, lastKey page); the parameter checks, lastKey parsing, the ``K`` -> ``U``
fallback and the bookkeeping values run in Python around it, as the module says why.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import duckdb
import pyarrow as pa

from rmqarrow._memory import duckdb_settings
from rmqarrow.converters.duckdb.runner import fetch_arrow, registered
from rmqarrow.rocksdb import (
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_MAX_QUERY_DAYS,
    QueryOffsetResult,
    RocksDBQuery,
    Search,
    answer_batched,
    bookkeeping_getter,
    search_sql,
    searches_table,
    split_hits,
)
from rmqarrow.rocksdb.arrow import RocksDBTables
from rmqarrow.rocksdb.parquet import rocksdb_source_tables

__all__ = ["answer_queries", "register_rocksdb", "rocksdb_stats"]


def register_rocksdb(con: duckdb.DuckDBPyConnection, tables: RocksDBTables) -> None:
    """Views ``rocksdb_records`` and ``rocksdb_bookkeeping`` on ``con``."""
    con.register("rocksdb_records", tables.records)
    con.register("rocksdb_bookkeeping", tables.bookkeeping)


def _run_many(con: duckdb.DuckDBPyConnection, plans: list[Search]) -> list[list[int]]:
    with registered(con, {"rocksdb_searches": searches_table(plans)}, fresh=True) as names:
        sql = search_sql("rocksdb_records", names["rocksdb_searches"], lambda c: f'"{c}"')
        result = fetch_arrow(con, sql)
    rows = zip(
        result.column("sid").to_pylist(), result.column("phy_offset").to_pylist(), strict=True
    )
    return split_hits(len(plans), list(rows))


def answer_queries(
    source: str | os.PathLike[str],
    queries: Sequence[RocksDBQuery],
    *,
    max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
    max_query_days: int = DEFAULT_MAX_QUERY_DAYS,
    now: int | None = None,
) -> list[QueryOffsetResult | None]:
    """RocketMQ's ``queryOffset`` answer per query, computed in DuckDB."""
    tables = rocksdb_source_tables(source)
    with duckdb.connect(config=duckdb_settings()) as con:
        register_rocksdb(con, tables)
        return answer_batched(
            list(queries),
            bookkeeping_getter(tables.bookkeeping),
            lambda plans: _run_many(con, plans),
            max_msgs_num_batch=max_msgs_num_batch,
            max_query_days=max_query_days,
            now=now,
        )


def rocksdb_stats(
    con: duckdb.DuckDBPyConnection,
    *,
    top: int = 10,
    between: tuple[int, int] | None = None,
    limit: int = 20,
) -> dict[str, pa.Table]:
    """Key-less questions in SQL over ``rocksdb_records`` (registered on ``con``): records
    per hour bucket and type, per topic (messages, distinct keys and tags), the most
    frequent tags per topic, the hottest keys, and with ``between`` what was indexed in
    that store-time window."""
    sections: dict[str, str] = {
        "hours": """SELECT hour, count(*) FILTER (WHERE type = 'K') AS k_records,
                     count(*) FILTER (WHERE type = 'T') AS t_records,
                     count(*) FILTER (WHERE type = 'U') AS messages,
                     min(store_time) AS first_store_time, max(store_time) AS last_store_time
                   FROM rocksdb_records GROUP BY hour ORDER BY hour""",
        "topics": """SELECT topic, count(*) FILTER (WHERE type = 'U') AS messages,
                      count(DISTINCT key) FILTER (WHERE type = 'K') AS distinct_keys,
                      count(DISTINCT key) FILTER (WHERE type = 'T') AS distinct_tags,
                      min(hour) AS first_hour, max(hour) AS last_hour
                    FROM rocksdb_records WHERE topic IS NOT NULL
                    GROUP BY topic ORDER BY messages DESC, topic""",
        "tags": f"""SELECT topic, key AS tag, count(*) AS messages FROM rocksdb_records
                   WHERE type = 'T' GROUP BY topic, key
                   ORDER BY messages DESC, topic, tag LIMIT {int(top)}""",
        "hot_keys": f"""SELECT topic, key, count(*) AS records, count(DISTINCT hour) AS hours
                       FROM rocksdb_records WHERE type = 'K' GROUP BY topic, key
                       ORDER BY records DESC, topic, key LIMIT {int(top)}""",
        "unparsed": """SELECT count(*) FILTER (WHERE type IS NULL) AS unparsed_keys,
                        count(*) FILTER (WHERE store_time IS NULL) AS bad_values
                      FROM rocksdb_records""",
    }
    out = {name: con.sql(sql).to_arrow_table() for name, sql in sections.items()}
    if between is not None:
        lo, hi = int(between[0]), int(between[1])
        out["between"] = con.sql(
            f"""SELECT hour, topic, type, key, uniq_key, "offset", store_time
                FROM rocksdb_records WHERE store_time BETWEEN {lo} AND {hi}
                ORDER BY store_time, "offset", type LIMIT {int(limit)}"""
        ).to_arrow_table()
    return out
