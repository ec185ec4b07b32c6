"""A live store as Spark Structured Streaming sources: new index entries, new messages.

``spark.readStream.format("rocketmq-index").load(STORE_DIR)`` streams the ``entries`` table
of a native store as a broker appends to it; ``spark.readStream.format("rocketmq-commitlog")
.load(COMMITLOG_DIR)`` streams the ``messages`` (or ``index_records``) table of a CommitLog.
Both are PySpark Python data sources (``DataSourceStreamReader``, Spark 4), registered with
the batch formats by :func:`rmqarrow.converters.spark.source.register`; their rows and schemas
are the batch sources', so a stream's sink holds what a batch read of the final store gives.

Offsets say how far each source has read, and are all a restart needs:

* ``rocketmq-index``: per index file, its committed entry count (header ``indexCount - 1``:
  the writer moves the header last, so every entry below it is complete) and the physical
  offset of its first entry, which tells a file replaced under the same name from the one
  read.  A file that appears is read from its first entry; a file the broker deleted drops
  out of the offset (entries of it the query had planned but not read, when the broker
  expired it first, are skipped with a warning naming how many: they cannot be read
  any more, and failing would fail every restart of that batch); a file holding fewer
  committed entries than already read, or another
  first entry, stops the query with :class:`StoreWentBackwardsError` (start over on a new
  checkpoint).
* ``rocketmq-commitlog``: the physical offset just past the last complete record.  In the
  newest file the walk stops before a record that is not complete yet (cut short, or
  followed by bytes still being written); damage in an older file is an error.

A micro-batch reads exactly the rows between two offsets, which Spark writes to its
checkpoint before running the batch, so a query restarted from its checkpoint (after a
crash, even kill -9) re-reads the same rows for an unfinished batch; with a file sink
(whose own log makes a batch's output appear once) every entry lands exactly once.
``Trigger.AvailableNow`` reads what is there when the query starts, then stops.

Options: ``hash_slot_num``, ``index_num``, ``piece_rows``, ``batch_rows`` as the batch
source (``rocketmq-index``; only the ``entries`` table streams); ``table``,
``mapped_file_size`` (needed while the only file is still being written by a writer that
does not preallocate) and ``batch_rows`` (``rocketmq-commitlog``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from rmqarrow.converters.spark.batches import DEFAULT_BATCH_ROWS, DEFAULT_PIECE_ROWS, Piece
from rmqarrow.converters.spark.paths import commitlog_dir_of, index_path_of
from rmqarrow.converters.spark.session import check_pyspark

from rmqarrow.commitlog import CommitLogReader, bounded_reader, complete_end_offset
from rmqarrow.errors import (
    InvalidValueError,
    StoreNotFoundError,
    StoreWentBackwardsError,
)

check_pyspark()

from pyspark.sql.datasource import (  # noqa: E402 - after the clear error above
    DataSourceStreamReader,
    InputPartition,
)

try:  # Spark >= 4.2: Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - older pyspark: the query runs all it finds at once

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in: older Spark never calls ``prepareForTriggerAvailableNow``."""


__all__ = [
    "CommitLogStreamReader",
    "IndexStreamReader",
    "StoreWentBackwardsError",
    "index_offsets",
    "stream_reader_of",
]

_log = logging.getLogger(__name__)


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


# --- rocketmq-index -----------------------------------------------------------------


@dataclass(frozen=True)
class _FileState:
    """One index file as a stream sees it: committed entries and its first entry."""

    entries: int
    first_phy_offset: int

    def offset(self) -> dict[str, int]:
        return {"entries": self.entries, "first_phy_offset": self.first_phy_offset}


def _file_state(path: Path, hash_slot_num: int | None, index_num: int | None) -> _FileState:
    """The header and the first entry's offset, read with two small reads: every trigger
    looks at every file, and mapping each one cost more than the reads (a store of
    thousands of files)."""
    import numpy as np

    from rmqarrow.format.layout import (
        ENTRY_DTYPE,
        HEADER_DTYPE,
        HEADER_SIZE,
        INDEX_SIZE,
        check_header,
        check_size,
        resolve_geometry,
    )

    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        geometry = resolve_geometry(size, hash_slot_num, index_num)[0]
        check_size(path, size, geometry)
        header = np.frombuffer(os.pread(fd, HEADER_SIZE, 0), HEADER_DTYPE)
        check_header(path, geometry, header)
        entries = max(int(header[0]["index_count"]) - 1, 0)
        first = 0
        if entries:
            raw = os.pread(fd, INDEX_SIZE, geometry.entries_offset + INDEX_SIZE)
            first = int(np.frombuffer(raw, ENTRY_DTYPE)[0]["phy_offset"])
    finally:
        os.close(fd)
    return _FileState(entries, first)


