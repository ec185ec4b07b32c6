"""A CommitLog's index records decoded on Spark, handed to the driver in commit-log order.

``rmqarrow build --from-commitlog DIR --engine spark`` feeds the driver's bulk engine from
here: each file is decoded by its own task with the single-process decoder
(:func:`rmqarrow.converters.spark.commitlog.file_batches`, the rows of
:func:`rmqarrow.commitlog.index_records`), and the batches come back to the driver as
Arrow IPC bytes, file after file, each file's batches in offset order.  Nothing is sorted:
the tasks are the files in log order and Spark returns a job's partitions in that order.

Memory stays bounded: files are decoded a *window* at a time (as many as the cluster runs
at once, at most :data:`MAX_WINDOW`), the next window decoding while the driver builds
from the current one, so the driver holds at most two windows of index records.  A build
that stops early cancels the window still decoding (a job group of its own).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rmqarrow.converters.spark.commitlog import FileTask, file_batches, file_tasks
from rmqarrow.converters.spark.errors import spark_errors

from rmqarrow.commitlog.index_arrow import INDEX_RECORDS_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MAX_WINDOW", "ordered_index_records"]

#: Most files decoded at once (a 1 GiB file holds up to a few hundred MB of records).
MAX_WINDOW = 8


def _encode(tasks: Iterable[FileTask]) -> Iterator[bytes]:
    """Spark task: one file's index-record batches as Arrow IPC messages."""
    for task in tasks:
        for batch in file_batches(task):
            yield batch.serialize().to_pybytes()


def ordered_index_records(
    spark: SparkSession,
    commitlog_dir: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    batch_rows: int | None = None,
    window: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches of :data:`rmqarrow.commitlog.INDEX_RECORDS_SCHEMA` from ``start_offset`` on,
    in commit-log order, decoded by Spark's executors (one task per file).

    Equal, batch for batch, to ``index_records(commitlog_dir, start_offset=...,
    batch_rows=...)``; damage raises the same :class:`~rmqarrow.errors.CommitLogError`
    (with the executor that met it) after the batches before it.
    """
    tasks = file_tasks(
        commitlog_dir, "index_records", start_offset=start_offset, batch_rows=batch_rows
    )
    if not tasks:
        return
    sc = spark.sparkContext
    size = max(1, min(window or sc.defaultParallelism, MAX_WINDOW))
    rdd = sc.parallelize(tasks, len(tasks)).mapPartitions(_encode)
    windows = [list(range(lo, min(lo + size, len(tasks)))) for lo in range(0, len(tasks), size)]

    group = f"rmqarrow-commitlog-{uuid.uuid4().hex}"

    def run(parts: list[int]) -> list[Any]:
        sc.setJobGroup(group, "rmqarrow: CommitLog index records", interruptOnCancel=True)
        return sc.runJob(rdd, lambda blobs: blobs, parts)

    with (
        ThreadPoolExecutor(1, thread_name_prefix="rmqarrow-clog") as pool,
        spark_errors(sc.applicationId),
    ):
        ahead: Future[list[Any]] = pool.submit(run, windows[0])
        try:
            for following in [*windows[1:], None]:
                blobs = ahead.result()
                if following is not None:  # decode the next window while this one is built
                    ahead = pool.submit(run, following)
                try:
                    for blob in blobs:
                        yield pa.ipc.read_record_batch(pa.py_buffer(blob), INDEX_RECORDS_SCHEMA)
                finally:
                    del blobs
        except GeneratorExit:  # the build stopped (an error, Ctrl-C): drop the decoding
            if not ahead.done():
                sc.cancelJobGroup(group)
            raise
