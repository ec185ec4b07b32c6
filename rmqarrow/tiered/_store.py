"""``TieredIndexStore``: a broker's tiered index files as RocketMQ's IndexStoreService sees them.

Local files are ``<root>/tiered_index_file/<beginTimestamp>``; uploaded segments live in one
folder (see :mod:`rmqarrow.tiered.layout.naming`).  Files are keyed by begin timestamp and an
uploaded segment replaces the local file of the same timestamp (rules 27-28 of
:mod:`rmqarrow.tiered._rules`).  Not reproduced: renaming old-format files ``0000``/``1111``,
deleting ``compacting/`` at start-up, expiry, and the background upload thread.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from rmqarrow._broker import check_store_writable
from rmqarrow._closing import Closing
from rmqarrow.errors import (
    InvalidValueError,
    ReadOnlyIndexError,
    StoreNotFoundError,
    TieredReadError,
)
from rmqarrow.format.layout import Geometry, GeometryHint
from rmqarrow.tiered.layout.naming import LOCAL_DIR_NAME, parse_segment_name, segment_file_name

from ._args import (
    check_geometry,
    check_int,
    check_long,
    check_text,
    distinct_keys,
    tiered_counts,
)
from ._compacted import CompactedIndexFile
from ._rules import is_blank_topic
from ._types import AppendResult, FileStatus, IndexItem, as_tiered_queries
from ._unsealed import TieredIndexFile, begin_timestamp_of_name

__all__ = ["TieredIndexStore", "merge_answers"]


def merge_answers(per_file: list[list[IndexItem] | Exception], max_count: int) -> list[IndexItem]:
    """Rule 28's merge of the selected files' answers (newest file first).

    Items are keyed by (queueId, offset) and added while fewer than ``max_count`` are held
    (a repeated key replaces the value in place); a failure is raised only when nothing was
    found.  Every engine merges through this function.
    """
    merged: dict[tuple[int, int], IndexItem] = {}
    failure: Exception | None = None
    for answer in per_file:
        if isinstance(answer, Exception):
            failure = failure or answer
            continue
        for item in answer:
            if len(merged) < max_count:
                merged[(item.queue_id, item.offset)] = item
    if not merged and failure is not None:
        raise failure
    return list(merged.values())[: max(max_count, 0)]


AnyIndexFile = TieredIndexFile | CompactedIndexFile


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TieredIndexStore(Closing):
    """Local tiered index files plus uploaded segments, queried newest first."""

    def __init__(
        self,
        local_dir: Path,
        segment_dir: Path | None,
        geometry: tuple[int, int],
        writable: bool,
        clock: Callable[[], int],
    ) -> None:
        self._local_dir = local_dir
        self._segment_dir = segment_dir
        self._slots, self._items = geometry
        self._writable = writable
        self._clock = clock
        self._force = False  # see open(): a forced store forces the writes of its files
        self._table: dict[int, AnyIndexFile] = {}
        self._write_file: TieredIndexFile | None = None
        self._segment_end = 0

    @classmethod
    def open(
        cls,
        store_path_root_dir: str | os.PathLike[str],
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        segment_dir: str | os.PathLike[str] | None = None,
        writable: bool = False,
        clock: Callable[[], int] = _now_ms,
        *,
        force: bool = False,
        geometry: Geometry | GeometryHint | None = None,
    ) -> TieredIndexStore:
        """Open ``<store_path_root_dir>/tiered_index_file`` and the optional segment folder.

        Read-only by default (no byte changes); ``writable=True`` reopens the local files as
        RocketMQ does at start-up (end timestamps reset), makes the newest the write file and
        creates the folders when missing.  ``clock`` (ms) names new files.  Writable, the
        store root of a running RocketMQ broker is refused (:mod:`rmqarrow._broker`;
        ``force`` only for a copy whose ``abort`` is left without a ``lock`` file).
        ``geometry`` or ``hash_slot_num``/``index_num`` (not both forms) give ``S`` and
        ``N``; what is not given is the tiered default.
        """
        s, n = check_geometry(*tiered_counts(geometry, (hash_slot_num, index_num)))
        local = Path(store_path_root_dir) / LOCAL_DIR_NAME
        segments = None if segment_dir is None else Path(segment_dir)
        if writable:
            check_store_writable(local, force=force)
            local.mkdir(parents=True, exist_ok=True)
            if segments is not None:
                segments.mkdir(parents=True, exist_ok=True)
        elif not Path(store_path_root_dir).is_dir():
            raise StoreNotFoundError(f"{store_path_root_dir}: no such store directory")
        store = cls(local, segments, (s, n), writable, clock)
        store._force = force
        try:
            store._load()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open_folder(
        cls,
        path: str | os.PathLike[str],
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        *,
        geometry: Geometry | GeometryHint | None = None,
    ) -> TieredIndexStore:
        """Read-only store over any folder :func:`rmqarrow.format.detect.detect` calls tiered.

        ``path`` may be ``storePathRootDir`` (holding ``tiered_index_file/``), the
        ``tiered_index_file/`` folder itself (or any folder of numerically named files), or
        a folder of uploaded segments.  ``geometry`` or ``hash_slot_num``/``index_num``
        (not both forms) give ``S`` and ``N``; what is not given is the tiered default.
        """
        s, n = check_geometry(*tiered_counts(geometry, (hash_slot_num, index_num)))
        p = Path(path)
        if not p.is_dir():
            raise StoreNotFoundError(f"{p}: no such directory")
        local = p / LOCAL_DIR_NAME if (p / LOCAL_DIR_NAME).is_dir() else p
        has_segments = any(parse_segment_name(q.name) is not None for q in p.iterdir())
        store = cls(local, p if has_segments else None, (s, n), False, _now_ms)
        try:
            store._load()
        except BaseException:
            store.close()
            raise
        return store

    def _load(self) -> None:
        if self._local_dir.is_dir():
            for p in sorted(self._local_dir.iterdir(), key=lambda q: q.name):
                begin = begin_timestamp_of_name(p)
                if begin is None or not p.is_file():
                    continue
                old = self._table.pop(begin, None)
                if old is not None:
                    old.close()
                self._table[begin] = TieredIndexFile.open(
                    p, self._slots, self._items, writable=self._writable, force=self._force
                )
        if self._writable and self._table:
            newest = self._table[max(self._table)]
            assert isinstance(newest, TieredIndexFile)
            self._write_file = newest
        for base, p in self._segment_paths():
            seg = CompactedIndexFile.open(p, self._slots)
            self._segment_end = max(self._segment_end, base + seg.size)
            if seg.size == 0:
                seg.close()  # no header, so no timestamp; it answers nothing anyway
                continue
            old = self._table.get(seg.begin_timestamp)
            if old is not None:
                old.close()
            self._table[seg.begin_timestamp] = seg
        self._table = dict(sorted(self._table.items()))

    def _segment_paths(self) -> list[tuple[int, Path]]:
        if self._segment_dir is None or not self._segment_dir.is_dir():
            return []
        found = []
        for p in self._segment_dir.iterdir():
            base = parse_segment_name(p.name)
            if base is not None and p.is_file():
                found.append((base, p))
        return sorted(found)

    # -- reading ------------------------------------------------------------------------

    def files(self) -> list[AnyIndexFile]:
        """Every open file, newest (largest begin timestamp) first."""
        return [self._table[k] for k in sorted(self._table, reverse=True)]

    def select(self, begin: int, end: int) -> list[AnyIndexFile]:
        """The files RocketMQ asks for ``[begin, end]``: begin timestamp inside it."""
        begin, end = check_long("begin", begin), check_long("end", end)
        if begin > end:
            return []
        return [f for f in self.files() if begin <= f.begin_timestamp <= end]

    def query(
        self, topic: str, key: str, max_count: int, begin: int, end: int, exact: bool = False
    ) -> list[IndexItem]:
        """IndexStoreService's answer: merged by (queueId, offset), at most ``max_count``.

        Items come in first-seen order (newest file first) where RocketMQ uses hash-map
        order.  A read failure is raised only when nothing was found (as RocketMQ does).
        ``exact=True`` asks every file in exact mode (rule 29).
        """
        check_text("topic", topic)
        check_text("key", key)
        max_count = check_int("max_count", max_count)
        per_file: list[list[IndexItem] | Exception] = []
        for f in self.select(begin, end):
            try:
                per_file.append(f.query(topic, key, max_count, begin, end, exact))
            except Exception as exc:  # RocketMQ's allOf keeps going and keeps the first
                per_file.append(exc)
        return merge_answers(per_file, max_count)

    def query_many(
        self, queries: Iterable[Sequence[object]], exact: bool = False
    ) -> list[list[IndexItem] | Exception]:
        """:meth:`query` over many ``(topic, key, max_count, begin, end)``: each file answers
        the queries that select it in bulk, then the answers merge per query (rule 28).  A
        query whose reads failed with nothing found gets the exception in its place."""
        qs = as_tiered_queries(queries)
        per_query: list[list[list[IndexItem] | Exception]] = [[] for _ in qs]
        for f in self.files():  # newest first, so each query's answers come newest first
            mine = [
                i
                for i, q in enumerate(qs)
                if check_long("begin", q.begin) <= f.begin_timestamp <= check_long("end", q.end)
            ]
            if not mine:
                continue
            asked = [qs[i] for i in mine]
            if isinstance(f, TieredIndexFile):
                answers: list[list[IndexItem] | TieredReadError] = list(
                    f.query_many(asked, exact=exact)
                )
            else:
                answers = f.query_many(asked, exact=exact, errors="return")
            for i, a in zip(mine, answers, strict=True):
                per_query[i].append(a)
        out: list[list[IndexItem] | Exception] = []
        for q, answers_of_q in zip(qs, per_query, strict=True):
            try:
                out.append(merge_answers(answers_of_q, check_int("max_count", q.max_count)))
            except TieredReadError as exc:
                out.append(exc)
        return out

    # -- writing ------------------------------------------------------------------------

    def _require_writable(self) -> None:
        if not self._writable:
            raise ReadOnlyIndexError(f"{self._local_dir} was opened read-only")

    def create_file(self, begin_timestamp: int) -> TieredIndexFile | None:
        """RocketMQ's createNewIndexFile: only if no file has that timestamp and the write
        file is not UNSEALED; the new file becomes the write file."""
        self._require_writable()
        begin = check_long("begin_timestamp", begin_timestamp)
        current = self._write_file
        if begin in self._table or (current is not None and current.status is FileStatus.UNSEALED):
            return None
        f = TieredIndexFile.create(
            self._local_dir / str(begin), begin, self._slots, self._items, force=self._force
        )
        self._table = dict(sorted({**self._table, begin: f}.items()))
        self._write_file = f
        return f

    def put_key(
        self,
        topic: str,
        topic_id: int,
        queue_id: int,
        keys: Iterable[str],
        offset: int,
        size: int,
        store_timestamp: int,
    ) -> AppendResult:
        """IndexStoreService.putKey: up to 3 tries, rolling to a new file on FILE_FULL.

        As in RocketMQ, three failed tries still return SUCCESS (the keys are lost).
        """
        self._require_writable()
        key_list = distinct_keys(keys)
        if is_blank_topic(check_text("topic", topic)):
            return AppendResult.UNKNOWN_ERROR
        if not key_list:
            return AppendResult.SUCCESS
        if self._write_file is None:
            self.create_file(self._clock())
        for _ in range(3):
            assert self._write_file is not None
            result = self._write_file.put_key(
                topic, topic_id, queue_id, key_list, offset, size, store_timestamp
            )
            if result is AppendResult.SUCCESS:
                return result
            if result is AppendResult.FILE_FULL:
                self.create_file(self._clock())
        return AppendResult.SUCCESS

    def upload(self, begin_timestamp: int) -> Path:
        """Compact the local file ``begin_timestamp`` into the next segment, switch to the
        segment and delete the local file (what the upload thread does to a file)."""
        self._require_writable()
        if self._segment_dir is None:
            raise InvalidValueError("upload needs a segment_dir")
        local = self._table.get(begin_timestamp)
        if not isinstance(local, TieredIndexFile):
            raise InvalidValueError(f"no local file with begin timestamp {begin_timestamp}")
        if local is self._write_file:
            raise InvalidValueError("the newest (write) file is not uploaded; roll it first")
        path = local.compact(self._segment_dir / segment_file_name(self._segment_end))
        seg = CompactedIndexFile.open(path, self._slots, local.begin_timestamp, local.end_timestamp)
        self._segment_end += seg.size
        local.close()
        local.path.unlink()
        self._table[begin_timestamp] = seg
        return path

    # -- life cycle ----------------------------------------------------------------------

    @property
    def write_file(self) -> TieredIndexFile | None:
        """The file puts go to (the newest local file), if any."""
        return self._write_file

    def close(self) -> None:
        """Close every file."""
        for f in self._table.values():
            f.close()
