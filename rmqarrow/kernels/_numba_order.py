"""The compiled kernels of :mod:`rmqarrow.kernels.order`: entries in (slot, position) order.

A counting sort by slot, in O(n): :func:`slot_histogram` counts the entries of each slot
(one sequential pass over the stored hashes), :func:`scatter_records` copies each entry,
decoded to native byte order and with its position, to its slot's next free row of an
anonymous record array (positions visited ascending, so the sort is stable and each
slot's positions come out ascending: (slot, position) order).  Both passes read the map
sequentially, so the caller can release its pages chunk by chunk; the random accesses go
to anonymous memory, which numpy backs with huge pages (a gather from the file's map
instead misses the TLB on nearly every row: about twice as slow, measured).
:func:`fill_slots` gives a range of sorted rows their slot from the slots' end rows.

A slot is Java's remainder of the stored hash (negative for a negative, damaged hash),
computed with a float reciprocal and one correction (an integer division is the slowest
instruction of the pass); slots are counted from ``lo`` (0, or ``1 - hash_slot_num``
when some hash is negative).

Importing this module raises ImportError without numba; :mod:`rmqarrow.kernels.order`
then uses its numpy form (an int64 sort of ``slot << 32 | index``), which gives identical
rows (the tests run both).
"""

from __future__ import annotations

import numba
import numpy as np

from rmqarrow.kernels._numba import _bswap

__all__ = ["bucket_histogram", "fill_slots", "scatter_buckets", "sort_buckets"]

_U = np.uint64
_I32 = np.int32
_I64 = np.int64
_U32 = np.uint32


@numba.njit(cache=True, nogil=True, inline="always")
def _slot(h: np.int64, slot_num: np.int64, inverse: np.float64) -> np.int64:  # pragma: no cover
    a = -h if h < 0 else h
    r = a - _I64(np.float64(a) * inverse) * slot_num  # off by at most one slot_num
    if r < 0:
        r += slot_num
    elif r >= slot_num:
        r -= slot_num
    return -r if h < 0 else r  # Java's remainder keeps the dividend's sign


@numba.njit(cache=True, nogil=True, boundscheck=False)
def bucket_histogram(  # pragma: no cover
    words: np.ndarray,
    a: np.int64,
    b: np.int64,
    slot_num: np.int64,
    lo: np.int64,
    shift: np.int64,
    counts: np.ndarray,
) -> bool:
    """Add the entries ``a..b-1`` to ``counts[(slot - lo) >> shift]`` (their bucket of
    slots); False (counts incomplete) as soon as a slot below ``lo`` shows up."""
    inverse = 1.0 / np.float64(slot_num)
    for p in range(a, b):
        s = _slot(_I64(_I32(_bswap(words[_U(p) * _U(5)]))), slot_num, inverse) - lo
        if s < 0:
            return False
        counts[s >> shift] += 1
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def scatter_buckets(  # pragma: no cover
    words: np.ndarray,
    a: np.int64,
    b: np.int64,
    slot_num: np.int64,
    lo: np.int64,
    shift: np.int64,
    cursor: np.ndarray,
    out: np.ndarray,
) -> None:
    """Entries ``a..b-1`` (ascending) to ``out[cursor[bucket]++]``, decoded: ``out`` is
    rows of six native uint32 words, key_hash, time_diff, prev_index, position, then
    phy_offset's low and high halves (the record dtype of :mod:`rmqarrow.kernels.order`).
    Few buckets, so each bucket's next row stays in cache: the writes stream."""
    inverse = 1.0 / np.float64(slot_num)
    for p in range(a, b):
        w = _U(p) * _U(5)
        h = _bswap(words[w])
        k = (_slot(_I64(_I32(h)), slot_num, inverse) - lo) >> shift
        d = cursor[k]
        cursor[k] = d + 1
        out[d, 0] = h
        out[d, 1] = _bswap(words[w + _U(3)])
        out[d, 2] = _bswap(words[w + _U(4)])
        out[d, 3] = _U32(p)
        out[d, 4] = _bswap(words[w + _U(2)])
        out[d, 5] = _bswap(words[w + _U(1)])


@numba.njit(cache=True, nogil=True, boundscheck=False)
def sort_buckets(  # pragma: no cover
    rows: np.ndarray,
    bounds: np.ndarray,
    slot_num: np.int64,
    lo: np.int64,
    shift: np.int64,
    ends: np.ndarray,
    first: np.int64,
    stop: np.int64,
    tmp: np.ndarray,
    cursor: np.ndarray,
) -> None:
    """Sort buckets ``first .. stop-1`` (``rows[bounds[k]:bounds[k+1]]``) by slot, stably
    (a counting sort through ``tmp``, room for the largest bucket, which stays in cache;
    ``cursor`` has a counter per slot of a bucket), and set ``ends[slot - lo]`` to each of
    their slots' end row."""
    inverse = 1.0 / np.float64(slot_num)
    width = _I64(1) << shift
    for k in range(first, stop):
        start, end = _I64(bounds[k]), _I64(bounds[k + 1])
        base = _I64(k) << shift
        cursor[:] = 0
        for r in range(start, end):
            cursor[_slot(_I64(_I32(rows[r, 0])), slot_num, inverse) - lo - base] += 1
        total = _I64(0)
        for j in range(width):
            c = cursor[j]
            cursor[j] = total
            total += c
            if base + j < ends.size:
                ends[base + j] = start + total
        for r in range(start, end):
            i = _slot(_I64(_I32(rows[r, 0])), slot_num, inverse) - lo - base
            d = cursor[i]
            cursor[i] = d + 1
            for c in range(6):
                tmp[d, c] = rows[r, c]
        rows[start:end] = tmp[: end - start]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def fill_slots(  # pragma: no cover
    ends: np.ndarray, start: np.int64, bucket: np.int64, lo: np.int64, slot: np.ndarray
) -> None:
    """``slot[r]`` = the slot of sorted row ``start + r``: ``ends[k]`` is the end row of
    slot ``k + lo``, ``bucket`` the index ``k`` of row ``start``'s slot."""
    k = bucket
    for r in range(slot.size):
        while ends[k] <= start + r:
            k += 1
        slot[r] = _I32(k + lo)
