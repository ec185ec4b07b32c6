"""``TieredIndexFile``: the local tiered index file, written and read as RocketMQ does."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from rmqarrow._args import check_flag
from rmqarrow._broker import check_store_writable
from rmqarrow._closing import Closing
from rmqarrow.errors import InvalidValueError, OutputExistsError, ReadOnlyIndexError
from rmqarrow.format.layout import Geometry, GeometryHint
from rmqarrow.tiered.layout.binary import (
    BEGIN_TIMESTAMP_OFFSET,
    HEADER_STRUCT,
    INT32,
    INT64,
    ITEM_STRUCT,
    item_position,
    unsealed_size,
)

from ._args import (
    check_geometry,
    check_int,
    check_long,
    check_text,
    distinct_keys,
    tiered_counts,
)
from ._bulk import checked_queries, walk_local_many
from ._compacted import CompactedIndexFile
from ._compaction import compact_bytes
from ._local_query import walk_local
from ._mapping import (
    check_unsealed_header,
    check_unsealed_size,
    create_zeroed,
    map_existing,
    read_header,
)
from ._rules import header_magic, is_blank_topic, key_hash, key_slot_position, time_diff
from ._types import AppendResult, FileStatus, IndexItem

__all__ = ["TieredIndexFile", "begin_timestamp_of_name"]


def begin_timestamp_of_name(path: Path) -> int | None:
    """The begin timestamp a file name states (RocketMQ names files by it), if numeric."""
    name = path.name
    if name.isascii() and name.isdigit():
        value = int(name)
        return value if value < 1 << 63 else None
    return None


class TieredIndexFile(Closing):
    """A local RocketMQ tiered index file (``IndexStoreFile`` before upload).

    Use :meth:`create` or :meth:`open`; the constructor is private.  Writes go straight to
    the memory-mapped file, as RocketMQ's do; :meth:`flush` syncs them to disk.
    """

    def __init__(
        self,
        path: Path,
        buf: mmap.mmap,
        geometry: tuple[int, int],
        header: tuple[int, int, int, int],
        writable: bool,
    ) -> None:
        self._path = path
        self._buf: mmap.mmap | None = buf
        self._slots, self._items = geometry
        self._begin, self._end, self._slot_count, self._item_count = header
        self._writable = writable
        self._status = FileStatus.UNSEALED

    # -- construction -------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        begin_timestamp: int,
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        *,
        force: bool = False,
        geometry: Geometry | GeometryHint | None = None,
    ) -> TieredIndexFile:
        """A new empty file at ``path`` (refuses an existing path with OutputExistsError).

        RocketMQ names the file by ``begin_timestamp`` (see :class:`TieredIndexStore`); any
        name is accepted here.  A file in the store of a running broker is refused
        (:mod:`rmqarrow._broker`; ``force`` only for a copy whose lock cannot be seen).
        ``geometry`` or ``hash_slot_num``/``index_num`` (not both forms) give ``S`` and
        ``N``; what is not given is the tiered default.
        """
        s, n = check_geometry(*tiered_counts(geometry, (hash_slot_num, index_num)))
        begin = check_long("begin_timestamp", begin_timestamp)
        p = Path(path)
        check_store_writable(p, force=check_flag("force", force))
        buf = create_zeroed(p, unsealed_size(s, n))
        # As RocketMQ's constructor: the end timestamp is read at offset 4 (0 in a new file).
        f = cls(p, buf, (s, n), (begin, 0, 0, 0), writable=True)
        f._write_header()
        return f

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        writable: bool = False,
        begin_timestamp: int | None = None,
        *,
        force: bool = False,
        geometry: Geometry | GeometryHint | None = None,
    ) -> TieredIndexFile:
        """Open an existing local file.

        The begin timestamp comes from the file name (RocketMQ's rule), else from the header,
        unless ``begin_timestamp`` is given.  ``writable=True`` behaves as RocketMQ's
        constructor on an existing file: the end timestamp is reset to the stored begin
        timestamp and the header rewritten, so it refuses a file in the store of a running
        broker (:mod:`rmqarrow._broker`; ``force`` as for :meth:`create`).  Read-only
        opening changes no byte.  ``geometry`` or ``hash_slot_num``/``index_num`` (not both
        forms) give ``S`` and ``N``; what is not given is the tiered default.
        """
        s, n = check_geometry(*tiered_counts(geometry, (hash_slot_num, index_num)))
        p = Path(path)
        writable = check_flag("writable", writable)
        if writable:
            check_store_writable(p, force=check_flag("force", force))
        buf = map_existing(p, writable)
        try:
            check_unsealed_size(p, 0 if buf is None else len(buf), s, n)
            assert buf is not None
            magic, stored_begin, stored_end, slot_count, item_count = read_header(buf)
            check_unsealed_header(p, (magic, stored_begin, stored_end, slot_count, item_count), n)
            begin = begin_timestamp_of_name(p)
            if begin_timestamp is not None:
                begin = check_long("begin_timestamp", begin_timestamp)
            if begin is None:
                begin = stored_begin
            end = INT64.unpack_from(buf, BEGIN_TIMESTAMP_OFFSET)[0] if writable else stored_end
        except BaseException:
            if buf is not None:
                buf.close()
            raise
        f = cls(p, buf, (s, n), (begin, end, slot_count, item_count), writable)
        if writable:
            f._write_header()
        return f

    # -- properties ---------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """Where the file lives."""
        return self._path

    @property
    def hash_slot_num(self) -> int:
        """``S``, the number of hash slots (from the configuration, not the file)."""
        return self._slots

    @property
    def index_num(self) -> int:
        """``N``, the number of item records (the file holds at most ``N - 1`` items)."""
        return self._items

    @property
    def begin_timestamp(self) -> int:
        """The begin timestamp (ms) every item's time is relative to."""
        return self._begin

    @property
    def end_timestamp(self) -> int:
        """The largest store timestamp put since the file was created or reopened."""
        return self._end

    @property
    def hash_slot_count(self) -> int:
        """Items that were written into an empty slot."""
        return self._slot_count

    @property
    def item_count(self) -> int:
        """Items written (the index of the newest)."""
        return self._item_count

    @property
    def magic(self) -> int:
        """The header magic the file holds now (BEGIN, or END when full)."""
        return int(INT32.unpack_from(self._mapped(), 0)[0])

    @property
    def status(self) -> FileStatus:
        """UNSEALED, SEALED (full or compacted) or SHUTDOWN (closed)."""
        return self._status

    @property
    def writable(self) -> bool:
        """Whether puts are allowed."""
        return self._writable

    # -- writing ------------------------------------------------------------------------

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
        """Index ``keys`` (in the order given, each once) of one message: RocketMQ's putKey.

        Returns SUCCESS, FILE_FULL or UNKNOWN_ERROR exactly when RocketMQ does, with the same
        partial writes (see :mod:`rmqarrow.tiered._rules`, rules 6-12).
        """
        topic = check_text("topic", topic)
        key_list = distinct_keys(keys)
        topic_id = check_int("topic_id", topic_id)
        queue_id = check_int("queue_id", queue_id)
        offset = check_long("offset", offset)
        size = check_int("size", size)
        store_timestamp = check_long("store_timestamp", store_timestamp)
        buf = self._mapped()
        if not self._writable:
            raise ReadOnlyIndexError(f"{self._path} was opened read-only; open it writable=True")
        if is_blank_topic(topic):
            return AppendResult.UNKNOWN_ERROR
        if not key_list:
            return AppendResult.SUCCESS
        if self._status is not FileStatus.UNSEALED:
            return AppendResult.FILE_FULL
        if self._item_count + len(key_list) >= self._items:
            self._status = FileStatus.SEALED
            return AppendResult.FILE_FULL
        diff = time_diff(store_timestamp, self._begin)
        for key in key_list:
            h = key_hash(topic, key)
            pos = key_slot_position(h, self._slots)
            if pos < 0:
                return AppendResult.UNKNOWN_ERROR  # the slot read throws; earlier keys stay
            old = max(INT32.unpack_from(buf, pos)[0], 0)
            self._item_count += 1
            ITEM_STRUCT.pack_into(
                buf,
                item_position(self._slots, self._item_count),
                h,
                topic_id,
                queue_id,
                offset,
                size,
                diff,
                old,
            )
            INT32.pack_into(buf, pos, self._item_count)
            if old <= 0:
                self._slot_count += 1
            self._end = max(self._end, store_timestamp)
            self._write_header()
        return AppendResult.SUCCESS

    def _write_header(self) -> None:
        HEADER_STRUCT.pack_into(
            self._mapped(),
            0,
            header_magic(self._item_count, self._items),
            self._begin,
            self._end,
            self._slot_count,
            self._item_count,
        )

    # -- reading ------------------------------------------------------------------------

    def query(
        self, topic: str, key: str, max_count: int, begin: int, end: int, exact: bool = False
    ) -> list[IndexItem]:
        """RocketMQ's local-file answer: up to ``max_count + 1`` items, newest first.

        ``exact=True`` walks the whole chain and returns at most ``max_count`` (rule 29).
        """
        h = key_hash(check_text("topic", topic), check_text("key", key))
        return walk_local(
            self._mapped(),
            self._slots,
            self._item_count,
            self._begin,
            h,
            key_slot_position(h, self._slots),
            check_int("max_count", max_count),
            check_long("begin", begin),
            check_long("end", end),
            exact,
        )

    def query_many(
        self, queries: Iterable[Sequence[object]], exact: bool = False
    ) -> list[list[IndexItem]]:
        """:meth:`query` over many ``(topic, key, max_count, begin, end)``, vectorized."""
        qs, hashes = checked_queries(queries)
        return walk_local_many(
            self._mapped(), (self._slots, self._item_count), self._begin, qs, hashes, exact
        )

    def compaction_bytes(self) -> bytes:
        """The bytes ``doCompaction`` returns (the uploaded form); the file turns SEALED."""
        data = compact_bytes(
            self._mapped(),
            self._slots,
            self._items,
            (self._begin, self._end, self._slot_count, self._item_count),
            self._path,
        )
        self._status = FileStatus.SEALED
        return data

    def compacted(self) -> CompactedIndexFile:
        """The uploaded form of this file as it is now, in memory; the file stays as it is
        (no sealing): what RocketMQ would answer once it uploads the file."""
        data = compact_bytes(
            self._mapped(),
            self._slots,
            self._items,
            (self._begin, self._end, self._slot_count, self._item_count),
            self._path,
        )
        return CompactedIndexFile.from_bytes(
            data, self._slots, f"{self._path} (compacted)", self._begin, self._end
        )

    def compact(self, out_path: str | os.PathLike[str]) -> Path:
        """Write :meth:`compaction_bytes` to ``out_path`` (never replacing a file)."""
        out = Path(out_path)
        data = self.compaction_bytes()
        try:
            with open(out, "xb") as f:
                f.write(data)
        except FileExistsError:
            raise OutputExistsError(f"{out} exists; rmqarrow never overwrites it") from None
        return out

    # -- life cycle -----------------------------------------------------------------------

    def _mapped(self) -> mmap.mmap:
        if self._buf is None:
            raise InvalidValueError(f"{self._path} is closed")
        return self._buf

    def flush(self) -> None:
        """Sync written bytes to disk (nothing to do when read-only)."""
        if self._writable:
            self._mapped().flush()

    def close(self) -> None:
        """Flush and unmap; closing twice is harmless."""
        if self._buf is not None:
            self.flush()
            self._buf.close()
            self._buf = None
            self._status = FileStatus.SHUTDOWN

    def __repr__(self) -> str:
        return (
            f"TieredIndexFile({str(self._path)!r}, S={self._slots}, N={self._items}, "
            f"items={self._item_count}, status={self._status.name})"
        )
