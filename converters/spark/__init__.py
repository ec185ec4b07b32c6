"""The Spark engine: the index as Spark SQL tables, lookups with native semantics, export.

``get_spark`` starts (or reuses) a session, ``register_tables`` creates the views over a
native store (through the ``rocketmq_index`` Python Data Source) or a dataset, ``lookup``
and ``bulk_lookup`` answer key queries as the native lookup does, and ``export_store``
exports in parallel.  Imported lazily: ``import rmqarrow.converters.spark`` does not load
pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.converters.spark.delta_sink import committed_batch, delta_batch_writer
    from rmqarrow.converters.spark.errors import is_spark_error, translate
    from rmqarrow.converters.spark.export import export_store
    from rmqarrow.converters.spark.log_check import check_against_log
    from rmqarrow.converters.spark.session import (
        check_java,
        check_pyspark,
        configure,
        get_spark,
        spark_error,
    )
    from rmqarrow.converters.spark.source import register
    from rmqarrow.converters.spark.sql import answer_queries, bulk_lookup, lookup, writing_statement
    from rmqarrow.converters.spark.tables import register_tables

__all__ = [
    "answer_queries",
    "bulk_lookup",
    "check_against_log",
    "check_java",
    "check_pyspark",
    "committed_batch",
    "configure",
    "delta_batch_writer",
    "export_store",
    "get_spark",
    "is_spark_error",
    "lookup",
    "register",
    "register_tables",
    "spark_error",
    "translate",
    "writing_statement",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "answer_queries": "sql",
        "bulk_lookup": "sql",
        "check_against_log": "log_check",
        "check_java": "session",
        "check_pyspark": "session",
        "committed_batch": "delta_sink",
        "configure": "session",
        "delta_batch_writer": "delta_sink",
        "export_store": "export",
        "get_spark": "session",
        "is_spark_error": "errors",
        "spark_error": "session",
        "translate": "errors",
        "lookup": "sql",
        "writing_statement": "sql",
        "register": "source",
        "register_tables": "tables",
    },
)
