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
  out of the offset; a file holding fewer committed entries than already read, or another
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
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from rmqarrow.converters.spark.batches import DEFAULT_BATCH_ROWS, DEFAULT_PIECE_ROWS, Piece
from rmqarrow.converters.spark.session import check_pyspark

from rmqarrow.errors import (
    CommitLogError,
    InvalidValueError,
    RmqArrowError,
    StoreNotFoundError,
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


if TYPE_CHECKING:
    from rmqarrow.commitlog._files import CommitLogFile
    from rmqarrow.commitlog._walk import Buf

__all__ = [
    "CommitLogStreamReader",
    "IndexStreamReader",
    "StoreWentBackwardsError",
    "commitlog_end_offset",
    "index_offsets",
    "stream_reader_of",
]

_log = logging.getLogger(__name__)


class StoreWentBackwardsError(RmqArrowError, ValueError):
    """A stream's checkpoint is ahead of its store: a file shrank, was replaced, or the
    CommitLog lost data the query already read."""


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


def _path_option(options: Any, fmt: str, what: str) -> str:
    path = options.get("path")
    if not path:
        raise InvalidValueError(
            f'no {what}: use spark.readStream.format("{fmt}").load({what.upper()})'
        )
    # executors resolve paths in their own work dirs
    return str(Path(str(path)).absolute())


# --- rocketmq-index -----------------------------------------------------------------


@dataclass(frozen=True)
class _FileState:
    """One index file as a stream sees it: committed entries and its first entry."""

    entries: int
    first_phy_offset: int

    def offset(self) -> dict[str, int]:
        return {"entries": self.entries, "first_phy_offset": self.first_phy_offset}


def _file_state(path: Path, hash_slot_num: int | None, index_num: int | None) -> _FileState:
    from rmqarrow.converters.arrow.tables import geometry_of

    from rmqarrow.format.layout import check_header, map_regions

    geometry = geometry_of(path, hash_slot_num, index_num)
    mapped = map_regions(path, geometry, writable=False)
    try:
        check_header(path, geometry, mapped.header)
        entries = max(int(mapped.header[0]["index_count"]) - 1, 0)
        first = int(mapped.entries[1]["phy_offset"]) if entries else 0
    finally:
        mapped.close()
    return _FileState(entries, first)


def index_offsets(
    store_dir: str | os.PathLike[str],
    *,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> dict[str, dict[str, int]]:
    """Every index file of ``store_dir`` by name: ``entries`` (committed) and
    ``first_phy_offset`` (0 while the file is empty); the ``rocketmq-index`` stream's offset.

    A file of size 0 is one the broker is creating this instant: left for the next look.
    """
    from rmqarrow.format.naming import list_index_files

    root = Path(store_dir)
    if not root.is_dir():
        raise StoreNotFoundError(f"{root}: no such store directory")
    out: dict[str, dict[str, int]] = {}
    for path in list_index_files(root):
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
        from rmqarrow.converters.spark.source import _table_option

        self.path = _path_option(options, "rocketmq-index", "store_dir")
        table = _table_option(options)
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
        return {"files": index_offsets(
            self.path, hash_slot_num=self.hash_slot_num, index_num=self.index_num)}

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
            _log.info("%s/%s: deleted from the store; the stream reads no more of it",
                      self.path, name)
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
            path = Path(self.path) / name
            geometry = geometry_of(path, self.hash_slot_num, self.index_num)
            # entry n (1-based) is at position n: read positions first+1 .. last
            for lo in range(first + 1, last + 1, self.piece_rows):
                hi = min(lo + self.piece_rows, last + 1)
                parts.append(InputPartition(Piece(
                    str(path), "entries", geometry.hash_slot_num, geometry.index_num, lo, hi)))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from rmqarrow.converters.spark.batches import piece_batches
        from rmqarrow.converters.spark.source import spark_arrow_schema

        piece: Piece = partition.value
        rows = 0
        for batch in piece_batches(piece, schema=spark_arrow_schema("entries"),
                                   batch_rows=self.batch_rows):
            rows += batch.num_rows
            yield batch
        if rows != piece.stop - piece.start:
            raise StoreWentBackwardsError(
                f"{piece.path}: positions {piece.start}..{piece.stop - 1} planned, only "
                f"{rows} committed entries found there (truncated or replaced while read); "
                "start the query on a new checkpoint"
            )


# --- rocketmq-commitlog -------------------------------------------------------------


def _open_log(path: str, mapped_file_size: int | None) -> Any:
    from rmqarrow.commitlog.reader import CommitLogReader

    return CommitLogReader(path, mapped_file_size=mapped_file_size)


def _complete_end(buf: Buf, file: CommitLogFile, mapped: int, pos: int, newest: bool) -> int:
    """Position after the record at ``pos`` (which the walk found well framed), or ``pos``
    when it is the newest file's last record and its bytes are not all there yet.

    A broker copies a record into its preallocated file front to back, so a record cut
    short keeps its frame (the lengths come first) and ends in zeros where its last bytes
    will go.  RocketMQ ends every property with the separator 0x02, and a record without
    properties ends with its topic (never a NUL): a last byte of zero there means the copy
    is still going on.  A record that another one follows is always whole.
    """
    from rmqarrow.commitlog._walk import END, Damage, check_record
    from rmqarrow.commitlog.record import parse_record

    end = pos + check_record(buf, pos, file.size, mapped, file.start_offset)
    if not newest:
        return end
    try:
        if check_record(buf, end, file.size, mapped, file.start_offset) == END:
            return end  # the file is closed
    except Damage:
        pass  # what follows is being written: judge the record itself
    try:
        rec = parse_record(buf, pos, file.path, file.start_offset)
    except (RmqArrowError, ValueError):
        return pos
    if rec.properties_raw:
        whole = rec.properties_raw[-1] != 0
    else:
        whole = bool(rec.topic) and not rec.topic.endswith("\x00")
    return end if whole else pos


def commitlog_end_offset(
    commitlog_dir: str | os.PathLike[str],
    start_offset: int,
    *,
    mapped_file_size: int | None = None,
) -> int:
    """The physical offset just past the last complete record at or after ``start_offset``.

    Records are walked frame by frame (no field is decoded).  In the newest file a record
    that is not complete yet ends the walk (a writer is in the middle of it); damage in an
    older file raises :class:`~rmqarrow.errors.CommitLogError`.  An offset past the log's
    end means the log went backwards: :class:`StoreWentBackwardsError`.
    """
    from rmqarrow.commitlog._walk import record_positions
    from rmqarrow.commitlog.reader import _mapped

    log = _open_log(str(commitlog_dir), mapped_file_size)
    mapped = log.mapped_file_size
    if log.files and start_offset < log.min_offset:
        _log.warning("%s: the log now starts at %d, after offset %d the stream had reached "
                     "(expired files): the messages between are skipped",
                     commitlog_dir, log.min_offset, start_offset)
        start_offset = log.min_offset
    end = start_offset
    for file, start_pos, is_last in log._files_from(start_offset):
        with _mapped(file.path, file.size) as buf:
            found, damage = record_positions(
                buf, file.size, mapped, file.start_offset, start_pos, is_last)
            if len(found):
                last = int(found[-1])
                newest = is_last and damage is None
                end = file.start_offset + _complete_end(buf, file, mapped, last, newest)
            else:
                end = max(end, file.start_offset + start_pos)
            del found
        if damage is not None:
            if not is_last:
                raise CommitLogError(
                    f"{file.path}: physical offset {file.start_offset + damage.position}: "
                    f"{damage.reason}")
            # the newest file: a record still being written; read up to it, later the rest
            end = file.start_offset + damage.position
            break
    if log.files and start_offset > log.max_offset:
        raise StoreWentBackwardsError(
            f"{commitlog_dir}: the stream has read up to physical offset {start_offset}, past "
            f"the log's end {log.max_offset} (files deleted or replaced); start the query on "
            "a new checkpoint")
    return end


def _range_reader(path: str, mapped: int, stop: int) -> Any:
    """A CommitLog reader that yields only records before ``stop`` and ignores what lies
    at or past it (the newest file's tail, still being written)."""
    from rmqarrow.commitlog.reader import CommitLogReader

    class _Reader(CommitLogReader):
        def _damage(self, file: CommitLogFile, position: int, reason: str,
                    unread: tuple[int, int] | None = None) -> None:
            if file.start_offset + position >= stop:
                return
            super()._damage(file, position, reason, unread)

        def positions(
            self, start_offset: int = 0, end_offset: int | None = None
        ) -> Iterator[tuple[CommitLogFile, Buf, np.ndarray[Any, np.dtype[np.int64]]]]:
            for file, buf, found in super().positions(start_offset, end_offset):
                yield file, buf, found[found < stop - file.start_offset]

    return _Reader(path, mapped_file_size=mapped)


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
        from rmqarrow.converters.spark.commitlog import TABLES, _schema

        self.path = _path_option(options, "rocketmq-commitlog", "commitlog_dir")
        self.table = str(options.get("table") or TABLES[0])
        _schema(self.table)
        self.mapped_file_size = _int_option(options, "mapped_file_size", None)
        self.batch_rows = _int_option(options, "batch_rows", None)
        self._target: int | None = None

    def initialOffset(self) -> dict[str, Any]:
        log = _open_log(self.path, self.mapped_file_size)
        return {"offset": int(log.min_offset)}

    def _end(self, start: int) -> int:
        return commitlog_end_offset(self.path, start, mapped_file_size=self.mapped_file_size)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._end(int(_open_log(self.path, self.mapped_file_size).min_offset))

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

        log = _open_log(self.path, self.mapped_file_size)
        mapped = int(log.mapped_file_size)
        lo = max(lo, int(log.min_offset))
        rows = self.batch_rows or LOG_BATCH_ROWS
        parts: list[InputPartition] = []
        for f in log.files:
            a, b = max(lo, f.start_offset), min(hi, f.start_offset + mapped)
            if a < b:
                parts.append(InputPartition(_LogRange(
                    self.path, a, b, mapped, self.table, rows)))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from rmqarrow.converters.spark.commitlog import _nullable

        task: _LogRange = partition.value
        reader = _range_reader(task.path, task.mapped_file_size, task.stop)
        if task.table == "index_records":
            from rmqarrow.commitlog.index_records import index_record_batches

            batches = index_record_batches(reader, start_offset=task.start,
                                           batch_rows=task.batch_rows, end_offset=task.stop)
        else:
            from rmqarrow.converters.arrow.messages import messages_batches

            batches = messages_batches(reader, start_offset=task.start,
                                       batch_rows=task.batch_rows, end_offset=task.stop)
        for batch in batches:
            yield pa.RecordBatch.from_arrays(batch.columns, schema=_nullable(batch.schema))


def stream_reader_of(fmt: str, options: Any) -> DataSourceStreamReader:
    """The stream reader of one of the two formats (their ``DataSource.streamReader``)."""
    if fmt == "rocketmq-index":
        return IndexStreamReader(options)
    if fmt == "rocketmq-commitlog":
        return CommitLogStreamReader(options)
    raise InvalidValueError(f"no stream reader for format {fmt!r}")

