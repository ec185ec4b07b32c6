"""A live store as Spark Structured Streaming sources: new index entries, new messages.

``spark.readStream.format("rocketmq_index").load(STORE_DIR)`` streams the ``entries`` table
of a native store as a broker appends to it; ``spark.readStream.format("rocketmq_commitlog")
.load(COMMITLOG_DIR)`` streams the ``messages`` (or ``index_records``) table of a CommitLog.
Both are PySpark Python data sources (``DataSourceStreamReader``, Spark 4), registered with
the batch formats by :func:`rmqarrow.converters.spark.source.register`; their rows and schemas
are the batch sources', so a stream's sink holds what a batch read of the final store gives.

Offsets say how far each source has read, and are all a restart needs:

* ``rocketmq_index``: per index file, its committed entry count (header ``indexCount - 1``:
  the writer moves the header last, so every entry below it is complete), the physical
  offset of its first entry, which tells a file replaced under the same name from the one
  read, and its capacity (the entries of a full file).  A file that appears is read from
  its first entry; a file the broker deleted drops out of the offset.  A file deleted
  before the query read all it held (the broker expires only full files: the capacity
  says how many entries were not read) is data loss: with ``failOnDataLoss`` (the
  default) the query stops with :class:`~rmqarrow.errors.DataLossError` naming the file
  and the entries, else they are skipped with a warning.  A file holding fewer committed
  entries than already read, or another first entry, stops the query with
  :class:`StoreWentBackwardsError` (start over on a new checkpoint).
* ``rocketmq_commitlog``: the physical offset just past the last complete record.  In the
  newest file the walk stops before a record that is not complete yet (cut short, or
  followed by bytes still being written); damage in an older file is an error.  Files
  expired before they were read are data loss, as for the index.

A micro-batch reads exactly the rows between two offsets, which Spark writes to its
checkpoint before running the batch, so a query restarted from its checkpoint (after a
crash, even kill -9) re-reads the same rows for an unfinished batch; with a file sink
(whose own log makes a batch's output appear once) every entry lands exactly once.
``Trigger.AvailableNow`` reads what is there when the query starts, then stops.

Options (:mod:`rmqarrow.converters.spark.options`), besides the batch sources' (only the
``entries`` table of the index streams): ``startingOffsets`` (``earliest``, the default;
``latest``; for the index also a JSON object of file name -> entries already read, -2 for
earliest, -1 for latest: files it does not name start at their first entry),
``maxEntriesPerTrigger`` (index) / ``maxFilesPerTrigger`` (CommitLog) to cap a micro-batch
(Spark >= 4.2), and ``failOnDataLoss``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from rmqarrow.converters.arrow.messages import messages_batches
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.spark.batches import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_PIECE_ROWS,
    Piece,
    piece_batches,
)
from rmqarrow.converters.spark.options import parse
from rmqarrow.converters.spark.paths import (
    INDEX_FORMAT,
    LOG_FORMAT,
    commitlog_dir_of,
    index_path_of,
)
from rmqarrow.converters.spark.session import check_pyspark

from rmqarrow.commitlog import CommitLogReader, bounded_reader, complete_end_offset
from rmqarrow.commitlog.index_arrow import DEFAULT_BATCH_ROWS as LOG_BATCH_ROWS
from rmqarrow.commitlog.index_arrow import index_record_batches
from rmqarrow.errors import (
    DataLossError,
    InvalidValueError,
    RmqArrowError,
    StoreNotFoundError,
    StoreWentBackwardsError,
    UsageError,
)
from rmqarrow.format.layout import (
    ENTRY_DTYPE,
    HEADER_DTYPE,
    HEADER_SIZE,
    INDEX_SIZE,
    Geometry,
    GeometryHint,
    check_header,
    check_size,
    geometry_hint,
)
from rmqarrow.format.naming import list_index_files

check_pyspark()


from pyspark.sql.datasource import (  # noqa: E402 - after the clear error above
    DataSourceStreamReader,
    InputPartition,
)

try:  # Spark >= 4.2: Trigger.AvailableNow and read limits for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxFiles,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - older pyspark: the query runs all it finds at once

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in: older Spark never calls ``prepareForTriggerAvailableNow``."""

    class ReadAllAvailable:  # type: ignore[no-redef]
        """Stand-in: older Spark never asks for a read limit."""

    class ReadMaxRows:  # type: ignore[no-redef]
        def __init__(self, max_rows: int) -> None:
            self.max_rows = max_rows

    class ReadMaxFiles:  # type: ignore[no-redef]
        def __init__(self, max_files: int) -> None:
            self.max_files = max_files