def index_offsets(
    store_dir: str | os.PathLike[str],
    *,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> dict[str, dict[str, int]]:
    """Every index file of ``store_dir`` (or the one index file it names) by name:
    ``entries`` (committed) and ``first_phy_offset`` (0 while the file is empty); the
    ``rocketmq-index`` stream's offset.

    A file of size 0 is one the broker is creating this instant: left for the next look.
    """
    from rmqarrow.format.naming import list_index_files

    root = Path(store_dir)
    if root.is_file():
        paths = [root]
    elif root.is_dir():
        paths = list_index_files(root)
    else:
        raise StoreNotFoundError(f"{root}: no such store directory")
    out: dict[str, dict[str, int]] = {}
    for path in paths:
        try:
            if path.stat().st_size == 0:
                continue
            out[path.name] = _file_state(path, hash_slot_num, index_num).offset()
        except FileNotFoundError:
            continue  # deleted since listed (the broker expired it): as if not there
    return out


def _check_forward(root: str, start: dict[str, Any], end: dict[str, Any]) -> None:
    """Refuse an end offset behind the start for a file both name."""
    for name, was in start.items():
        now = end.get(name)
        if now is None or not was["entries"]:
            continue
        if now["entries"] < was["entries"]:
            raise StoreWentBackwardsError(
                f"{root}/{name} holds {now['entries']} committed entries, fewer than the "
                f"{was['entries']} this query already read (truncated or replaced); "
                "start the query on a new checkpoint"
            )
        if now["first_phy_offset"] != was["first_phy_offset"]:
            raise StoreWentBackwardsError(
                f"{root}/{name} now starts at physical offset {now['first_phy_offset']}, "
                f"not {was['first_phy_offset']} as when read (the file was replaced); "
                "start the query on a new checkpoint"
            )


def _files_offset(offset: dict[str, Any] | None) -> dict[str, Any]:
    files = (offset or {}).get("files", {})
    return dict(files) if isinstance(files, dict) else {}


class IndexStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """New committed entries of every index file of a store, as Arrow batches."""

    def __init__(self, options: Any) -> None:
        from rmqarrow.converters.spark.source import table_option

        self.path = index_path_of(options.get("path"))  # refused as the stream starts
        table = table_option(options)
        if table != "entries":
            raise InvalidValueError(
                f"only the entries table streams (files and slots are rewritten in place); "
                f"got table={table!r}: read it with spark.read instead"
            )
        self.hash_slot_num = _int_option(options, "hash_slot_num", None)
        self.index_num = _int_option(options, "index_num", None)
        self.piece_rows = _int_option(options, "piece_rows", DEFAULT_PIECE_ROWS) or 1
        self.batch_rows = _int_option(options, "batch_rows", DEFAULT_BATCH_ROWS) or 1
        self._target: dict[str, Any] | None = None

    def _now(self) -> dict[str, Any]:
        return {
            "files": index_offsets(
                self.path, hash_slot_num=self.hash_slot_num, index_num=self.index_num
            )
        }

    def initialOffset(self) -> dict[str, Any]:
        return {"files": {}}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._now()

    def latestOffset(  # the (start, limit) form: Spark >= 4.2 passes the checkpointed start
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        latest = self._target if self._target is not None else self._now()
        begun = _files_offset(start)
        files = _files_offset(latest)
        _check_forward(self.path, begun, files)
        for name in sorted(set(begun) - set(files)):
            _log.info(
                "%s/%s: deleted from the store; the stream reads no more of it", self.path, name
            )
        return {"files": files}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        from rmqarrow.converters.arrow.tables import geometry_of

        begun, files = _files_offset(start), _files_offset(end)
        _check_forward(self.path, begun, files)
        parts: list[InputPartition] = []
        for name in sorted(files):
            first = int(begun[name]["entries"]) if name in begun else 0
            last = int(files[name]["entries"])
            if last <= first:
                continue
            root = Path(self.path)
            path = root if root.is_file() else root / name
            try:
                geometry = geometry_of(path, self.hash_slot_num, self.index_num)
            except FileNotFoundError:
                # the broker expired it after the offset was taken (a query stopped for
                # longer than the store keeps files): those entries cannot be read now
                _log.warning(
                    "%s: deleted from the store before the stream read entries %d..%d; "
                    "%d entries lost to this query",
                    path,
                    first + 1,
                    last,
                    last - first,
                )
                continue
            # entry n (1-based) is at position n: read positions first+1 .. last
            for lo in range(first + 1, last + 1, self.piece_rows):
                hi = min(lo + self.piece_rows, last + 1)
                parts.append(
                    InputPartition(
                        Piece(
                            str(path), "entries", geometry.hash_slot_num, geometry.index_num, lo, hi
                        )
                    )
                )
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from rmqarrow.converters.spark.batches import piece_batches
        from rmqarrow.converters.spark.source import spark_arrow_schema

        piece: Piece = partition.value
        rows = 0
        if not Path(piece.path).exists():  # deleted between planning and reading
            _log.warning(
                "%s: deleted from the store before the stream read entries %d..%d; "
                "%d entries lost to this query",
                piece.path,
                piece.start,
                piece.stop - 1,
                piece.stop - piece.start,
            )
            return
        for batch in piece_batches(
            piece, schema=spark_arrow_schema("entries"), batch_rows=self.batch_rows
        ):
            rows += batch.num_rows
            yield batch
        if rows != piece.stop - piece.start:
            raise StoreWentBackwardsError(
                f"{piece.path}: positions {piece.start}..{piece.stop - 1} planned, only "
                f"{rows} committed entries found there (truncated or replaced while read); "
                "start the query on a new checkpoint"
            )


# --- rocketmq-commitlog -------------------------------------------------------------


@dataclass(frozen=True)
class _LogRange:
    """Records ``[start, stop)`` of one CommitLog file (physical offsets)."""

    path: str
    start: int
    stop: int
    mapped_file_size: int
    table: str
    batch_rows: int


class CommitLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Records appended to a CommitLog since the last offset, as Arrow batches."""

    def __init__(self, options: Any) -> None:
        from rmqarrow.converters.spark.commitlog import TABLES, table_schema

        self.path = commitlog_dir_of(options.get("path"))  # refused as the stream starts
        self.table = str(options.get("table") or TABLES[0])
        table_schema(self.table)
        self.mapped_file_size = _int_option(options, "mapped_file_size", None)
        self.batch_rows = _int_option(options, "batch_rows", None)
        self._target: int | None = None

    def initialOffset(self) -> dict[str, Any]:
        log = CommitLogReader(self.path, mapped_file_size=self.mapped_file_size)
        return {"offset": int(log.min_offset)}

    def _end(self, start: int) -> int:
        return complete_end_offset(self.path, start, mapped_file_size=self.mapped_file_size)

    def prepareForTriggerAvailableNow(self) -> None:
        log = CommitLogReader(self.path, mapped_file_size=self.mapped_file_size)
        self._target = self._end(int(log.min_offset))

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        begun = int((start or {}).get("offset", 0))
        if self._target is not None:
            return {"offset": max(self._target, begun)}
        return {"offset": self._end(begun)}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        lo, hi = int(start["offset"]), int(end["offset"])
        if hi <= lo:
            return []
        from rmqarrow.commitlog.index_records import DEFAULT_BATCH_ROWS as LOG_BATCH_ROWS

        log = CommitLogReader(self.path, mapped_file_size=self.mapped_file_size)
        mapped = int(log.mapped_file_size)
        lo = max(lo, int(log.min_offset))
        rows = self.batch_rows or LOG_BATCH_ROWS
        parts: list[InputPartition] = []
        for f in log.files:
            a, b = max(lo, f.start_offset), min(hi, f.start_offset + mapped)
            if a < b:
                parts.append(InputPartition(_LogRange(self.path, a, b, mapped, self.table, rows)))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from rmqarrow.converters.spark.commitlog import nullable_schema

        task: _LogRange = partition.value
        reader = bounded_reader(task.path, task.stop, mapped_file_size=task.mapped_file_size)
        if task.table == "index_records":
            from rmqarrow.commitlog.index_records import index_record_batches

            batches = index_record_batches(
                reader, start_offset=task.start, batch_rows=task.batch_rows, end_offset=task.stop
            )
        else:
            from rmqarrow.converters.arrow.messages import messages_batches

            batches = messages_batches(
                reader, start_offset=task.start, batch_rows=task.batch_rows, end_offset=task.stop
            )
        for batch in batches:
            yield pa.RecordBatch.from_arrays(batch.columns, schema=nullable_schema(batch.schema))


def stream_reader_of(fmt: str, options: Any) -> DataSourceStreamReader:
    """The stream reader of one of the two formats (their ``DataSource.streamReader``)."""
    if fmt == "rocketmq-index":
        return IndexStreamReader(options)
    if fmt == "rocketmq-commitlog":
        return CommitLogStreamReader(options)
    raise InvalidValueError(f"no stream reader for format {fmt!r}")
