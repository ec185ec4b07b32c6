"""Every RocketMQ IndexFile rule, reproduced and documented in one place.

These are the rules of ``store/index/IndexFile`` and ``IndexHeader`` (Apache RocketMQ),
some of them surprising; the golden fixtures written by the Java classes confirm each.

Writing (``putKey``):

1. **Capacity.** Position 0 is never used: a fresh header's in-memory ``indexCount`` is 1
   (``load()`` also turns a stored count <= 0 into 1).  A put succeeds while
   ``indexCount < index_num``, so a file holds ``index_num - 1`` entries, and
   ``isWriteFull`` is ``indexCount >= index_num``.
2. **Slot value validity.** A slot's stored head is used as the new entry's ``prev_index``
   only if ``0 < head <= indexCount``; otherwise the new entry gets 0 (chain end).
3. **hashSlotCount** is incremented only when the head was invalid (an "empty" slot).
4. **Time diff.** ``(storeTimestamp - beginTimestamp) / 1000`` in Java ``long`` arithmetic
   (wrapping subtraction, division truncated toward zero), then: 0 when the header's
   ``beginTimestamp <= 0``, clamped to ``Integer.MAX_VALUE`` above, to 0 below.
5. **The first entry of a file** (``indexCount <= 1``) takes its time diff against the
   header's *old* ``beginTimestamp`` (0 in a new file, the previous file's
   ``endTimestamp`` in a rolled one); only then are ``beginTimestamp`` and
   ``beginPhyOffset`` set from that entry.  A file whose first store timestamp is <= 0
   therefore keeps ``beginTimestamp <= 0`` and every later diff is 0.
6. **Header seeding on roll.** A file created with ``endPhyOffset > 0`` / ``endTimestamp > 0``
   starts with begin = end = that value (each field on its own).
7. ``endPhyOffset`` and ``endTimestamp`` are set from every successful put.

Reading (``selectPhyOffset``), for a key hash ``h`` and ``[begin, end]``:

8. Nothing is read when the slot head is invalid (rule 2) or ``indexCount <= 1``.
9. Walking from the head, each entry's time is ``beginTimestamp + timeDiff * 1000`` (Java
   ``long``, wrapping); it is returned when its hash equals ``h`` and
   ``begin <= time <= end``.  The walk stops before reading when ``max_num`` offsets are
   held, and after an entry when its ``timeDiff < 0`` (before matching), its
   ``prev_index`` is invalid (``<= 0`` or ``> indexCount``), equals the current position,
   or its time is ``< begin``.
10. **Beyond RocketMQ:** a damaged file can hold a longer cycle (RocketMQ only catches a
    self-loop, and would spin forever).  rmqarrow stops a walk the moment it would revisit
    a position, so a lookup is always bounded and returns what the walk found until then.

Across files (``IndexService.queryOffset``): newest file first; a file is searched only
if ``isTimeMatched(begin, end)``; the walk stops after a file whose ``beginTimestamp <
begin`` or once ``max_num`` offsets are held.
"""

from __future__ import annotations

import numpy as np

from rmqarrow.format.java import JAVA_INT_MAX, java_div, java_long

__all__ = [
    "INVALID_INDEX",
    "is_time_matched",
    "slot_head_or_invalid",
    "time_diff",
    "time_diffs",
]

INVALID_INDEX = 0


def time_diff(store_timestamp: int, begin_timestamp: int) -> int:
    """Rule 4: the stored seconds-since-begin of an entry."""
    if begin_timestamp <= 0:
        return 0
    diff = java_div(java_long(store_timestamp - begin_timestamp), 1000)
    return min(max(diff, 0), JAVA_INT_MAX)


def time_diffs(store_timestamps: np.ndarray, begin_timestamp: int) -> np.ndarray:
    """Rule 4 over an int64 array, as int32; equal to :func:`time_diff` element-wise."""
    ts = np.asarray(store_timestamps, dtype=np.int64)
    if begin_timestamp <= 0:
        return np.zeros(ts.shape, dtype=np.int32)
    with np.errstate(over="ignore"):
        delta = ts - np.int64(begin_timestamp)  # wraps like Java
    # numpy floor-divides where Java truncates; the two differ only for negative deltas,
    # which clamp to 0 either way.
    diff = delta // 1000
    clipped: np.ndarray = np.clip(diff, 0, JAVA_INT_MAX).astype(np.int32)
    return clipped


def slot_head_or_invalid(head: int, index_count: int) -> int:
    """Rule 2: the head if ``0 < head <= index_count``, else ``INVALID_INDEX``."""
    return head if INVALID_INDEX < head <= index_count else INVALID_INDEX


def is_time_matched(begin: int, end: int, file_begin: int, file_end: int) -> bool:
    """``IndexFile.isTimeMatched``: does ``[begin, end]`` touch the file's time span?"""
    return (
        (begin < file_begin and end > file_end)
        or file_begin <= begin <= file_end
        or file_begin <= end <= file_end
    )