__all__ = [
    "CommitLogStreamReader",
    "IndexStreamReader",
    "StoreWentBackwardsError",
    "index_offsets",
    "open_stream",
]

_log = logging.getLogger(__name__)


def _starting(raw: str | None, fmt: str, per_file: bool) -> str | dict[str, int]:
    """``startingOffsets``: ``earliest`` (the default), ``latest``, or (``per_file``) a JSON
    object of index file name -> entries already read (-2: earliest, -1: latest)."""
    text = (raw or "earliest").strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    if not per_file:  # one offset for the whole log: no map to give
        raise UsageError(f"{fmt}: option startingOffsets must be earliest or latest, got {raw!r}")
    try:
        given = json.loads(text)
    except ValueError:
        given = None
    if not isinstance(given, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= -2 for v in given.values()
    ):
        raise UsageError(
            f"{fmt}: option startingOffsets must be earliest, latest or a JSON object "
            f'{{"INDEX_FILE_NAME": ENTRIES_READ, ...}} (-2: earliest, -1: latest), got {raw!r}'
        )
    return {str(k): int(v) for k, v in given.items()}


# --- rocketmq_index -----------------------------------------------------------------


@dataclass(frozen=True)
class _FileState:
    """One index file as a stream sees it: committed entries and its first entry."""

    entries: int
    first_phy_offset: int
    capacity: int  # entries a full file holds (indexNum - 1): the broker then rolls

    def offset(self) -> dict[str, int]:
        return {
            "entries": self.entries,
            "first_phy_offset": self.first_phy_offset,
            "capacity": self.capacity,
        }


