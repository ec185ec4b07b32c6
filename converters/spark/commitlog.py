"""A broker's CommitLog as Spark tables, decoded in parallel: one task per file.

``spark.read.format("rocketmq_commitlog").load(COMMITLOG_DIR)`` gives the messages table
(:data:`rmqarrow.converters.arrow.messages.MESSAGES_SCHEMA`); with
``.option("table", "index_records")`` it gives the index records the bulk build consumes
(:data:`rmqarrow.commitlog.INDEX_RECORDS_SCHEMA`).  Every CommitLog file ends with a blank
(or end-of-file) record, so each file is decoded on its own by its own task with the
single-process reader's decoder (same rows, same damage checks): the task's reader walks
only its file (``end_offset``) but judges it as part of the whole log.  Files are listed
on the driver (paths made absolute); each executor maps its file and yields Arrow batches.

:func:`messages_frame` is what ``register_tables(..., commitlog=DIR)`` uses for the
``messages`` view; :func:`file_tasks` and :func:`file_batches` are shared with the ordered
read of :mod:`rmqarrow.converters.spark.records`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA, messages_batches
from rmqarrow.converters.spark.options import parse
from rmqarrow.converters.spark.paths import LOG_FORMAT, LOG_FORMAT_ALIAS, commitlog_dir_of
from rmqarrow.converters.spark.session import check_pyspark

from rmqarrow.commitlog.index_arrow import (
    DEFAULT_BATCH_ROWS,
    INDEX_RECORDS_SCHEMA,
    index_record_batches,
)
from rmqarrow.commitlog.reader import CommitLogReader
from rmqarrow.errors import InvalidValueError, StoreNotFoundError

check_pyspark()

from pyspark.sql.datasource import (  # noqa: E402 - after the clear error above
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "FORMAT",
    "TABLES",
    "CommitLogAliasDataSource",
    "CommitLogDataSource",
    "FileTask",
    "file_batches",
    "file_tasks",
    "index_records_frame",
    "messages_frame",
    "register",
    "spark_ddl",
    "spark_messages_ddl",
    "table_option",
]

FORMAT = LOG_FORMAT
#: The tables the source gives (``option("table", ...)``); the first is the default.
TABLES = ("messages", "index_records")
#: One task's work: (CommitLog dir, start offset, end offset, mapped file size, table,
#: batch rows).  The start is a file's first byte, or a resume offset inside it.
FileTask = tuple[str, int, int, int, str, int]


def table_schema(table: str) -> pa.Schema:
    if table == "messages":
        return MESSAGES_SCHEMA
    if table == "index_records":
        return INDEX_RECORDS_SCHEMA
    raise InvalidValueError(f"option table={table!r}: expected one of {', '.join(TABLES)}")


def table_option(options: Mapping[str, Any]) -> str:
    """The ``table`` option of checked options, else ``messages``; refused if unknown."""
    table = str(options.get("table") or TABLES[0]).lower()
    table_schema(table)
    return table


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"ARRAY<{_spark_type(t.value_type)}>"
    names = {pa.int8(): "TINYINT", pa.int32(): "INT", pa.int64(): "BIGINT", pa.string(): "STRING"}
    return names[t]


def spark_ddl(table: str = "messages") -> str:
    """The Spark DDL of one of :data:`TABLES` (names and types of its Arrow schema)."""
    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in table_schema(table))


def spark_messages_ddl() -> str:
    """The messages table's Spark DDL (names and types of ``MESSAGES_SCHEMA``)."""
    return spark_ddl("messages")


def nullable_schema(schema: pa.Schema) -> pa.Schema:
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_list(t):
            t = pa.list_(pa.field(t.value_field.name, t.value_type, nullable=True))
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.schema(fields)


