"""``spark.read.format("rocketmq-index")``: native IndexFiles as a Spark data source.

A PySpark Python Data Source (``pyspark.sql.datasource``, Spark 4)::

    from rmqarrow.converters.spark.source import register
    register(spark)
    entries = spark.read.format("rocketmq-index").load("/path/to/store/index")
    files = spark.read.format("rocketmq-index").option("table", "files").load(store_dir)

Options: ``table`` (``entries`` by default, or ``files`` / ``slots``), ``hash_slot_num``
and ``index_num`` (geometry, as ``--hash-slot-num`` / ``--index-num``), ``piece_rows``
(entry positions per partition, default 2,500,000), ``batch_rows`` (rows per Arrow
batch) and ``pushdown`` (``true`` to use the query's filters: Spark >= 4.1 with
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

from collections.abc import Iterable, Iterator, Sequence
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
from rmqarrow.converters.spark.paths import index_path_of
from rmqarrow.converters.spark.pushdown import Pushdown, from_filters
from rmqarrow.converters.spark.session import check_pyspark

from rmqarrow.errors import InvalidValueError

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
    "RocketMQIndexDataSource",
    "pushdown_supported",
    "register",
    "spark_arrow_schema",
    "spark_ddl",
]

FORMAT = "rocketmq-index"
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


def _int_option(options: Any, name: str, default: int | None) -> int | None:
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidValueError(f"option {name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise InvalidValueError(f"option {name} must be positive, got {value}")
    return value


def table_option(options: Any) -> str:
    table = str(options.get("table") or "entries").lower()
    if table not in SCHEMAS:
        raise InvalidValueError(
            f"option table must be one of {', '.join(SCHEMAS)}, got {options.get('table')!r}"
        )
    return table


class RocketMQIndexReader(DataSourceReader):
    """Plans pieces on the driver; decodes one piece per task into Arrow batches."""

    def __init__(self, options: Any) -> None:
        self.path = index_path_of(options.get("path"))  # refused here: at planning time
        self.table = table_option(options)
        self.hash_slot_num = _int_option(options, "hash_slot_num", None)
        self.index_num = _int_option(options, "index_num", None)
        self.piece_rows = _int_option(options, "piece_rows", DEFAULT_PIECE_ROWS)
        self.batch_rows = _int_option(options, "batch_rows", DEFAULT_BATCH_ROWS)
        self.pushdown: Pushdown | None = None

    def partitions(self) -> Sequence[InputPartition]:
        pieces = plan_pieces(
            self.path,
            self.table,
            hash_slot_num=self.hash_slot_num,
            index_num=self.index_num,
            piece_rows=self.piece_rows or DEFAULT_PIECE_ROWS,
            pushdown=self.pushdown,
        )
        return [InputPartition(p) for p in pieces]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        piece: Piece | None = partition.value
        if piece is None:  # Spark's one partition for a plan of none (every file skipped)
            return
        schema = spark_arrow_schema(piece.table)
        yield from piece_batches(
            piece, schema=schema, batch_rows=self.batch_rows or DEFAULT_BATCH_ROWS
        )


class PushdownReader(RocketMQIndexReader):
    """The reader with ``pushFilters`` (only offered when pushdown is on: Spark refuses a
    reader implementing it while ``spark.sql.python.filterPushdown.enabled`` is off)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        self.pushdown = from_filters(filters)
        # every filter goes back to Spark: pushdown only skips rows they would drop
        return list(filters)


def _pushdown_option(options: Any) -> bool:
    raw = str(options.get("pushdown") or "false").strip().lower()
    if raw not in ("true", "false"):
        raise InvalidValueError(f"option pushdown must be true or false, got {raw!r}")
    return raw == "true"


class RocketMQIndexDataSource(DataSource):
    """The ``rocketmq-index`` format: ``files``, ``slots`` or ``entries`` of a store dir."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        index_path_of(self.options.get("path"))  # a wrong path fails at load(), not later
        return spark_ddl(table_option(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        table = table_option(self.options)
        expected = [(f.name, _SPARK_TYPES[f.type].lower()) for f in SCHEMAS[table]]
        given = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        if given != expected:
            raise InvalidValueError(
                f"the {table} table of {FORMAT} has the fixed schema {spark_ddl(table)}; "
                f"got {schema.simpleString()} (select or cast columns after loading instead)"
            )
        if _pushdown_option(self.options) and pushdown_supported():
            return PushdownReader(self.options)
        return RocketMQIndexReader(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream``: the store's new entries (see
        :mod:`rmqarrow.converters.spark.streaming`)."""
        from rmqarrow.converters.spark.streaming import stream_reader_of

        return stream_reader_of(FORMAT, self.options)


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("rocketmq-index")`` available in ``spark``, and the
    streaming sources ``spark.readStream.format("rocketmq-index")`` and
    ``spark.readStream.format("rocketmq-commitlog")``
    (:mod:`rmqarrow.converters.spark.streaming`)."""
    from rmqarrow.converters.spark.commitlog import register as register_commitlog

    spark.dataSource.register(RocketMQIndexDataSource)
    register_commitlog(spark)
