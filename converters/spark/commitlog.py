"""A broker's CommitLog as a Spark table, decoded in parallel: one task per file.

``spark.read.format("rocketmq-commitlog").load(COMMITLOG_DIR)`` gives the messages table
(:data:`rmqarrow.converters.arrow.messages.MESSAGES_SCHEMA`).  Every CommitLog file ends
with a blank (or end-of-file) record, so each file is decoded on its own by its own task
with :func:`rmqarrow.converters.arrow.messages.messages_batches`, the single-process
reader's decoder (same rows, same damage checks).  Files are listed on the driver (paths
made absolute); each executor maps its file and yields Arrow batches.

:func:`messages_frame` is what ``register_tables(..., commitlog=DIR)`` uses for the
``messages`` view.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rmqarrow.converters.spark.session import check_pyspark

from rmqarrow.errors import InvalidValueError, StoreNotFoundError

check_pyspark()

from pyspark.sql.datasource import (  # noqa: E402 - after the clear error above
    DataSource,
    DataSourceReader,
    InputPartition,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["FORMAT", "CommitLogDataSource", "file_batches", "messages_frame", "register",
           "spark_messages_ddl"]

FORMAT = "rocketmq-commitlog"


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"ARRAY<{_spark_type(t.value_type)}>"
    names = {pa.int8(): "TINYINT", pa.int32(): "INT", pa.int64(): "BIGINT", pa.string(): "STRING"}
    return names[t]


def spark_messages_ddl() -> str:
    """The messages table's Spark DDL (names and types of ``MESSAGES_SCHEMA``)."""
    from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA

    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in MESSAGES_SCHEMA)


def _nullable(schema: pa.Schema) -> pa.Schema:
    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_list(t):
            t = pa.list_(pa.field(t.value_field.name, t.value_type, nullable=True))
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.schema(fields)


def file_batches(
    commitlog_dir: str, start_offset: int, mapped_file_size: int
) -> Iterator[pa.RecordBatch]:
    """The messages of the one CommitLog file starting at ``start_offset``."""
    from rmqarrow.converters.arrow.messages import messages_batches

    from rmqarrow.commitlog.reader import CommitLogReader

    reader = CommitLogReader(commitlog_dir, mapped_file_size=mapped_file_size)
    end = start_offset + mapped_file_size
    for batch in messages_batches(reader, start_offset=start_offset):
        if batch.num_rows and batch.column(0)[0].as_py() >= end:
            return  # batches never span files: the next file is another task's
        yield batch


class CommitLogReaderSource(DataSourceReader):
    """One partition per CommitLog file."""

    def __init__(self, options: Any) -> None:
        path = options.get("path")
        if not path:
            raise InvalidValueError(
                f'no CommitLog directory: use spark.read.format("{FORMAT}").load(DIR)'
            )
        self.path = str(Path(str(path)).absolute())

    def partitions(self) -> Sequence[InputPartition]:
        from rmqarrow.commitlog.reader import CommitLogReader

        if not Path(self.path).is_dir():
            raise StoreNotFoundError(f"{self.path}: no such CommitLog directory")
        log = CommitLogReader(self.path)
        size = log.mapped_file_size
        return [InputPartition((self.path, f.start_offset, size)) for f in log.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        path, start, size = partition.value
        for batch in file_batches(path, start, size):
            yield pa.RecordBatch.from_arrays(batch.columns, schema=_nullable(batch.schema))


class CommitLogDataSource(DataSource):
    """The ``rocketmq-commitlog`` format: the messages table of a CommitLog directory."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return spark_messages_ddl()

    def reader(self, schema: StructType) -> DataSourceReader:
        return CommitLogReaderSource(self.options)


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("rocketmq-commitlog")`` available in ``spark``."""
    spark.dataSource.register(CommitLogDataSource)


def messages_frame(spark: SparkSession, commitlog_dir: str | os.PathLike[str]) -> DataFrame:
    """The messages of ``commitlog_dir`` as a DataFrame decoded by the executors."""
    register(spark)
    return spark.read.format(FORMAT).load(str(Path(commitlog_dir).absolute()))