def file_tasks(
    commitlog_dir: str | os.PathLike[str],
    table: str = "messages",
    *,
    start_offset: int = 0,
    batch_rows: int | None = None,
    mapped_file_size: int | None = None,
) -> list[FileTask]:
    """One task per CommitLog file holding data at or after ``start_offset``, in log order."""
    table_schema(table)
    path = Path(commitlog_dir).absolute()  # executors resolve paths in their own work dirs
    if not path.is_dir():
        raise StoreNotFoundError(f"{path}: no such CommitLog directory")
    log = CommitLogReader(path, mapped_file_size=mapped_file_size)
    size, rows = log.mapped_file_size, batch_rows or DEFAULT_BATCH_ROWS
    return [
        (str(path), max(start_offset, f.start_offset), f.start_offset + size, size, table, rows)
        for f in log.files
        if f.start_offset + size > start_offset
    ]


def file_batches(task: FileTask) -> Iterator[pa.RecordBatch]:
    """The batches of one task's file, in log order, by the single-process decoder."""
    path, start, end, size, table, rows = task
    reader = CommitLogReader(path, mapped_file_size=size)
    if table == "index_records":
        yield from index_record_batches(reader, start_offset=start, batch_rows=rows, end_offset=end)
        return

    yield from messages_batches(reader, start_offset=start, batch_rows=rows, end_offset=end)


class CommitLogReaderSource(DataSourceReader):
    """One partition per CommitLog file."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        given = parse(options, "commitlog", "batch")
        self.path = commitlog_dir_of(given.get("path"))  # refused here: at planning time
        self.table = table_option(given)
        self.batch_rows: int | None = given.get("batchRows")
        self.mapped_file_size: int | None = given.get("mappedFileSize")

    def partitions(self) -> Sequence[InputPartition]:
        tasks = file_tasks(
            self.path,
            self.table,
            batch_rows=self.batch_rows,
            mapped_file_size=self.mapped_file_size,
        )
        return [InputPartition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # Spark's one partition for a plan of none
            return
        for batch in file_batches(partition.value):
            yield pa.RecordBatch.from_arrays(batch.columns, schema=nullable_schema(batch.schema))


class CommitLogDataSource(DataSource):
    """The ``rocketmq_commitlog`` format: a CommitLog directory's messages or index records."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        given = parse(self.options, "commitlog", None)
        commitlog_dir_of(given.get("path"))  # a wrong path fails at load(), not later
        return spark_ddl(table_option(given))

    def reader(self, schema: StructType) -> DataSourceReader:
        return CommitLogReaderSource(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``spark.readStream``: records appended since the last offset."""
        from rmqarrow.converters.spark.streaming import open_stream

        return open_stream("commitlog", self.options)


class CommitLogAliasDataSource(CommitLogDataSource):
    """``rocketmq-commitlog``: the format's first name, still read."""

    @classmethod
    def name(cls) -> str:
        return LOG_FORMAT_ALIAS


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("rocketmq_commitlog")`` (and ``"rocketmq-commitlog"``)
    available in ``spark``."""
    spark.dataSource.register(CommitLogDataSource)
    spark.dataSource.register(CommitLogAliasDataSource)


def _frame(spark: SparkSession, commitlog_dir: str | os.PathLike[str], table: str) -> DataFrame:
    register(spark)
    path = str(Path(commitlog_dir).absolute())
    return spark.read.format(FORMAT).option("table", table).load(path)


def messages_frame(spark: SparkSession, commitlog_dir: str | os.PathLike[str]) -> DataFrame:
    """The messages of ``commitlog_dir`` as a DataFrame decoded by the executors."""
    return _frame(spark, commitlog_dir, "messages")


def index_records_frame(spark: SparkSession, commitlog_dir: str | os.PathLike[str]) -> DataFrame:
    """The index records of ``commitlog_dir`` (what the bulk build reads), decoded by the
    executors; rows equal :func:`rmqarrow.commitlog.index_records`'s."""
    return _frame(spark, commitlog_dir, "index_records")
