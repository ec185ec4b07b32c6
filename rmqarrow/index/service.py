"""``IndexService``: a directory of rolling index files, as RocketMQ's IndexService runs it.

Files are named after their creation time (:mod:`rmqarrow.format.naming`), loaded in name
order, written newest-last, rolled when full (the new file seeded with the full one's end
offset and end timestamp) and searched newest first.  See :mod:`rmqarrow.format.rules`.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rmqarrow._args import check_flag, check_int, check_non_negative
from rmqarrow._broker import check_store_writable
from rmqarrow._closing import Closing
from rmqarrow._lock import Wait, WriterLock, acquire, wait_seconds
from rmqarrow.errors import (
    ClosedIndexError,
    CorruptIndexError,
    GeometryError,
    InvalidValueError,
    ReadOnlyIndexError,
)
from rmqarrow.format.broker_config import DEFAULT_MAX_MSGS_NUM_BATCH
from rmqarrow.format.checkpoint import StoreCheckpoint
from rmqarrow.format.hashing import check_query_key, index_key_hash
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.format.naming import free_file_name, list_index_files
from rmqarrow.format.queries import Query, QueryOffsetResult, as_queries
from rmqarrow.format.records import MessageRecord, index_keys, is_rollback
from rmqarrow.index.build import build_index_batch
from rmqarrow.index.health import fit_geometry, store_health
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.salvage import salvage_file
from rmqarrow.kernels import lookup as _lookup
from rmqarrow.kernels.walk import walk_chain

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from rmqarrow.index.health import FileHealth

__all__ = [
    "IndexService",
    "QueryOffsetResult",
    "answer_queries",
    "open_healthy",
    "query_files",
    "store_geometry",
]


def query_files(
    files: Sequence[IndexFile], key_hash: int, max_num: int, begin: int, end: int
) -> list[int]:
    """``IndexService.queryOffset`` over ``files`` (oldest first) without the batch cap."""
    max_num = check_non_negative("max_num", max_num)
    begin, end = check_int("begin", begin), check_int("end", end)
    out: list[int] = []
    for f in files:
        f.refresh()  # read-only files: this query's view of a store being appended
    for f in reversed(files):
        if f.is_time_matched(begin, end):
            walk_chain(f.regions, f.state, key_hash, max_num, begin, end, out)
        if f.begin_timestamp < begin or len(out) >= max_num:
            break
    return out


class IndexService(Closing):
    """The index files of one store directory.

    ``checkpoint_path`` is RocketMQ's ``store/checkpoint`` file; without one, nothing is
    recorded on flush and an abnormal-exit :meth:`load` is refused.  ``tz`` is the zone
    new file names are written in (the local zone by default) and ``clock`` returns epoch
    milliseconds for them.

    A writable service takes the store's writer lock (:mod:`rmqarrow._lock`) when it
    first loads or writes, and lets it go on :meth:`close`: another writer is refused
    with :class:`~rmqarrow.errors.StoreLockedError` naming the holder, or waits for it
    with ``wait`` (``True``: as long as it takes; a number: that many seconds).  A
    read-only service takes nothing and is never blocked.

    A writable service also refuses a store a RocketMQ broker is running on (its
    ``STORE/lock`` held, see :mod:`rmqarrow._broker`) with
    :class:`~rmqarrow.errors.BrokerRunningError` before it touches a byte: its load rolls
    interrupted batches back and recovery deletes files, which would corrupt the broker's
    live files.  ``force=True`` writes a store whose ``abort`` is present without a
    ``lock`` file (a copy the caller vouches for); a held lock is never overridden.

    The geometry is ``geometry=`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or the ``hash_slot_num`` and ``index_num`` arguments,
    not both forms; a count not given is the one the store's files were written with
    (RocketMQ's default for a new store).
    """

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
        *,
        geometry: Geometry | GeometryHint | None = None,
        checkpoint_path: str | os.PathLike[str] | None = None,
        read_only: bool = False,
        tz: _dt.tzinfo | None = None,
        clock: Callable[[], int] | None = None,
        wait: Wait = False,
        force: bool = False,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.force = check_flag("force", force)
        hint = geometry_hint(geometry, hash_slot_num, index_num)
        fitted = Geometry()
        if not hint.complete and self.store_dir.is_dir():
            # the counts the store's files were written with, as every command fits them
            # (RocketMQ's defaults for a new store)
            fitted, note = store_geometry(self.store_dir, hint)
            if note:
                logging.getLogger(__name__).info("%s", note)
        self.geometry = hint.or_else(fitted)
        if self.geometry.index_num < 2:
            raise GeometryError(
                f"index_num must be >= 2 for a service (a file holds index_num - 1 entries), "
                f"got {self.geometry.index_num}"
            )
        if max_msgs_num_batch < 1:
            raise InvalidValueError(f"max_msgs_num_batch must be >= 1, got {max_msgs_num_batch}")
        self.max_msgs_num_batch = max_msgs_num_batch
        self.checkpoint_path = None if checkpoint_path is None else Path(checkpoint_path)
        self.read_only = read_only
        wait_seconds(wait)  # checked now, not at the first write
        self.wait = wait
        self._lock: WriterLock | None = None
        if self.checkpoint_path is not None and not read_only:
            # refuse a file that is no checkpoint before anything is written
            StoreCheckpoint.check(self.checkpoint_path)
        self.tz = tz
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._last_name_millis = -1
        self.files: list[IndexFile] = []
        self._closed = False  # set by close(); load() opens the service again
        #: what :meth:`load` repaired after an interrupted write, one line per file
        self.repairs: list[str] = []
        #: damaged files a reader left out (rmqarrow.index.health.FileHealth), see open_healthy
        self.skipped: list[FileHealth] = []

    # -- loading ---------------------------------------------------------------------------

    def load(self, last_exit_ok: bool = True, *, salvage: bool = False) -> None:
        """Open every file of the directory in name order (``IndexService.load``).

        After an abnormal exit (``last_exit_ok=False``) RocketMQ deletes every file whose
        end timestamp is later than the checkpoint's indexMsgTimestamp.  With
        ``salvage=True`` such a file instead keeps its entries stored at or before that
        time (the rest is dropped; the original is kept beside the store directory, in
        ``.STORE.before-salvage/``).  This is what RocketMQ's issue #3868 asks for.
        """
        self.close()
        self._closed = False
        self._take_lock()
        if not self.store_dir.exists():
            return
        cutoff: int | None = None
        if not last_exit_ok:
            if self.checkpoint_path is None:
                raise InvalidValueError(
                    "an abnormal-exit load needs the store's checkpoint file (checkpoint_path)"
                )
            cutoff = StoreCheckpoint.read(self.checkpoint_path).index_msg_timestamp
        for path in list_index_files(self.store_dir):
            f = IndexFile.open(
                path, writable=not self.read_only, force=self.force, geometry=self.geometry
            )
            if cutoff is not None and f.end_timestamp > cutoff:
                f.close()
                if self.read_only:
                    raise ReadOnlyIndexError(
                        f"{path}: recovery would change the store; open writable"
                    )
                if salvage:
                    if salvage_file(path, self.geometry, cutoff):
                        self.files.append(
                            IndexFile.open(
                                path, writable=True, force=self.force, geometry=self.geometry
                            )
                        )
                    continue  # nothing kept: the original is in the backup folder
                path.unlink()
                continue
            if f.repaired:
                self.repairs.append(f.repaired)
            self.files.append(f)

    def load_files(self, paths: Sequence[Path]) -> None:
        """Open exactly ``paths`` (oldest first), read-only or not as the service is; for
        readers that left damaged files out (:func:`open_healthy`)."""
        self.close()
        self._closed = False
        self._take_lock()
        for path in paths:
            self.files.append(
                IndexFile.open(
                    path, writable=not self.read_only, force=self.force, geometry=self.geometry
                )
            )

    def _take_lock(self) -> None:
        """The store's writer lock, once, before a writable service touches a file; a
        running broker's store is refused first (nothing is created, not even the lock)."""
        if not self.read_only and self._lock is None:
            broker = check_store_writable(self.store_dir, force=self.force)
            if self.checkpoint_path is not None:
                check_store_writable(self.checkpoint_path, force=self.force)
            if not broker:  # the store's broker (this process) is its one writer already
                self._lock = acquire(self.store_dir, wait=self.wait)

    # -- writing ---------------------------------------------------------------------------

    def new_file(self) -> IndexFile:
        """``getAndCreateLastIndexFile``: the newest file, or a new one when it is full."""
        if self.read_only:
            raise ReadOnlyIndexError(f"{self.store_dir}: service opened read-only")
        self._take_lock()
        prev = self.files[-1] if self.files else None
        self.store_dir.mkdir(parents=True, exist_ok=True)
        millis = max(self._clock(), self._last_name_millis + 1)
        name, self._last_name_millis = free_file_name(self.store_dir, millis, self.tz)
        f = IndexFile.create(
            self.store_dir / name,
            geometry=self.geometry,
            end_phy_offset=prev.end_phy_offset if prev else 0,
            end_timestamp=prev.end_timestamp if prev else 0,
            force=self.force,
        )
        self.files.append(f)
        if prev is not None:
            self.flush(prev)
        return f

    def last_file_for_write(self) -> IndexFile:
        if self.files and not self.files[-1].is_write_full():
            return self.files[-1]
        return self.new_file()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedIndexError(
                f"{self.store_dir}: the index service is closed; open a new one or call load()"
            )

    def build_index(self, record: MessageRecord) -> None:
        """``IndexService.buildIndex`` for one message record."""
        self._check_open()
        f = self.last_file_for_write()
        if record.commit_log_offset < f.end_phy_offset or is_rollback(record.sys_flag):
            return
        for key in index_keys(record):
            while not f.put_key(key, record.commit_log_offset, record.store_timestamp):
                f = self.new_file()

    def build_index_many(self, records: Iterable[MessageRecord]) -> None:
        for record in records:
            self.build_index(record)

    def build_index_batch(self, records: pa.Table | pa.RecordBatch) -> None:
        """Bulk :meth:`build_index` over a table of records (columns of ``RECORD_COLUMNS``)."""
        self._check_open()
        build_index_batch(self, records)

    # -- reading ---------------------------------------------------------------------------

    def query_offset(
        self, topic: str, key: str, max_num: int, begin: int = 0, end: int = JAVA_LONG_MAX
    ) -> QueryOffsetResult:
        """``IndexService.queryOffset``: ``max_num`` is capped at ``max_msgs_num_batch``."""
        self._check_open()
        key = f"{check_query_key(topic, 'topic')}#{check_query_key(key)}"
        max_num = min(check_non_negative("max_num", max_num), self.max_msgs_num_batch)
        offsets = query_files(self.files, index_key_hash(key), max_num, begin, end)
        last = self.files[-1] if self.files else None
        return QueryOffsetResult(
            offsets,
            last.end_timestamp if last else 0,
            last.end_phy_offset if last else 0,
        )

    def query_offsets(
        self,
        keys: pa.Array | pa.ChunkedArray | Sequence[str],
        max_num: int | np.ndarray | Sequence[int],
        begin: int | np.ndarray | Sequence[int] = 0,
        end: int | np.ndarray | Sequence[int] = JAVA_LONG_MAX,
        *,
        release: bool = False,
    ) -> pa.Table:
        """Bulk :meth:`lookup` by full index keys (no batch cap): a table (``query``,
        ``phy_offset``) in native order; ``max_num``/``begin``/``end`` are scalars or one
        value per key.  ``release``: see :func:`rmqarrow.kernels.lookup.query_offsets`."""
        self._fresh_files(keys, self.files)
        return _lookup.query_offsets(self.files, keys, max_num, begin, end, release=release)

    def answers(
        self,
        queries: Sequence[Query],
        *,
        release: bool = False,
        files: Sequence[IndexFile] | None = None,
    ) -> list[list[int]]:
        """The native answer of each query (no batch cap): one list of offsets per query,
        over ``files`` (some of :attr:`files`, oldest first; all by default).  ``release``:
        see :func:`rmqarrow.kernels.lookup.query_offsets`."""
        files = self.files if files is None else files
        self._fresh_files([q.key for q in queries], files)
        return _lookup.answer_queries(files, queries, release=release)

    def _fresh_files(self, keys: object, files: Sequence[IndexFile]) -> None:
        """Refuse a closed service or a bad key; bring each file's header up to date."""
        self._check_open()
        if isinstance(keys, Sequence):
            for k in keys:
                if not (isinstance(k, str) and k.isascii()):
                    check_query_key(k)
        for f in files:
            f.refresh()

    def lookup(self, query: Query) -> list[int]:
        """The native answer to a query by full index key, with no batch cap."""
        self._check_open()
        return query_files(
            self.files,
            index_key_hash(check_query_key(query.key)),
            query.max_num,
            query.begin,
            query.end,
        )

    # -- maintenance -----------------------------------------------------------------------

    def flush(self, file: IndexFile | None = None) -> None:
        """Flush one file (or all); a full file's end timestamp goes to the checkpoint."""
        index_msg_timestamp = 0
        for f in [file] if file is not None else list(self.files):
            if f.closed or not f.writable:
                continue
            if f.is_write_full():
                index_msg_timestamp = f.end_timestamp
            f.flush()
        # once, with the last full file's: what one write per full file would leave
        if index_msg_timestamp > 0 and self.checkpoint_path is not None:
            StoreCheckpoint.update(
                self.checkpoint_path,
                wait=self.wait,
                force=self.force,
                index_msg_timestamp=index_msg_timestamp,
            )

    def delete_expired_files(self, offset: int) -> list[Path]:
        """``deleteExpiredFile``: drop the oldest files below ``offset``, never the newest."""
        if not self.files or self.files[0].end_phy_offset >= offset:
            return []
        self._take_lock()
        doomed = []
        for f in self.files[:-1]:
            if f.end_phy_offset < offset:
                doomed.append(f)
            else:
                break
        for f in doomed:
            f.close()
            f.path.unlink()
            self.files.remove(f)
        return [f.path for f in doomed]

    def close(self) -> None:
        self._closed = True
        for f in self.files:
            f.close()
        self.files = []
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def store_geometry(
    store_dir: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> tuple[Geometry, str | None]:
    """The geometry to open a store with, and a note when it was fitted from file sizes.

    Explicit counts win; with neither given, the sizes decide (:func:`rmqarrow.index.health.
    fit_geometry`): the geometry most files fit, RocketMQ's defaults or the 1:4 ratio, so a
    truncated newest file never decides it.
    """
    p = Path(store_dir)
    files = [p] if p.is_file() else list_index_files(p)
    return fit_geometry([f.stat().st_size for f in files], geometry, files)


def open_healthy(
    store_dir: str | os.PathLike[str],
    geometry: GeometryHint = GeometryHint.NONE,
    *,
    strict: bool = False,
) -> tuple[IndexService, str | None]:
    """A read-only, loaded service over a store's **healthy** files.

    The geometry is fitted as :func:`store_geometry` does; files that are truncated, of
    another size or with an impossible header (:func:`rmqarrow.index.health.store_health`)
    are left out and listed in the service's ``skipped``.  ``strict=True`` raises
    :class:`CorruptIndexError` naming every damaged file instead.
    """
    health = store_health(store_dir, geometry)
    if strict and health.damaged:
        raise CorruptIndexError(
            f"{len(health.damaged)} damaged index file(s), refused (strict=True): "
            + "; ".join(f.describe() for f in health.damaged)
        )
    service = IndexService(store_dir, read_only=True, geometry=health.geometry)
    service.load_files([f.path for f in health.healthy])
    service.skipped = health.damaged
    return service, health.note


def answer_queries(
    store_dir: str | os.PathLike[str],
    queries: Iterable[Query | tuple[object, ...]],
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> list[list[int]]:
    """The native answer to each query over a store (newest file first, no batch cap).

    Queries are :class:`~rmqarrow.Query` or ``(key, max_num[, begin[, end]])`` tuples.
    The geometry is ``geometry=`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or the ``hash_slot_num=`` and ``index_num=`` keywords;
    what is not given is fitted from the files' sizes."""
    qs = as_queries(queries)
    service, _ = open_healthy(store_dir, geometry_hint(geometry, hash_slot_num, index_num))
    with service:
        return service.answers(qs, release=True)  # one pass: memory flat in the files
