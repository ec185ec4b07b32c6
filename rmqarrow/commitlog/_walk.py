"""Walking one CommitLog file record by record, checking every record's frame.

The walk is the single place that decides whether bytes are a record: the full reader, the
vectorized index path and single-record reads all go through :func:`check_record`.  A
record is accepted only if its magic code is known, its TOTALSIZE fits in the file, its
stored physical offset is its real position, and its variable-length fields add up to
exactly TOTALSIZE (the broker's own ``checkMessageAndReturnSize`` test).  Anything else is
a :class:`Damage` at a known position, so a bad byte never turns into a wrong record and a
garbage size never makes the walk loop.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Generator
from contextlib import closing
from typing import Any, TypeAlias

import numpy as np

from rmqarrow._optional import compiled_kernels
from rmqarrow.commitlog._layout import (
    HEADER,
    HEADER_SIZE,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_SIZE,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
)

__all__ = [
    "END",
    "ZERO_TAIL",
    "Buf",
    "Damage",
    "check_record",
    "compiled_walk",
    "first_store_timestamp",
    "record_positions",
    "walk_file",
    "walk_runs",
    "write_end",
]

Buf: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

END = 0  # the end-of-file blank record (or data filling the file exactly)
ZERO_TAIL = -1  # TOTALSIZE 0: the unwritten, preallocated rest of the current file

_CHUNK = 65_536
_Positions = np.ndarray[Any, np.dtype[np.int64]]

_Kernel = Callable[[Any, int, int, int, int, Any], tuple[int, int]]


def compiled_walk() -> _Kernel | None:
    """The numba walk kernel of :mod:`._walk_numba`, or None (numba absent or turned off)."""
    module = compiled_kernels("rmqarrow.commitlog._walk_numba")
    return None if module is None else module.walk_chunk


_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")
_I8 = struct.Struct(">b")


class Damage(Exception):
    """A record frame that cannot be right, at ``position`` in its file."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


def check_record(buf: Buf, pos: int, size: int, mapped_size: int, file_start: int) -> int:
    """Check the record at ``pos``: its TOTALSIZE, or ``END`` / ``ZERO_TAIL``; else Damage.

    ``size`` is the number of bytes actually in the file, ``mapped_size`` the store's file
    size (a shorter file is truncated).
    """
    left = size - pos
    if left <= 0:
        if size < mapped_size:
            raise Damage(pos, f"file is truncated: {size} bytes, mapped file size {mapped_size}")
        return END
    if left < 4:
        if size == mapped_size and not any(bytes(memoryview(buf)[pos:size])):
            return ZERO_TAIL
        raise Damage(pos, f"file is truncated: {left} bytes left, a record needs at least 8")
    (total,) = _I32.unpack_from(buf, pos)
    if total == 0:
        return ZERO_TAIL
    if left < 8:
        raise Damage(pos, f"file is truncated: {left} bytes left, a record needs at least 8")
    (magic,) = _I32.unpack_from(buf, pos + 4)
    room = mapped_size - pos
    if magic == MAGIC_BLANK:
        if total != room:
            raise Damage(
                pos,
                f"end-of-file blank record has TOTALSIZE {total}, expected {room} "
                "(the bytes left in the file)",
            )
        return END
    if magic != MAGIC_V1 and magic != MAGIC_V2:
        raise Damage(
            pos,
            f"bad magic code 0x{magic & 0xFFFFFFFF:08X}, expected 0xDAA320A7 (V1), "
            "0xDAA320AB (V2) or 0xCBD43194 (blank)",
        )
    if total < MIN_RECORD_SIZE:
        raise Damage(
            pos,
            f"impossible TOTALSIZE {total}: a message record has at least {MIN_RECORD_SIZE} bytes",
        )
    if total > room:
        raise Damage(pos, f"TOTALSIZE {total} runs past the end of the file ({room} bytes left)")
    if total > left:
        raise Damage(
            pos, f"file is truncated: the record needs {total} bytes, only {left} are in the file"
        )
    header = HEADER.unpack_from(buf, pos)
    expected_offset = file_start + pos
    if header[6] != expected_offset:
        raise Damage(pos, f"stored PHYSICALOFFSET {header[6]}, expected {expected_offset}")
    sys_flag = header[7]
    off = pos + HEADER_SIZE + (20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8) + 8
    off += (20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8) + 12
    end = pos + total
    if off + 4 > end:
        raise Damage(pos, f"TOTALSIZE {total} is too small for the record's host fields")
    (body_len,) = _I32.unpack_from(buf, off)
    off += 4 + body_len
    v1 = magic == MAGIC_V1
    if body_len < 0 or off + (1 if v1 else 2) > end:
        raise Damage(pos, f"BODY length {body_len} does not fit in TOTALSIZE {total}")
    if v1:
        (topic_len,) = _I8.unpack_from(buf, off)
        off += 1
    else:
        (topic_len,) = _I16.unpack_from(buf, off)
        off += 2
    off += topic_len
    if topic_len < 0 or off + 2 > end:
        raise Damage(pos, f"TOPIC length {topic_len} does not fit in TOTALSIZE {total}")
    (props_len,) = _I16.unpack_from(buf, off)
    off += 2 + props_len
    if props_len < 0 or off != end:
        raise Damage(
            pos, f"the record's fields add up to {off - pos} bytes, TOTALSIZE says {total}"
        )
    return int(total)


