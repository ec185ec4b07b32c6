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

__all__ = ["walk_chunk"]

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
