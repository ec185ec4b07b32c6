"""The compiled record walk (numba, the ``fast`` extra).

It accepts a record only when every test of :func:`._walk.check_record` passes, and stops
(returning the position) at anything else: a blank record, a zero tail, damage, or a full
output buffer.  The Python ``check_record`` then judges the stop position, so every
reason and every end of file is still decided in one place; the kernel merely skips the
interpreter for the records in between.  Importing this module raises ImportError without
numba; the walk then runs in Python with identical results (tested).
"""

from __future__ import annotations

import numba
import numpy as np

from rmqarrow.commitlog._layout import (
    HEADER_SIZE,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_SIZE,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
)

__all__ = ["index_fields", "walk_chunk"]

_V1 = np.int64(MAGIC_V1)
_V2 = np.int64(MAGIC_V2)


@numba.njit(cache=True, nogil=True, inline="always")
def _be(arr: np.ndarray, pos: int, width: int) -> int:  # pragma: no cover - compiled
    v = np.int64(0)
    for k in range(width):
        v = (v << 8) | np.int64(arr[pos + k])
    bits = 8 * width
    if width < 8 and v >= (np.int64(1) << (bits - 1)):
        v -= np.int64(1) << bits
    return int(v)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _kernel(
    arr: np.ndarray, size: int, mapped: int, file_start: int, pos: int, out: np.ndarray
) -> tuple[int, int]:  # pragma: no cover - compiled
    n = 0
    cap = out.size
    while n < cap:
        left = size - pos
        if left < 8:
            break
        total = _be(arr, pos, 4)
        magic = _be(arr, pos + 4, 4)
        if magic != _V1 and magic != _V2:
            break
        if total < MIN_RECORD_SIZE or total > mapped - pos or total > left:
            break
        if _be(arr, pos + 28, 8) != file_start + pos:
            break
        sys_flag = _be(arr, pos + 36, 4)
        off = pos + HEADER_SIZE
        off += 20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8
        off += 8
        off += 20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8
        off += 12
        end = pos + total
        if off + 4 > end:
            break
        body_len = _be(arr, off, 4)
        off += 4 + body_len
        v1 = magic == _V1
        if body_len < 0 or off + (1 if v1 else 2) > end:
            break
        if v1:
            topic_len = _be(arr, off, 1)
            off += 1
        else:
            topic_len = _be(arr, off, 2)
            off += 2
        off += topic_len
        if topic_len < 0 or off + 2 > end:
            break
        props_len = _be(arr, off, 2)
        off += 2 + props_len
        if props_len < 0 or off != end:
            break
        out[n] = pos
        n += 1
        pos = end
    return n, pos


def walk_chunk(
    arr: np.ndarray, size: int, mapped: int, file_start: int, pos: int, out: np.ndarray
) -> tuple[int, int]:
    """Fill ``out`` with record positions from ``pos``: (count, position where it stopped)."""
    n, stop = _kernel(arr, size, mapped, file_start, pos, out)
    return int(n), int(stop)


_KEYS = np.frombuffer(b"KEYS", dtype=np.uint8)
_UNIQ_KEY = np.frombuffer(b"UNIQ_KEY", dtype=np.uint8)


@numba.njit(cache=True, nogil=True, inline="always")
def _is_name(arr: np.ndarray, at: int, length: int, name: np.ndarray) -> bool:  # pragma: no cover
    if length != name.size:
        return False
    for k in range(length):  # noqa: SIM110 - a compiled loop, not a generator
        if arr[at + k] != name[k]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _put(  # pragma: no cover - compiled
    arr: np.ndarray, start: int, length: int, data: np.ndarray, used: int
) -> np.ndarray:
    # data with arr[start:start+length] copied at used (grown when full)
    if used + length > data.size:
        grown = np.empty(max(2 * data.size, used + length), dtype=np.uint8)
        grown[:used] = data[:used]
        data = grown
    for k in range(length):
        data[used + k] = arr[start + k]
    return data


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _fields(  # pragma: no cover - compiled
    arr: np.ndarray,
    positions: np.ndarray,
    keys_name: np.ndarray,
    uniq_name: np.ndarray,
    ints: np.ndarray,
    offsets: np.ndarray,
    texts: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # For each checked record: ints[i] = (SYSFLAG, STORETIMESTAMP), and the bytes of its
    # topic, KEYS and UNIQ_KEY appended to texts[0..2] (offsets[k, i + 1] their end; an
    # absent property ends at -1 - end, i.e. is null).  The properties are split as
    # string2messageProperties does: pairs on 0x02, name and value at the pair's first
    # 0x01, a pair with an empty name or value dropped, the last pair of a name wins.
    topics, keys, uniqs = texts
    used0 = 0
    used1 = 0
    used2 = 0
    offsets[:, 0] = 0
    for i in range(positions.size):
        pos = positions[i]
        magic = _be(arr, pos + 4, 4)
        sys_flag = _be(arr, pos + 36, 4)
        off = pos + HEADER_SIZE + (20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8)
        ints[i, 0] = sys_flag
        ints[i, 1] = _be(arr, off, 8)
        off += 8 + (20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8) + 12
        off += 4 + _be(arr, off, 4)
        if magic == _V1:
            topic_len = _be(arr, off, 1) & 0xFF  # a V1 length byte is unsigned here, as before
            off += 1
        else:
            topic_len = _be(arr, off, 2)
            off += 2
        topics = _put(arr, off, topic_len, topics, used0)
        used0 += topic_len
        offsets[0, i + 1] = used0
        off += topic_len
        props_len = _be(arr, off, 2)
        off += 2
        stop = off + props_len
        ks = -1
        kl = 0
        us = -1
        ul = 0
        item = off
        while item <= stop:
            end = item
            while end < stop and arr[end] != 2:
                end += 1
            sep = item
            while sep < end and arr[sep] != 1:
                sep += 1
            if item < sep < end - 1:
                if _is_name(arr, item, sep - item, keys_name):
                    ks = sep + 1
                    kl = end - sep - 1
                elif _is_name(arr, item, sep - item, uniq_name):
                    us = sep + 1
                    ul = end - sep - 1
            item = end + 1
        if ks >= 0:
            keys = _put(arr, ks, kl, keys, used1)
            used1 += kl
            offsets[1, i + 1] = used1
        else:
            offsets[1, i + 1] = -1 - used1
        if us >= 0:
            uniqs = _put(arr, us, ul, uniqs, used2)
            used2 += ul
            offsets[2, i + 1] = used2
        else:
            offsets[2, i + 1] = -1 - used2
    return topics[:used0], keys[:used1], uniqs[:used2]


def index_fields(
    arr: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """What the index build reads of the records at ``positions`` (frames checked), in one
    pass over the mapped bytes: ``ints``, an (n, 2) int64 array of SYSFLAG and
    STORETIMESTAMP, and for the topic, KEYS and UNIQ_KEY ``(offsets, data)``: the bytes
    end to end and n + 1 int64 offsets, Arrow large-binary style, where an offset
    ``-1 - end`` marks a null (the property is absent)."""
    n = positions.size
    ints = np.empty((n, 2), dtype=np.int64)
    offsets = np.empty((3, n + 1), dtype=np.int64)
    guess = (
        np.empty(n * 48 + 16, dtype=np.uint8),
        np.empty(n * 32 + 16, dtype=np.uint8),
        np.empty(n * 40 + 16, dtype=np.uint8),
    )
    texts = _fields(arr, positions, _KEYS, _UNIQ_KEY, ints, offsets, guess)
    return ints, [(offsets[k], texts[k]) for k in range(3)]