def write_end(buf: Buf, size: int, mapped_size: int, pos: int) -> bool:
    """Whether damage at ``pos`` of the log's newest file is only its write end: a record
    not yet (or never, after a crash) written whole, nothing written after it.

    The newest file is being born (0 bytes, created before it is mapped), or is shorter
    than the mapped size and ends inside (or right before) the record at ``pos``, or is
    whole and zero from the end of that record (the frame's TOTALSIZE when it fits the
    file, else its first 8 bytes) to the end of the file: a broker copies a record front
    to back and writes nothing past it, so bytes found further on are damage, not a
    write in progress.  This is where RocketMQ's own recovery ends the log too (it
    truncates at the first record that does not check).
    """
    if pos >= size:
        return True
    total = _I32.unpack_from(buf, pos)[0] if size - pos >= 4 else 0
    end = pos + (total if MIN_RECORD_SIZE <= total <= mapped_size - pos else 8)
    if end >= size:
        return True
    tail = np.frombuffer(buf, dtype=np.uint8, count=size - end, offset=end)
    try:
        return not tail.any()
    finally:
        del tail


def first_store_timestamp(buf: Buf, size: int) -> int | None:
    """STORETIMESTAMP of the record at position 0 if it has a message magic code, else None.

    Only the magic code and SYSFLAG are trusted, as ``isMappedFileMatchedRecover`` does.
    """
    if size < HEADER_SIZE + 28:
        return None
    (magic,) = _I32.unpack_from(buf, 4)
    if magic != MAGIC_V1 and magic != MAGIC_V2:
        return None
    (sys_flag,) = _I32.unpack_from(buf, 36)
    off = HEADER_SIZE + (20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8)
    (ts,) = _I64.unpack_from(buf, off)
    return int(ts)


def walk_runs(
    buf: Buf,
    size: int,
    mapped_size: int,
    file_start: int,
    start_pos: int,
    is_last: bool,
    *,
    compiled: bool = True,
) -> Generator[_Positions, None, None]:
    """Yield the positions of the message records from ``start_pos``, as int64 arrays.

    Raises :class:`Damage` at the first bad record (after yielding the good ones before it).
    A zero tail ends the current (last) file cleanly; in an earlier file it is damage, since
    the broker always closes a full file with a blank record.  With numba installed (and
    ``compiled``), runs of good records are found by the compiled kernel of
    :mod:`._walk_numba`; every stop is still judged by :func:`check_record`.  Close the
    generator (``contextlib.closing``) before unmapping ``buf`` if you stop early.
    """
    kernel = compiled_walk() if compiled and size > 0 else None
    arr = np.frombuffer(buf, dtype=np.uint8, count=size) if kernel is not None else None
    pos = start_pos
    try:
        while True:
            if kernel is not None:
                out = np.empty(_CHUNK, dtype=np.int64)
                n, pos = kernel(arr, size, mapped_size, file_start, pos, out)
                if n:
                    yield out[:n]
                if n == _CHUNK:
                    continue
            total = check_record(buf, pos, size, mapped_size, file_start)
            if total > 0:
                yield np.array([pos], dtype=np.int64)
                pos += total
                continue
            if total == ZERO_TAIL:
                tail = np.frombuffer(buf, dtype=np.uint8, count=size - pos, offset=pos)
                nonzero = int(np.count_nonzero(tail))
                del tail
                if nonzero:
                    raise Damage(pos, f"TOTALSIZE is 0 but {nonzero} non-zero bytes follow")
                if not is_last:
                    raise Damage(
                        pos,
                        "data ends in a zero tail without the end-of-file blank "
                        "record, but a later file follows",
                    )
            return
    finally:
        del arr  # no view of the mapping may outlive the walk


def walk_file(
    buf: Buf,
    size: int,
    mapped_size: int,
    file_start: int,
    start_pos: int,
    is_last: bool,
    *,
    compiled: bool = True,
) -> Generator[int, None, None]:
    """:func:`walk_runs`, one position at a time."""
    runs = walk_runs(buf, size, mapped_size, file_start, start_pos, is_last, compiled=compiled)
    with closing(runs):
        for run in runs:
            yield from run.tolist()


def record_positions(
    buf: Buf,
    size: int,
    mapped_size: int,
    file_start: int,
    start_pos: int,
    is_last: bool,
    *,
    compiled: bool = True,
) -> tuple[_Positions, Damage | None]:
    """All record positions of a file from ``start_pos``, and the damage that stopped it."""
    runs: list[_Positions] = []
    damage = None
    try:
        for run in walk_runs(
            buf, size, mapped_size, file_start, start_pos, is_last, compiled=compiled
        ):
            runs.append(run)
    except Damage as d:
        damage = d
    positions = np.concatenate(runs) if runs else np.empty(0, dtype=np.int64)
    return positions, damage
