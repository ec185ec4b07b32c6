"""The scalar chained lookup, written once: ``IndexFile.selectPhyOffset`` over one file.

Rules 8-10 of :mod:`rmqarrow.format.rules`.  Every scalar walk in rmqarrow is this one:
``IndexFile.select_phy_offsets``, the exact fallback of the vectorized lookup for damaged
chains, and the traced walk ``rmqarrow verify`` explains mismatches with (through the
``trace`` hook, called once per entry read).  The walk returns why it stopped.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rmqarrow.format.java import java_long
from rmqarrow.format.layout import HeaderState, MappedIndex

__all__ = [
    "CYCLE",
    "EMPTY_SLOT",
    "END_OF_CHAIN",
    "MAX_NUM_REACHED",
    "NEGATIVE_TIME_DIFF",
    "OLDER_THAN_BEGIN",
    "PAST_THE_FILE",
    "PREV_INVALID",
    "StepHook",
    "committed_heads",
    "committed_slot_heads",
    "walk_chain",
]

EMPTY_SLOT = "empty slot"
MAX_NUM_REACHED = "max_num reached"
PAST_THE_FILE = "position past the file"
CYCLE = "cycle"
NEGATIVE_TIME_DIFF = "negative time diff"
OLDER_THAN_BEGIN = "entry older than begin"
END_OF_CHAIN = "end of chain"
PREV_INVALID = "prev_index invalid"

#: ``hook(position, phy_offset, store_time, hit)`` for each entry read; ``store_time`` is
#: None when a negative time diff ended the walk before the time was computed.
StepHook = Callable[[int, int, "int | None", bool], None]


def committed_heads(
    regions: MappedIndex, heads: np.ndarray, slots: np.ndarray, count: int
) -> np.ndarray:
    """``heads`` (int64, the stored heads of ``slots``) as of header count ``count``.

    A writer writes each entry before the slot head that points at it, and the header
    after a batch's heads; a reader (or a crash) before the header sees heads
    ``>= count``: positions not yet committed.  Each
    such head is walked back along ``prev_index`` to the newest committed position of its
    chain, stepping only over entries of the same slot at strictly falling positions;
    anything else (a damaged head) becomes -1: readers take it as an empty slot, crash
    repair clears it, export refuses the file.  Live readers, export snapshots and crash
    repair all use this one rule.
    """
    out = heads.astype(np.int64, copy=True)
    todo = np.flatnonzero(out >= count)
    limit = regions.geometry.index_num
    slot_num = regions.geometry.hash_slot_num
    entries = regions.entries
    while todo.size:
        pos = out[todo]
        inside = pos < limit
        out[todo[~inside]] = -1
        todo, pos = todo[inside], pos[inside]
        e = entries[pos]
        kh = e["key_hash"].astype(np.int64)
        prev = e["prev_index"].astype(np.int64)
        blank = (kh == 0) & (prev == 0) & (e["phy_offset"] == 0)  # never written
        same = (kh >= 0) & (kh % slot_num == slots[todo]) & (prev < pos) & (prev >= 0) & ~blank
        out[todo[~same]] = -1
        todo, prev = todo[same], prev[same]
        out[todo] = prev
        todo = todo[prev >= count]
    return out


def committed_slot_heads(regions: MappedIndex, count: int) -> tuple[np.ndarray, int]:
    """The whole slot table (int64) as of header count ``count``, and how many heads
    were past it: each such head walked back by :func:`committed_heads`, except one that
    cannot be (a damaged head), which stays as stored for the caller to see."""
    heads = regions.slots.astype(np.int64)
    late = np.flatnonzero(heads >= count)
    if not late.size:
        return heads, 0
    fixed = committed_heads(regions, heads[late], late, count)
    ok = fixed >= 0
    heads[late[ok]] = fixed[ok]
    return heads, int(np.count_nonzero(ok))


def walk_chain(
    regions: MappedIndex,
    state: HeaderState,
    key_hash: int,
    max_num: int,
    begin: int,
    end: int,
    out: list[int],
    hook: StepHook | None = None,
) -> str:
    """Append the offsets of ``key_hash`` stored within ``[begin, end]`` to ``out``,
    newest first, until ``out`` holds ``max_num``; return the reason the walk stopped."""
    count = state.index_count
    geometry = regions.geometry
    slot = key_hash % geometry.hash_slot_num
    position = int(regions.slots[slot])
    if position >= count > 1:  # a head not committed yet (live writer, crash)
        position = int(committed_heads(regions, np.array([position]), np.array([slot]), count)[0])
    if position <= 0 or position > count or count <= 1:
        return EMPTY_SLOT
    entries = regions.entries
    begin_ts = state.begin_timestamp
    visited: set[int] | None = None
    path: list[int] = []
    while True:
        if len(out) >= max_num:
            return MAX_NUM_REACHED
        if position >= geometry.index_num:
            return PAST_THE_FILE
        if visited is not None:
            if position in visited:
                return CYCLE
            visited.add(position)
        else:
            path.append(position)
        hash_read, offset, diff, prev = entries[position].item()
        if diff < 0:
            if hook is not None:
                hook(position, offset, None, False)
            return NEGATIVE_TIME_DIFF
        t = java_long(begin_ts + diff * 1000)
        hit = hash_read == key_hash and begin <= t <= end
        if hit:
            out.append(offset)
        if hook is not None:
            hook(position, offset, t, hit)
        if t < begin:
            return OLDER_THAN_BEGIN
        if prev <= 0 or prev > count or prev == position:
            return END_OF_CHAIN if prev == 0 else PREV_INVALID
        if visited is None and prev > position:
            # Only a damaged file points forward; from here on every position is
            # remembered, so that a cycle of any length ends the walk (rule 10).
            visited = set(path)
        position = prev
