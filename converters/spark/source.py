"""``spark.read.format("rocketmq_index")``: native IndexFiles as a Spark data source.

A PySpark Python Data Source (``pyspark.sql.datasource``, Spark 4), also registered under
its first name ``rocketmq-index``::

    from rmqarrow.converters.spark.source import register
    register(spark)
    entries = spark.read.format("rocketmq_index").load("/path/to/store/index")
    files = spark.read.format("rocketmq_index").option("table", "files").load(store_dir)

Options (:mod:`rmqarrow.converters.spark.options` holds their names and checks them):
``table`` (``entries`` by default, or ``files`` / ``slots``), ``hashSlotNum`` and
``indexNum`` (geometry, as ``--hash-slot-num`` / ``--index-num``), ``pieceRows`` (entry
positions per partition, default 2,500,000), ``batchRows`` (rows per Arrow batch) and
``pushdown`` (``true`` to use the query's filters: Spark >= 4.1 with
``spark.sql.python.filterPushdown.enabled``; ``get_spark`` and ``register_tables`` turn
both on, see :mod:`rmqarrow.converters.spark.pushdown`).  The schema is the Parquet
dataset's (:mod:`rmqarrow.converters.schema`), every column nullable as Spark reports it.
Partitions are planned on the driver (one per file, big
files split into position ranges, see :mod:`rmqarrow.converters.spark.batches`); each executor
maps its file and yields ``pyarrow.RecordBatch`` es, so no row ever passes through Python
one at a time.  On a cluster the store must be readable at the same absolute path on
every executor (rmqarrow is shipped there by ``get_spark``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.converters.spark.batches import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_PIECE_ROWS,
    Piece,
    piece_batches,
    plan_pieces,
)
from rmqarrow.converters.spark.options import parse
from rmqarrow.converters.spark.paths import INDEX_FORMAT, INDEX_FORMAT_ALIAS, index_path_of
from rmqarrow.converters.spark.pushdown import Pushdown, from_filters
from rmqarrow.converters.spark.session import check_pyspark

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.layout import GeometryHint

check_pyspark()

from pyspark.sql.datasource import (  # noqa: E402 - after the clear error above
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "FORMAT",
    "PUSHDOWN_CONF",
    "RocketMQIndexAliasDataSource",
    "RocketMQIndexDataSource",
    "pushdown_supported",
    "register",
    "spark_arrow_schema",
    "spark_ddl",
]

FORMAT = INDEX_FORMAT
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def pushdown_supported() -> bool:
    """True when this pyspark hands filters to Python data sources (Spark >= 4.1)."""
    return "pushFilters" in vars(DataSourceReader)


_SPARK_TYPES = {pa.string(): "STRING", pa.int32(): "INT", pa.int64(): "BIGINT"}


def spark_ddl(table: str) -> str:
    """The Spark DDL schema of ``table`` (same names and types as the Parquet dataset)."""
    return ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in SCHEMAS[table])


def spark_arrow_schema(table: str) -> pa.Schema:
    """``table``'s Arrow schema as Spark expects batches from a data source: nullable."""
    return pa.schema([pa.field(f.name, f.type, nullable=True) for f in SCHEMAS[table]])


def table_option(options: Mapping[str, Any]) -> str:
    """The ``table`` option of checked options (:func:`options.parse`'s), else ``entries``."""
    table = str(options.get("table") or "entries").lower()
    if table not in SCHEMAS:
        raise InvalidValueError(
            f"option table must be one of {', '.join(SCHEMAS)}, got {options.get('table')!r}"
        )
    return table


class RocketMQIndexReader(DataSourceReader):
    """Plans pieces on the driver; decodes one piece per task into Arrow batches."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        given = parse(options, "index", "batch")
        self.path = index_path_of(given.get("path"))  # refused here: at planning time
        self.table = table_option(given)
        self.geometry = GeometryHint(given.get("hashSlotNum"), given.get("indexNum"))
        self.piece_rows: int = given.get("pieceRows", DEFAULT_PIECE_ROWS)
        self.batch_rows: int = given.get("batchRows", DEFAULT_BATCH_ROWS)
        self.pushdown: Pushdown | None = None

    def partitions(self) -> Sequence[InputPartition]:
        pieces = plan_pieces(
            self.path,
            self.table,
            geometry=self.geometry,
            piece_rows=self.piece_rows,
            pushdown=self.pushdown,
        )
        return [InputPartition(p) for p in pieces]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        piece: Piece | None = partition.value
        if piece is None:  # Spark's one partition for a plan of none (every file skipped)
            return
        schema = spark_arrow_schema(piece.table)
        yield from piece_batches(piece, schema=schema, batch_rows=self.batch_rows)


class PushdownReader(RocketMQIndexReader):
    """The reader with ``pushFilters`` (only offered when pushdown is on: Spark refuses a
    reader implementing it while ``spark.sql.python.filterPushdown.enabled`` is off)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        self.pushdown = from_filters(filters)
        # every filter goes back to Spark: pushdown only skips rows they would drop
        return list(filters)


class RocketMQIndexDataSource(DataSource):
    """The ``rocketmq_index`` format: ``files``, ``slots`` or ``entries`` of a store dir."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        given = parse(self.options, "index", None)
        index_path_of(given.get("path"))  # a wrong path fails at load(), not later
        return spark_ddl(table_option(given))

    def reader(self, schema: StructType) -> DataSourceReader:
        given = parse(self.options, "index", "batch")
        table = table_option(given)
        expected = [(f.name, _SPARK_TYPES[f.type].lower()) for f in SCHEMAS[table]]
        found = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        if found != expected:
            raise InvalidValueError(
                f"the {table} table of {FORMAT} has the fixed schema {spark_ddl(table)}; "
                f"got {schema.simpleString()} (select or cast columns after loading instead)"
            )
        if given.get("pushdown", False) and pushdown_supported():
            return PushdownReader(self.options)
        return RocketMQIndexReader(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream``: the store's new entries (see
        :mod:`rmqarrow.converters.spark.streaming`)."""
        from rmqarrow.converters.spark.streaming import open_stream

        return open_stream("index", self.options)


class RocketMQIndexAliasDataSource(RocketMQIndexDataSource):
    """``rocketmq-index``: the format's first name, still read (Spark registers a source
    class under the one name it gives)."""

    @classmethod
    def name(cls) -> str:
        return INDEX_FORMAT_ALIAS


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("rocketmq_index")`` available in ``spark`` (and as
    ``rocketmq-index``), and the ``rocketmq_commitlog`` source
    (:mod:`rmqarrow.converters.spark.commitlog`); both stream with ``spark.readStream``
    (:mod:`rmqarrow.converters.spark.streaming`)."""
    from rmqarrow.converters.spark.commitlog import register as register_commitlog

    spark.dataSource.register(RocketMQIndexDataSource)
    spark.dataSource.register(RocketMQIndexAliasDataSource)
    register_commitlog(spark)
