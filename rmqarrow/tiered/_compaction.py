"""``doCompaction``: the local file regrouped by slot into the uploaded form (rules 18-21)."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np

from rmqarrow.errors import CorruptIndexError
from rmqarrow.tiered.layout.binary import (
    COMPACT_ITEM_DTYPE,
    COMPACT_ITEM_SIZE,
    COMPACT_SLOT_DTYPE,
    END_MAGIC,
    HEADER_STRUCT,
    ITEM_DTYPE,
    SLOT_DTYPE,
    items_position,
)

from ._chains import is_healthy, slot_chains

__all__ = ["compact_bytes"]


def _chain_order(
    heads: list[int], nexts: np.ndarray, capacity: int, index_num: int, path: Path
) -> tuple[list[int], list[int]]:
    """Item indices in output order, and how many each slot contributes."""
    order: list[int] = []
    counts: list[int] = []
    seen = bytearray(index_num)
    for slot, head in enumerate(heads):
        start = len(order)
        v = head
        while v > 0 and len(order) < capacity:
            if v >= index_num:
                raise CorruptIndexError(
                    f"{path}: slot {slot} chain points to item {v}, past the last item "
                    f"{index_num - 1} (RocketMQ's compaction fails here); the file is damaged"
                )
            if seen[v]:
                raise CorruptIndexError(
                    f"{path}: item {v} is reached twice (slot {slot}): a cycle or shared chain "
                    "in the next pointers; the file is damaged and cannot be compacted"
                )
            seen[v] = 1
            order.append(v)
            v = int(nexts[v])
        counts.append(len(order) - start)
    return order, counts


def compact_bytes(
    buf: mmap.mmap,
    hash_slot_num: int,
    index_num: int,
    header: tuple[int, int, int, int],
    path: Path,
) -> bytes:
    """The bytes ``doCompaction`` returns; ``header`` is (begin, end, slotCount, itemCount)."""
    begin, end, slot_count, item_count = header
    base = items_position(hash_slot_num)
    slots = np.frombuffer(buf, SLOT_DTYPE, hash_slot_num, 28)["item_index"]
    raw_heads = np.maximum(slots, 0).astype(np.int64)
    items = np.frombuffer(buf, ITEM_DTYPE, index_num, base)
    nexts = items["next_index"]
    raw_nexts = nexts[: item_count + 1].astype(np.int64)
    if is_healthy(raw_heads, raw_nexts, item_count):
        # every chain is a simple path of older items: number them all at once
        slot, _step, item = slot_chains(
            raw_heads, raw_nexts, item_count, item_count + 1, healthy=True
        )
        order = item
        counts = np.bincount(slot, minlength=hash_slot_num)
    else:
        walked, counted = _chain_order(raw_heads.tolist(), nexts, item_count, index_num, path)
        order, counts = np.asarray(walked, np.int64), np.asarray(counted, np.int64)
    if not len(order):
        return b""  # rule 20: the buffer's limit is the position of the last item written
    picked = items[order]
    out_items = np.empty(len(order), COMPACT_ITEM_DTYPE)
    for name in COMPACT_ITEM_DTYPE.names or ():
        out_items[name] = picked[name]
    lengths = counts.astype(np.int64) * COMPACT_ITEM_SIZE
    ends = base + np.cumsum(lengths)
    out_slots = np.empty(hash_slot_num, COMPACT_SLOT_DTYPE)
    out_slots["position"] = ends - lengths
    out_slots["length"] = lengths
    head = HEADER_STRUCT.pack(END_MAGIC, begin, end, slot_count, item_count)
    return head + out_slots.tobytes() + out_items.tobytes()
