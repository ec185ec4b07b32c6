"""The query on a local (unsealed or sealed) file: the bounded chain walk of rules 13-17."""

from __future__ import annotations

import mmap

from rmqarrow.tiered.layout.binary import INT32, ITEM_STRUCT, item_position

from ._rules import MAX_WALK_STEPS, stored_time
from ._types import IndexItem

__all__ = ["walk_local"]


def walk_local(
    buf: mmap.mmap,
    hash_slot_num: int,
    item_count: int,
    file_begin: int,
    hash_code: int,
    slot_pos: int,
    max_count: int,
    begin: int,
    end: int,
    exact: bool = False,
) -> list[IndexItem]:
    """RocketMQ's answer for ``hash_code`` in ``[begin, end]``, newest first.

    ``item_count`` was checked against the file size when the file was opened, so every item
    the walk reads lies inside ``buf``.  ``exact`` (rule 29) walks the whole chain and keeps
    at most ``max_count`` matches instead of RocketMQ's 512 steps and ``max_count + 1``.
    """
    if slot_pos < 0 or slot_pos + 4 > len(buf):
        return []  # rule 13: the read throws, RocketMQ answers an empty list
    v = max(INT32.unpack_from(buf, slot_pos)[0], 0)
    found: list[IndexItem] = []
    seen: set[int] = set()
    limit = max(max_count, 0) if exact else max_count
    if exact and limit == 0:
        return found
    steps = item_count + 1 if exact else MAX_WALK_STEPS
    while steps > 0 and 0 < v <= item_count and v not in seen:
        seen.add(v)
        fields = ITEM_STRUCT.unpack_from(buf, item_position(hash_slot_num, v))
        if fields[0] == hash_code and begin <= stored_time(fields[5], file_begin) <= end:
            found.append(IndexItem(*fields))
            if len(found) > limit or (exact and len(found) == limit):
                break
        v = fields[6]
        steps -= 1
    return found
