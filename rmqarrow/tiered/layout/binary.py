"""The tiered index byte layout (RocketMQ ``IndexStoreFile``), written down once.

Every integer is big-endian.  The local ("unsealed") file is three regions::

    header   28 bytes   HEADER_DTYPE
    slots    8 * S      SLOT_DTYPE: int32 newest item index of the slot, int32 never written
    items    32 * N     ITEM_DTYPE; record 0 is never used

The compacted ("uploaded") file has the same header, ``S`` COMPACT_SLOT_DTYPE records
(absolute byte position and byte length of the slot's items) and then 28-byte
COMPACT_ITEM_DTYPE records grouped by slot.  ``S`` and ``N`` come from the broker
configuration, never from the file.  The ``struct`` formats mirror the dtypes for scalar
reads and writes; a test checks they agree.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = [
    "BEGIN_MAGIC",
    "BEGIN_TIMESTAMP_OFFSET",
    "COMPACT_ITEM_DTYPE",
    "COMPACT_ITEM_SIZE",
    "COMPACT_ITEM_STRUCT",
    "COMPACT_SLOT_DTYPE",
    "COMPACT_SLOT_STRUCT",
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "END_MAGIC",
    "HEADER_DTYPE",
    "HEADER_SIZE",
    "HEADER_STRUCT",
    "INT32",
    "INT64",
    "ITEM_DTYPE",
    "ITEM_SIZE",
    "ITEM_STRUCT",
    "SLOT_DTYPE",
    "SLOT_SIZE",
    "compacted_slot_num",
    "item_position",
    "items_position",
    "slot_position",
    "unsealed_size",
]

HEADER_SIZE = 28
SLOT_SIZE = 8
ITEM_SIZE = 32
COMPACT_ITEM_SIZE = 28

#: Offsets of the header fields (the reopen rule reads the begin timestamp at offset 4).
BEGIN_TIMESTAMP_OFFSET = 4

#: ``0xCCDDEEFF ^ (1880681586 + 4)`` and ``... + 8`` as Java ints.
BEGIN_MAGIC = -1127939447
END_MAGIC = -1127939451

#: RocketMQ's ``tieredStoreIndexFileMaxHashSlotNum`` / ``...MaxIndexNum`` defaults.
DEFAULT_HASH_SLOT_NUM = 5_000_000
DEFAULT_INDEX_NUM = 20_000_000

HEADER_DTYPE = np.dtype(
    [
        ("magic", ">i4"),
        ("begin_timestamp", ">i8"),
        ("end_timestamp", ">i8"),
        ("hash_slot_count", ">i4"),
        ("item_count", ">i4"),
    ]
)
SLOT_DTYPE = np.dtype([("item_index", ">i4"), ("unused", ">i4")])
_ITEM_FIELDS = [
    ("hash_code", ">i4"),
    ("topic_id", ">i4"),
    ("queue_id", ">i4"),
    ("offset", ">i8"),
    ("size", ">i4"),
    ("time_diff", ">i4"),
]
ITEM_DTYPE = np.dtype([*_ITEM_FIELDS, ("next_index", ">i4")])
COMPACT_SLOT_DTYPE = np.dtype([("position", ">i4"), ("length", ">i4")])
COMPACT_ITEM_DTYPE = np.dtype(_ITEM_FIELDS)

HEADER_STRUCT = struct.Struct(">iqqii")
ITEM_STRUCT = struct.Struct(">iiiqiii")
COMPACT_ITEM_STRUCT = struct.Struct(">iiiqii")
COMPACT_SLOT_STRUCT = struct.Struct(">ii")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")


def slot_position(slot: int) -> int:
    """Byte position of slot ``slot`` (negative slots give positions in or before the header)."""
    return HEADER_SIZE + SLOT_SIZE * slot


def items_position(hash_slot_num: int) -> int:
    """Byte position where the item region starts (both forms)."""
    return HEADER_SIZE + SLOT_SIZE * hash_slot_num


def item_position(hash_slot_num: int, item_index: int) -> int:
    """Byte position of local item ``item_index``."""
    return items_position(hash_slot_num) + ITEM_SIZE * item_index


def unsealed_size(hash_slot_num: int, index_num: int) -> int:
    """Size of a local file: ``28 + 8*S + 32*N``."""
    return item_position(hash_slot_num, index_num)


def compacted_slot_num(data: bytes, size: int) -> int | None:
    """``S`` of a compacted file from its first bytes and size, or None if not compacted."""
    if size <= HEADER_SIZE or len(data) < HEADER_SIZE + SLOT_SIZE:
        return None
    magic = INT32.unpack_from(data, 0)[0]
    first = int(INT32.unpack_from(data, HEADER_SIZE)[0])
    if magic != END_MAGIC or first < items_position(1) or (first - HEADER_SIZE) % SLOT_SIZE:
        return None
    s = (first - HEADER_SIZE) // SLOT_SIZE
    rest = size - items_position(s)
    if rest < COMPACT_ITEM_SIZE or rest % COMPACT_ITEM_SIZE:
        return None
    return s
