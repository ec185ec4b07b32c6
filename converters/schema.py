"""The Arrow schemas of the three index tables: ``files``, ``slots`` and ``entries``.

Column names and types are fixed; every field carries a ``description`` in its Arrow
metadata and every schema names its table under ``rmqarrow.table``.  Values are raw:
what the native file holds, so a dataset converts back to byte-identical files.

``files``   one row per index file (its header and geometry).
``slots``   one row per non-zero hash slot: the head of that slot's chain.
``entries`` one row per stored entry, positions 1 .. index_count-1.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["ENTRIES_SCHEMA", "FILES_SCHEMA", "SCHEMAS", "SCHEMA_VERSION", "SLOTS_SCHEMA"]

SCHEMA_VERSION = "1"


def _field(name: str, type_: pa.DataType, description: str) -> pa.Field:
    return pa.field(name, type_, nullable=False, metadata={"description": description})


_FILE_NAME = _field(
    "file_name", pa.string(), "index file name (yyyyMMddHHmmssSSS); files sort by it, oldest first"
)


def _schema(table: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema(
        fields, metadata={"rmqarrow.table": table, "rmqarrow.schema_version": SCHEMA_VERSION}
    )


FILES_SCHEMA = _schema(
    "files",
    _FILE_NAME,
    _field("begin_timestamp", pa.int64(), "header beginTimestamp, epoch ms (entry 1's store time)"),
    _field("end_timestamp", pa.int64(), "header endTimestamp, epoch ms (last put's store time)"),
    _field("begin_phy_offset", pa.int64(), "header beginPhyOffset (commit-log offset of entry 1)"),
    _field("end_phy_offset", pa.int64(), "header endPhyOffset (commit-log offset of the last put)"),
    _field("hash_slot_count", pa.int32(), "header hashSlotCount: puts into an empty slot"),
    _field("index_count", pa.int32(), "header indexCount: next free position (entries + 1)"),
    _field("hash_slot_num", pa.int32(), "geometry: number of hash slots"),
    _field("index_num", pa.int32(), "geometry: number of entry positions (capacity + 1)"),
)

SLOTS_SCHEMA = _schema(
    "slots",
    _FILE_NAME,
    _field("slot", pa.int32(), "hash slot number, key_hash % hash_slot_num"),
    _field("head", pa.int32(), "raw slot value: position of the newest entry of the chain"),
)

ENTRIES_SCHEMA = _schema(
    "entries",
    _FILE_NAME,
    _field("position", pa.int32(), "entry position in the file, 1 .. index_count-1"),
    _field("key_hash", pa.int32(), "abs(Java String.hashCode) of topic#key, MIN_VALUE -> 0"),
    _field("slot", pa.int32(), "key_hash % hash_slot_num (Java remainder)"),
    _field("phy_offset", pa.int64(), "commit-log physical offset of the message"),
    _field("time_diff", pa.int32(), "seconds from the file's begin_timestamp, as stored"),
    _field(
        "store_timestamp",
        pa.int64(),
        "epoch ms as the native lookup reads it: begin_timestamp + time_diff*1000 (Java long)",
    ),
    _field("prev_index", pa.int32(), "raw position of the previous entry in the chain (0 = end)"),
)

SCHEMAS: dict[str, pa.Schema] = {
    "files": FILES_SCHEMA,
    "slots": SLOTS_SCHEMA,
    "entries": ENTRIES_SCHEMA,
}
