"""The index checked against its CommitLog in Spark: the ``dangling``/``missing`` figures.

The Spark form of :func:`rmqarrow.converters.duckdb.sql.check_against_log`: the same
statements (:mod:`rmqarrow.converters.log_check_sql`) over the session's ``entries`` and
``messages`` views (:func:`rmqarrow.converters.spark.tables.register_tables` with
``commitlog=``, the log decoded by the executors, a task per file), so the figures are
DuckDB's.  Everything runs in Spark: the expected keys are hashed in the JVM
(:func:`rmqarrow.converters.spark.sql.jvm_key_hash`, ``String.hashCode``), the counts are
Spark aggregates, and only the figures and the few example rows reach the driver.  The
views are cached on the executors for the check (every figure reads them), then uncached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqarrow.converters.log_check_sql import (
    EXPECTED_KEYS_VIEW,
    LOG_FACTS_SQL,
    expected_key_texts_sql,
    log_check_figures,
)
from rmqarrow.converters.spark.errors import spark_errors
from rmqarrow.converters.spark.runner import temp_views
from rmqarrow.converters.spark.sql import jvm_key_hash
from rmqarrow.converters.spark.tables import MESSAGES_VIEW

from rmqarrow.errors import DatasetError, InvalidValueError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["check_against_log"]


def check_against_log(spark: SparkSession, *, examples: int = 5) -> dict[str, Any]:
    """Check the session's ``entries`` against its ``messages`` view; the figures and up
    to ``examples`` rows of each problem, as the DuckDB check returns them."""
    if examples < 0:
        raise InvalidValueError(f"examples must be >= 0, got {examples}")
    if not spark.catalog.tableExists(MESSAGES_VIEW):
        raise DatasetError(
            "no messages view on this session; register_tables(..., commitlog=DIR) or "
            "export the dataset with a commitlog"
        )
    texts = spark.sql(expected_key_texts_sql("explode"))
    # reflect (the JVM hash) is non-deterministic to Spark: a projection of its own, kept
    expected = texts.select("physical_offset", "key", jvm_key_hash("key").alias("key_hash"))

    def count(sql: str) -> int:
        return int(spark.sql(f"SELECT count(*) AS n FROM ({sql})").collect()[0][0])

    def first(sql: str) -> list[dict[str, Any]]:
        return [row.asDict() for row in spark.sql(sql).limit(examples).collect()]

    with temp_views(spark, {EXPECTED_KEYS_VIEW: expected}):
        # every figure reads these: decode the log and the index once (on the executors)
        cached = [v for v in ("entries", MESSAGES_VIEW) if not spark.catalog.isCached(v)]
        cached.append(EXPECTED_KEYS_VIEW)
        for view in cached:
            spark.catalog.cacheTable(view)
        try:
            with spark_errors(spark.sparkContext.applicationId):
                facts = spark.sql(LOG_FACTS_SQL).collect()[0]
                return log_check_figures(facts, count, first)
        finally:
            for view in cached:
                spark.catalog.uncacheTable(view)
