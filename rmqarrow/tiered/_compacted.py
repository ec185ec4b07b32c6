"""``CompactedIndexFile``: the uploaded (compacted) form, queried as RocketMQ does (rules 22-26)."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from rmqarrow._closing import Closing
from rmqarrow.errors import CorruptIndexError, GeometryError, InvalidValueError, TieredReadError
from rmqarrow.tiered.layout.binary import (
    COMPACT_ITEM_DTYPE,
    COMPACT_ITEM_SIZE,
    COMPACT_SLOT_STRUCT,
    DEFAULT_HASH_SLOT_NUM,
    END_MAGIC,
    HEADER_SIZE,
    items_position,
)

from ._args import check_geometry, check_int, check_long, check_text
from ._bulk import checked_queries
from ._mapping import Header, map_existing, read_header
from ._rules import COMPACT_MAX_ITEMS, key_hash, key_slot_position
from ._types import FileStatus, IndexItem

__all__ = ["CompactedIndexFile"]


def _check_compacted(path: Path, size: int, hash_slot_num: int, header: Header | None) -> None:
    """A compacted file is empty, or header + ``S`` slots + a whole number of 28-byte items."""
    if size == 0:
        return
    items = size - items_position(hash_slot_num)
    if items < COMPACT_ITEM_SIZE or items % COMPACT_ITEM_SIZE:
        raise GeometryError(
            f"{path}: {size} bytes, but a compacted tiered index file with hash_slot_num="
            f"{hash_slot_num} has 0 or 28 + 8*S + 28*k bytes (k >= 1); open it with the "
            "broker's tieredStoreIndexFileMaxHashSlotNum, or the file is truncated"
        )
    assert header is not None
    if header[0] != END_MAGIC:
        raise CorruptIndexError(
            f"{path}: header magic {header[0] & 0xFFFFFFFF:#x}, expected END "
            f"{END_MAGIC & 0xFFFFFFFF:#x} for a compacted file; the file is damaged or not a "
            "compacted RocketMQ tiered index file"
        )


class CompactedIndexFile(Closing):
    """An uploaded tiered index segment (the bytes ``doCompaction`` wrote), read-only."""

    def __init__(
        self,
        path: Path,
        buf: mmap.mmap | bytes | None,
        hash_slot_num: int,
        times: tuple[int, int],
    ) -> None:
        self._path = path
        self._buf = buf
        self._size = 0 if buf is None else len(buf)
        self._slots = hash_slot_num
        self._begin, self._end = times
        self._closed = False

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        hash_slot_num: int = DEFAULT_HASH_SLOT_NUM,
        begin_timestamp: int | None = None,
        end_timestamp: int | None = None,
    ) -> CompactedIndexFile:
        """Open an uploaded segment.

        RocketMQ takes the begin/end timestamps from the segment's metadata, which are the
        local file's, also written in the compacted header; pass them for an empty segment
        (no header) or to override.
        """
        s, _ = check_geometry(hash_slot_num, 1)
        p = Path(path)
        buf = map_existing(p, writable=False)
        try:
            header = read_header(buf) if buf is not None and len(buf) >= HEADER_SIZE else None
            _check_compacted(p, 0 if buf is None else len(buf), s, header)
        except BaseException:
            if buf is not None:
                buf.close()
            raise
        begin = header[1] if header else 0
        end = header[2] if header else 0
        if begin_timestamp is not None:
            begin = check_long("begin_timestamp", begin_timestamp)
        if end_timestamp is not None:
            end = check_long("end_timestamp", end_timestamp)
        return cls(p, buf, s, (begin, end))

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        hash_slot_num: int,
        name: str = "<compacted>",
        begin_timestamp: int | None = None,
        end_timestamp: int | None = None,
    ) -> CompactedIndexFile:
        """The compacted form held in memory (e.g. :meth:`TieredIndexFile.compaction_bytes`)."""
        s, _ = check_geometry(hash_slot_num, 1)
        p = Path(name)
        header = read_header(data) if len(data) >= HEADER_SIZE else None
        _check_compacted(p, len(data), s, header)
        begin = header[1] if header else 0
        end = header[2] if header else 0
        if begin_timestamp is not None:
            begin = check_long("begin_timestamp", begin_timestamp)
        if end_timestamp is not None:
            end = check_long("end_timestamp", end_timestamp)
        return cls(p, bytes(data), s, (begin, end))

    @property
    def path(self) -> Path:
        """Where the segment lives."""
        return self._path

    @property
    def hash_slot_num(self) -> int:
        """``S`` (from the configuration)."""
        return self._slots

    @property
    def begin_timestamp(self) -> int:
        """The segment's min timestamp: the local file's begin timestamp."""
        return self._begin

    @property
    def end_timestamp(self) -> int:
        """The segment's max timestamp: the local file's end timestamp."""
        return self._end

    @property
    def size(self) -> int:
        """Bytes in the segment."""
        return self._size

    @property
    def status(self) -> FileStatus:
        """UPLOAD, or SHUTDOWN once closed."""
        return FileStatus.SHUTDOWN if self._closed else FileStatus.UPLOAD

    def _read(self, position: int, length: int) -> bytes:
        """A segment read: fails outside the segment, shortened past its end (rule 24)."""
        if position < 0 or position >= self._size:
            raise TieredReadError(
                f"{self._path}: read of {length} bytes at position {position} is outside the "
                f"segment of {self._size} bytes (RocketMQ's query fails with "
                "TieredStoreException here, e.g. for a key whose hash is Integer.MIN_VALUE)"
            )
        assert self._buf is not None
        return self._buf[position : min(position + length, self._size)]

    def query(
        self, topic: str, key: str, max_count: int, begin: int, end: int, exact: bool = False
    ) -> list[IndexItem]:
        """RocketMQ's uploaded-form answer: at most ``max_count`` items in slot order.

        Raises :class:`~rmqarrow.errors.TieredReadError` where RocketMQ's query fails.
        ``exact=True`` examines every item of the slot, not the first 1,024 (rule 29).
        """
        h = key_hash(check_text("topic", topic), check_text("key", key))
        return self._query_hash(
            h,
            check_int("max_count", max_count),
            check_long("begin", begin),
            check_long("end", end),
            exact,
        )

    def query_many(
        self, queries: Iterable[Sequence[object]], exact: bool = False, errors: str = "raise"
    ) -> list[list[IndexItem] | TieredReadError]:
        """:meth:`query` over many ``(topic, key, max_count, begin, end)`` (hashed in bulk).

        ``errors="return"`` puts a failing query's :class:`TieredReadError` in its place
        instead of raising it.
        """
        qs, hashes = checked_queries(queries)
        if errors not in ("raise", "return"):
            raise InvalidValueError(f"errors must be 'raise' or 'return', got {errors!r}")
        out: list[list[IndexItem] | TieredReadError] = []
        for q, h in zip(qs, hashes.tolist(), strict=True):
            try:
                out.append(self._query_hash(h, q.max_count, q.begin, q.end, exact))
            except TieredReadError as exc:
                if errors == "raise":
                    raise
                out.append(exc)
        return out

    def _query_hash(
        self, h: int, max_count: int, begin: int, end: int, exact: bool
    ) -> list[IndexItem]:
        if self._closed:
            raise InvalidValueError(f"{self._path} is closed")
        if self._size <= HEADER_SIZE:
            return []
        pos = key_slot_position(h, self._slots)
        if exact and (pos < 0 or pos >= self._size):
            return []  # rule 29: nothing can be stored behind an unreadable slot
        slot = self._read(pos, 8)
        if len(slot) < 8:
            return []
        position, length = COMPACT_SLOT_STRUCT.unpack(slot)
        if not exact:
            length = min(length, COMPACT_ITEM_SIZE * COMPACT_MAX_ITEMS)
        if position <= 0 or length <= 0:
            return []
        if exact and position >= self._size:
            return []
        data = self._read(position, length)
        if len(data) % COMPACT_ITEM_SIZE:
            return []
        return _matches(data, h, self._begin, max_count, begin, end)

    def close(self) -> None:
        """Unmap; closing twice is harmless."""
        if isinstance(self._buf, mmap.mmap):
            self._buf.close()
        self._buf = None
        self._closed = True

    def __repr__(self) -> str:
        return f"CompactedIndexFile({str(self._path)!r}, S={self._slots}, bytes={self._size})"


def _matches(
    data: bytes, hash_code: int, file_begin: int, max_count: int, begin: int, end: int
) -> list[IndexItem]:
    """Rule 26 over one slot's items, vectorized."""
    if max_count <= 0:
        return []
    items = np.frombuffer(data, COMPACT_ITEM_DTYPE)
    with np.errstate(over="ignore"):
        times = items["time_diff"].astype(np.int64) * np.int64(1000) + np.int64(file_begin)
    hit = (items["hash_code"] == hash_code) & (times >= begin) & (times <= end)
    chosen = items[np.flatnonzero(hit)[:max_count]]
    return [
        IndexItem(h, topic, queue, off, size, diff, 0)
        for h, topic, queue, off, size, diff in chosen.tolist()
    ]
