"""One statement over Arrow tables or DataFrames in a Spark session: temporary views for
the statement, the rows collected as Arrow, the views dropped.

The Spark form of :mod:`rmqarrow.converters.duckdb.runner`: the engine modules (lookups,
tiered files, RocksDB searches, the log check) register their inputs as temporary views
through :func:`temp_views`, which drops every one it made however the block ends (an
error, a Ctrl-C), so the session (shared: :func:`rmqarrow.converters.spark.session.get_spark`
returns the same one) keeps no input of a finished call, and refuses a name the session
already resolves (a temporary view or table of the caller's, or of a store registered on
it) rather than replacing it and then dropping it.  :func:`run_arrow` runs one statement
inside it, collected with ``DataFrame.toArrow``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from rmqarrow.errors import UsageError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["as_frame", "fresh_name", "run_arrow", "temp_views"]


def fresh_name(stem: str) -> str:
    """A view name no session holds yet: ``_rmq_<stem>_<12 hex digits>``."""
    return f"_rmq_{stem.removeprefix('_rmq_')}_{uuid.uuid4().hex[:12]}"


def as_frame(spark: SparkSession, value: pa.Table | DataFrame) -> DataFrame:
    """``value`` as a DataFrame of ``spark`` (an Arrow table is shipped as it is)."""
    return spark.createDataFrame(value) if isinstance(value, pa.Table) else value


@contextlib.contextmanager
def temp_views(
    spark: SparkSession, inputs: Mapping[str, pa.Table | DataFrame], *, fresh: bool = False
) -> Iterator[dict[str, str]]:
    """Each of ``inputs`` (name -> Arrow table or DataFrame) as a temporary view for the
    block; yields the name each is registered under.

    Under its own name unless ``fresh`` (then under :func:`fresh_name`, for statements
    formatted with the name): an own name the session already resolves raises
    :class:`~rmqarrow.errors.UsageError` before any view is made.  Every view made is
    dropped when the block ends, however it ends.
    """
    names = {given: fresh_name(given) if fresh else given for given in inputs}
    if not fresh:
        taken = [name for name in names.values() if spark.catalog.tableExists(name)]
        if taken:
            raise UsageError(
                f"this Spark session already holds {', '.join(taken)}, which a statement's "
                "input of the same name would replace; drop or rename yours"
            )
    made: list[str] = []
    try:
        for given, value in inputs.items():
            as_frame(spark, value).createOrReplaceTempView(names[given])
            made.append(names[given])
        yield names
    finally:
        for name in reversed(made):
            spark.catalog.dropTempView(name)


def run_arrow(
    spark: SparkSession, sql: str, *, inputs: Mapping[str, pa.Table | DataFrame] | None = None
) -> pa.Table:
    """The rows of ``sql`` as an Arrow table, with ``inputs`` as temporary views under
    their own names while it runs (:func:`temp_views`)."""
    with temp_views(spark, inputs or {}):
        result: pa.Table = spark.sql(sql).toArrow()
        return result