def _file_state(path: Path, geometry: GeometryHint) -> _FileState:
    """The header and the first entry's offset, read with two small reads: every trigger
    looks at every file, and mapping each one cost more than the reads (a store of
    thousands of files)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        fitted = geometry.resolve(size)[0]
        check_size(path, size, fitted)
        header = np.frombuffer(os.pread(fd, HEADER_SIZE, 0), HEADER_DTYPE)
        check_header(path, fitted, header)
        entries = max(int(header[0]["index_count"]) - 1, 0)
        first = 0
        if entries:
            raw = os.pread(fd, INDEX_SIZE, fitted.entries_offset + INDEX_SIZE)
            first = int(np.frombuffer(raw, ENTRY_DTYPE)[0]["phy_offset"])
    finally:
        os.close(fd)
    return _FileState(entries, first, fitted.index_num - 1)


def index_offsets(
    store_dir: str | os.PathLike[str],
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> dict[str, dict[str, int]]:
    """Every index file of ``store_dir`` (or the one index file it names) by name:
    ``entries`` (committed), ``first_phy_offset`` (0 while the file is empty) and
    ``capacity`` (the entries of a full file); the ``rocketmq_index`` stream's offset.

    A file of size 0 is one the broker is creating this instant: left for the next look.
    The geometry is ``geometry`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or ``hash_slot_num``/``index_num`` (not both forms).
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
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
            out[path.name] = _file_state(path, hint).offset()
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

    def __init__(self, options: Mapping[str, Any]) -> None:
        from rmqarrow.converters.spark.source import table_option

        given = parse(options, "index", "stream")
        self.path = index_path_of(given.get("path"))  # refused as the stream starts
        table = table_option(given)
        if table != "entries":
            raise InvalidValueError(
                f"only the entries table streams (files and slots are rewritten in place); "
                f"got table={table!r}: read it with spark.read instead"
            )
        self.geometry = GeometryHint(given.get("hashSlotNum"), given.get("indexNum"))
        self.piece_rows: int = given.get("pieceRows", DEFAULT_PIECE_ROWS)
        self.batch_rows: int = given.get("batchRows", DEFAULT_BATCH_ROWS)
        self.starting = _starting(given.get("startingOffsets"), INDEX_FORMAT, per_file=True)
        self.max_entries: int | None = given.get("maxEntriesPerTrigger")
        self.fail_on_data_loss: bool = given.get("failOnDataLoss", True)
        self._target: dict[str, Any] | None = None

    def _now(self) -> dict[str, Any]:
        return {"files": index_offsets(self.path, geometry=self.geometry)}

    def initialOffset(self) -> dict[str, Any]:
        if self.starting == "earliest":
            return {"files": {}}
        now = _files_offset(self._now())
        if self.starting == "latest":
            return {"files": now}
        assert isinstance(self.starting, dict)
        files: dict[str, Any] = {}
        for name, entries in sorted(self.starting.items()):
            if name not in now:
                held = f"{min(now)} .. {max(now)}" if now else "none"
                raise UsageError(
                    f"{INDEX_FORMAT}: option startingOffsets names {name}, not an index file "
                    f"of {self.path} (its files: {held})"
                )
            state = dict(now[name])
            if entries > state["entries"]:
                raise UsageError(
                    f"{INDEX_FORMAT}: option startingOffsets starts {name} after entry "
                    f"{entries}; it holds {state['entries']} committed entries"
                )
            if entries == -2:
                continue  # from its first entry, as a file the stream has not seen
            if entries >= 0:
                state["entries"] = entries
            files[name] = state
        return {"files": files}

    def getDefaultReadLimit(self) -> Any:
        if self.max_entries is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.max_entries)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._now()

    def _lost(self, what: str, count: str) -> None:
        """Entries the query will never read: fail (``failOnDataLoss``) or warn."""
        if self.fail_on_data_loss:
            raise DataLossError(
                f"{INDEX_FORMAT}: {what} ({count} lost); to go on without them, restart the "
                'query on the same checkpoint with .option("failOnDataLoss", "false")'
            )
        _log.warning("%s: %s (%s lost to this query)", INDEX_FORMAT, what, count)

    def _gone(self, begun: dict[str, Any], files: dict[str, Any]) -> None:
        """Files the query had begun that the store no longer has: lost entries, if the
        query had not read all a full file holds (the broker expires only full files)."""
        capacities = {int(v["capacity"]) for v in files.values() if "capacity" in v}
        for name in sorted(set(begun) - set(files)):
            read = int(begun[name]["entries"])
            capacity = begun[name].get("capacity")
            if capacity is None and len(capacities) == 1:  # a checkpoint of an older rmqarrow
                capacity = next(iter(capacities))
            if capacity is None:  # nothing tells how many entries it came to hold
                _log.warning(
                    "%s/%s: deleted from the store after the stream read %d of its entries; "
                    "any later ones are lost to this query",
                    self.path,
                    name,
                    read,
                )
            elif read < int(capacity):
                self._lost(
                    f"{self.path}/{name} was deleted from the store after the query read "
                    f"{read} of its entries, before it read entries {read + 1}..{capacity}",
                    f"{int(capacity) - read} entries",
                )
            else:
                _log.info(
                    "%s/%s: deleted from the store; the stream had read all of it", self.path, name
                )

    def latestOffset(  # the (start, limit) form: Spark >= 4.2 passes the checkpointed start
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        latest = self._target if self._target is not None else self._now()
        begun = _files_offset(start)
        files = _files_offset(latest)
        _check_forward(self.path, begun, files)
        self._gone(begun, files)
        if isinstance(limit, ReadMaxRows):
            files = _capped(begun, files, limit.max_rows)
        return {"files": files}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
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
                geometry = geometry_of(path, self.geometry)
            except FileNotFoundError:
                # the broker expired it after the offset was taken (a query stopped for
                # longer than the store keeps files): those entries cannot be read now
                self._lost(
                    f"{path} was deleted from the store before the stream read its entries "
                    f"{first + 1}..{last}",
                    f"{last - first} entries",
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
        from rmqarrow.converters.spark.source import spark_arrow_schema

        piece: Piece = partition.value
        rows = 0
        if not Path(piece.path).exists():  # deleted between planning and reading
            self._lost(
                f"{piece.path} was deleted from the store before the stream read its entries "
                f"{piece.start}..{piece.stop - 1}",
                f"{piece.stop - piece.start} entries",
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


def _capped(begun: dict[str, Any], files: dict[str, Any], budget: int) -> dict[str, Any]:
    """``files`` cut to at most ``budget`` entries past ``begun``, oldest files first (index
    file names are their creation times)."""
    out: dict[str, Any] = {}
    for name in sorted(files):
        now = files[name]
        read = int(begun[name]["entries"]) if name in begun else 0
        take = min(max(int(now["entries"]) - read, 0), budget)
        budget -= take
        if name in begun or take:
            out[name] = {**now, "entries": read + take}
    return out


# --- rocketmq_commitlog -------------------------------------------------------------


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

    def __init__(self, options: Mapping[str, Any]) -> None:
        from rmqarrow.converters.spark.commitlog import table_option

        given = parse(options, "commitlog", "stream")
        self.path = commitlog_dir_of(given.get("path"))  # refused as the stream starts
        self.table = table_option(given)
        self.mapped_file_size: int | None = given.get("mappedFileSize")
        self.batch_rows: int | None = given.get("batchRows")
        self.starting = _starting(given.get("startingOffsets"), LOG_FORMAT, per_file=False)
        self.max_files: int | None = given.get("maxFilesPerTrigger")
        self.fail_on_data_loss: bool = given.get("failOnDataLoss", True)
        self._target: int | None = None

    def _log(self) -> CommitLogReader:
        return CommitLogReader(self.path, mapped_file_size=self.mapped_file_size)

    def initialOffset(self) -> dict[str, Any]:
        log = self._log()
        if self.starting == "latest" and log.files:
            return {"offset": self._end(int(log.files[-1].start_offset))}
        return {"offset": int(log.min_offset)}

    def _end(self, start: int) -> int:
        return complete_end_offset(self.path, start, mapped_file_size=self.mapped_file_size)

    def getDefaultReadLimit(self) -> Any:
        if self.max_files is None:
            return ReadAllAvailable()
        return ReadMaxFiles(self.max_files)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._end(int(self._log().min_offset))

    def _check_lost(self, begun: int, log: CommitLogReader) -> None:
        """Bytes before the log's first file the query had not read: fail or warn."""
        first = int(log.min_offset)
        if not log.files or begun >= first:
            return
        what = (
            f"{self.path}: the log now starts at physical offset {first}; the stream had read "
            f"up to {begun} (the broker expired the files between: {first - begun} bytes of "
            "messages lost)"
        )
        if self.fail_on_data_loss:
            raise DataLossError(
                f"{LOG_FORMAT}: {what}; to go on without them, restart the query on the "
                'same checkpoint with .option("failOnDataLoss", "false")'
            )
        _log.warning("%s: %s", LOG_FORMAT, what)

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        begun = int((start or {}).get("offset", 0))
        log = self._log()
        if start is not None:  # Spark before 4.2 does not say where the query stands
            self._check_lost(begun, log)
        end = max(self._target, begun) if self._target is not None else self._end(begun)
        if isinstance(limit, ReadMaxFiles) and end > begun:
            # a file's end is a record's end: the cap is the start of the file
            # max_files after the one the stream is in
            mapped = int(log.mapped_file_size)
            at = max(begun, int(log.min_offset))
            end = min(end, at - at % mapped + limit.max_files * mapped)
        return {"offset": end}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        lo, hi = int(start["offset"]), int(end["offset"])
        if hi <= lo:
            return []

        log = self._log()
        self._check_lost(lo, log)
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
            batches = index_record_batches(
                reader, start_offset=task.start, batch_rows=task.batch_rows, end_offset=task.stop
            )
        else:
            batches = messages_batches(
                reader, start_offset=task.start, batch_rows=task.batch_rows, end_offset=task.stop
            )
        for batch in batches:
            yield pa.RecordBatch.from_arrays(batch.columns, schema=nullable_schema(batch.schema))


class _Refused(DataSourceStreamReader):
    """A stream whose options or path were refused: every call raises that error.

    PySpark's stream runner loses an error raised while it creates the reader (its
    cleanup then calls ``stop()`` on the reader it never got, and reports that failure
    instead), so the refusal is raised from the runner's first call.
    """

    def __init__(self, error: RmqArrowError) -> None:
        self.error = error

    def initialOffset(self) -> dict[str, Any]:
        raise self.error

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        raise self.error

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        raise self.error

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        raise self.error


def open_stream(source: str, options: Mapping[str, Any]) -> DataSourceStreamReader:
    """The stream reader of ``source`` (``index`` / ``commitlog``), or one that raises
    its refusal from its first call (see :class:`_Refused`)."""
    try:
        if source == "index":
            return IndexStreamReader(options)
        return CommitLogStreamReader(options)
    except RmqArrowError as exc:
        return _Refused(exc)
