"""What the Spark sources read for a path: the one detector's answer, or one clear error.

``spark.read.format("rocketmq_index")`` and ``"rocketmq_commitlog"`` (batch and stream)
take any path an operator has, as the command line does: a broker store root resolves to
its ``index/`` (or its ``commitlog/``), an index directory or file and a CommitLog
directory are read as they are (:func:`rmqarrow.format.detect.require_index_store` and
:func:`rmqarrow.format.detect.require_commitlog` decide).  Anything else (an exported
dataset, an empty folder, a missing path, the wrong half of a store) is refused with one
line naming what the path is and what to pass, when the query is planned or the stream
starts, never as an empty result.  Paths come back absolute: executors resolve them in
their own working directories.
"""

from __future__ import annotations

from pathlib import Path

from rmqarrow.errors import DatasetError, InvalidValueError, RmqArrowError
from rmqarrow.format.detect import detect, require_commitlog, require_index_store

__all__ = [
    "INDEX_FORMAT",
    "INDEX_FORMAT_ALIAS",
    "LOG_FORMAT",
    "LOG_FORMAT_ALIAS",
    "commitlog_dir_of",
    "index_path_of",
]

#: The sources' names: one token each, so ``USING rocketmq_index`` needs no quotes in SQL.
INDEX_FORMAT = "rocketmq_index"
LOG_FORMAT = "rocketmq_commitlog"
#: Their first names, still registered.
INDEX_FORMAT_ALIAS = "rocketmq-index"
LOG_FORMAT_ALIAS = "rocketmq-commitlog"


def _given(path: object, fmt: str, what: str) -> str:
    if not path:
        raise InvalidValueError(
            f'no {what}: use spark.read.format("{fmt}").load(PATH), or in SQL '
            f"CREATE TEMPORARY VIEW name USING {fmt} OPTIONS (path '/absolute/path')"
        )
    return str(path)


def _refuse(exc: RmqArrowError, fmt: str, expected: str) -> RmqArrowError:
    """``exc`` said for a Spark source: its own line, then what the source takes."""
    text = str(exc).rstrip(".")
    return type(exc)(f"{fmt}: {text}; {fmt} reads {expected}")


def index_path_of(path: object) -> str:
    """The index directory (or one index file) the ``rocketmq_index`` source reads for
    ``path``; a broker store root gives its ``index/``."""
    given = _given(path, INDEX_FORMAT, "store directory")
    expected = "a broker store root, its index/ directory or one index file"
    if detect(given).is_dataset:
        raise DatasetError(
            f"{INDEX_FORMAT}: {given} is an exported Parquet dataset, not index files; read "
            "its tables with spark.read.parquet(DATASET + '/entries') or "
            f"rmqarrow.converters.spark.register_tables(spark, DATASET); {INDEX_FORMAT} "
            f"reads {expected}"
        )
    if detect(given).kind == "commitlog_dir":
        raise InvalidValueError(
            f"{INDEX_FORMAT}: {given} is a CommitLog directory, not index files; read its "
            f'messages with spark.read.format("{LOG_FORMAT}"); {INDEX_FORMAT} reads {expected}'
        )
    try:
        target = require_index_store(given)
    except RmqArrowError as exc:
        raise _refuse(exc, INDEX_FORMAT, expected) from None
    return str(Path(target.index_path).absolute())


def commitlog_dir_of(path: object) -> str:
    """The CommitLog directory the ``rocketmq_commitlog`` source reads for ``path``; a
    broker store root gives its ``commitlog/``."""
    given = _given(path, LOG_FORMAT, "CommitLog directory")
    expected = "a broker store root or its commitlog/ directory"
    if detect(given).is_dataset:
        raise DatasetError(
            f"{LOG_FORMAT}: {given} is an exported Parquet dataset, not a CommitLog; a "
            "dataset exported with its messages holds them in DATASET/messages "
            f"(spark.read.parquet); {LOG_FORMAT} reads {expected}"
        )
    try:
        found = require_commitlog(given)
    except RmqArrowError as exc:
        raise _refuse(exc, LOG_FORMAT, expected) from None
    return str(Path(found).absolute())
