"""The ``messages/`` table of a Spark export: one Parquet part per CommitLog file.

``rmqarrow export --engine spark --commitlog DIR`` writes the table the local exporter
writes (:func:`rmqarrow.converters.arrow.messages.write_messages_parquet`, same schema and
Parquet writer), but each CommitLog file is decoded and written by its own task as
``messages/part-NNNNN.parquet`` (file order).  The rows equal the local export's; only
their split into parts differs (readers take every part of a table).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA, write_messages_parquet
from rmqarrow.converters.spark.commitlog import FileTask, file_tasks
from rmqarrow.converters.spark.export import on_executor, run_tasks

from rmqarrow.errors import RmqArrowError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["write_messages_parts"]


def _write_part(task: tuple[int, FileTask, str, bool]) -> dict[str, Any]:
    """Spark task: one CommitLog file's messages as one part; its row count or its error."""
    rank, (path, start, end, _size, _table, rows), out_text, on_cluster = task
    out = Path(out_text) / f"part-{rank:05d}.parquet"
    try:
        n = write_messages_parquet(path, out, batch_rows=rows, start_offset=start, end_offset=end)
    except RmqArrowError as exc:
        message = on_executor(exc) if on_cluster else str(exc)
        return {"error": type(exc).__name__, "message": message}
    return {"rank": rank, "rows": n}


def write_messages_parts(
    spark: SparkSession, commitlog: str | os.PathLike[str], out_dir: Path, on_cluster: bool
) -> dict[str, Any]:
    """Write ``out_dir/messages/`` from ``commitlog`` on Spark; the manifest's entry for it
    (``{"rows": n, "commitlog": absolute path}``, as the local exporter records it)."""
    log = Path(commitlog).absolute()
    tasks = file_tasks(log, "messages")
    target = out_dir / "messages"
    target.mkdir()
    work = [(rank, task, str(target), on_cluster) for rank, task in enumerate(tasks)]
    results = run_tasks(spark, _write_part, work)
    if not work:  # an empty log: one empty part, as the local exporter writes
        pq.write_table(MESSAGES_SCHEMA.empty_table(), target / "part-00000.parquet")
    return {"rows": sum(int(r["rows"]) for r in results), "commitlog": str(log)}
