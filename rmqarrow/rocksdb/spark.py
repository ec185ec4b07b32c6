"""Spark SQL answers ``queryOffset`` on RocketMQ's RocksDB message index (RIP-82) exactly as
the native walk: an exported dataset is read by Spark itself (``rocksdb_records`` as
Parquet), a database is read now (read-only) and shipped as Arrow.

The search is :func:`rmqarrow.rocksdb.search_sql` (Spark compares binary unsigned,
bytewise, as RocksDB orders keys); the parameter checks, lastKey parsing, the ``K`` -> ``U``
fallback and the bookkeeping values run in Python around it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from rmqarrow.converters.parquet.parts import hadoop_literal
from rmqarrow.converters.spark.runner import as_frame, run_arrow, temp_views
from rmqarrow.converters.spark.session import get_spark
from rmqarrow.format.detect import detect
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
from rmqarrow.rocksdb.parquet import (
    rocksdb_dataset_files,
    rocksdb_source_tables,
)

__all__ = ["answer_queries", "register_rocksdb"]


def register_rocksdb(
    spark: Any, source: Path, tables: RocksDBTables | None = None, prefix: str = ""
) -> RocksDBTables:
    """Temporary views ``{prefix}rocksdb_records`` and ``{prefix}rocksdb_bookkeeping``."""
    views, got = _views(spark, source, tables)
    for name, value in views.items():
        as_frame(spark, value).createOrReplaceTempView(f"{prefix}{name}")
    return got


def _views(
    spark: Any, source: Path, tables: RocksDBTables | None = None
) -> tuple[dict[str, Any], RocksDBTables]:
    """The ``rocksdb_records`` and ``rocksdb_bookkeeping`` relations, and the tables read."""
    if detect(source).kind == "rocksdb_dataset":
        # the files of one snapshot (the pinned run's), never the folder: a Delta table's
        # folder also holds the parts of older versions
        files, book = rocksdb_dataset_files(source)
        records = spark.read.parquet(*(hadoop_literal(f) for f in files))
        got = RocksDBTables(pa.table({}), book)
    else:
        got = tables if tables is not None else rocksdb_source_tables(source)
        records = got.records
    return {"rocksdb_records": records, "rocksdb_bookkeeping": got.bookkeeping}, got


def _run_many(spark: Any, prefix: str, plans: list[Search]) -> list[list[int]]:
    name = f"{prefix}rocksdb_searches"
    sql = search_sql(f"{prefix}rocksdb_records", name, lambda c: f"`{c}`")
    result = run_arrow(spark, sql, inputs={name: searches_table(plans)})
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
    master: str | None = None,
) -> list[QueryOffsetResult | None]:
    """RocketMQ's ``queryOffset`` answer per query, computed by Spark SQL."""
    spark = get_spark(master)
    prefix = f"q{uuid.uuid4().hex[:12]}_"
    views, tables = _views(spark, Path(source))
    with temp_views(spark, {f"{prefix}{name}": value for name, value in views.items()}):
        return answer_batched(
            list(queries),
            bookkeeping_getter(tables.bookkeeping),
            lambda plans: _run_many(spark, prefix, plans),
            max_msgs_num_batch=max_msgs_num_batch,
            max_query_days=max_query_days,
            now=now,
        )
