"""The Arrow schemas of the three index tables: ``files``, ``slots`` and ``entries``.

Column names and types are fixed; every field carries a ``description`` in its Arrow
metadata and every schema names its table under ``rmqarrow.table``.  Values are raw:
what the native file holds, so a dataset converts back to byte-identical files.

``files``   one row per index file (its header and geometry).
``slots``   one row per non-zero hash slot: the head of that slot's chain.
``entries`` one row per stored entry, positions 1 .. index_count-1.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

__all__ = [
    "ENTRIES_SCHEMA",
    "FILES_SCHEMA",
    "ROCKSDB_BOOKKEEPING_SCHEMA",
    "ROCKSDB_RECORDS_SCHEMA",
    "ROCKSDB_SCHEMAS",
    "ROCKSDB_SCHEMA_VERSION",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "SLOTS_SCHEMA",
    "TIERED_FILES_SCHEMA",
    "TIERED_ITEMS_SCHEMA",
    "TIERED_SCHEMAS",
    "TIERED_SCHEMA_VERSION",
    "TIERED_SLOTS_SCHEMA",
    "numpy_dtype",
]

SCHEMA_VERSION = "1"


def numpy_dtype(type_: pa.DataType) -> Any:
    """The numpy dtype of a fixed-width Arrow type (a column's values as numpy holds them).

    Not ``DataType.to_pandas_dtype()``: before pyarrow 26 that imports pandas, which is no
    dependency of rmqarrow, so a core-only install failed there.
    """
    return pa.array([], type_).to_numpy(zero_copy_only=False).dtype


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


# -- Tiered storage index (RocketMQ RIP-65 IndexStoreFile) ---------------------------------
#
# A separate dataset kind (manifest format "rmqarrow-tiered-dataset", tables tiered_files/,
# tiered_slots/, tiered_items/), written by rmqarrow.tiered.parquet.export.  Raw
# values again: rmqarrow.tiered.parquet.importer rebuilds byte-identical files of
# both forms ("unsealed" = the local file, "compacted" = the uploaded segment).

TIERED_SCHEMA_VERSION = "1"


def _tfield(name: str, type_: pa.DataType, description: str, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": description})


def _tschema(table: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema(
        fields,
        metadata={"rmqarrow.table": table, "rmqarrow.schema_version": TIERED_SCHEMA_VERSION},
    )


_TIERED_FILE = _tfield(
    "file_name",
    pa.string(),
    "the file's name: its begin timestamp (local) or the segment name (uploaded)",
)

TIERED_FILES_SCHEMA = _tschema(
    "tiered_files",
    _TIERED_FILE,
    _tfield(
        "relative_path",
        pa.string(),
        "where the file lay below the exported folder "
        "(import writes it there); the name itself for one exported file",
    ),
    _tfield("form", pa.string(), "'unsealed' (local IndexStoreFile) or 'compacted' (uploaded)"),
    _tfield("file_size", pa.int64(), "bytes in the file (0: an empty compacted segment)"),
    _tfield("magic", pa.int32(), "header magic: BEGIN -1127939447 or END -1127939451"),
    _tfield(
        "begin_timestamp",
        pa.int64(),
        "header beginTimestamp (ms); every item's time "
        "is relative to it (queries use the file name's value for local files)",
    ),
    _tfield("end_timestamp", pa.int64(), "header endTimestamp (ms)"),
    _tfield("hash_slot_count", pa.int32(), "header hashSlotCount"),
    _tfield("item_count", pa.int32(), "header itemCount (index of the newest local item)"),
    _tfield("hash_slot_num", pa.int32(), "S: hash slots (broker configuration)"),
    _tfield(
        "index_num", pa.int32(), "N: item records of a local file (null: compacted)", nullable=True
    ),
    _tfield(
        "query_begin_timestamp",
        pa.int64(),
        "the begin timestamp queries use: from the "
        "file name when numeric (RocketMQ's rule 5), else the header's",
    ),
)

TIERED_SLOTS_SCHEMA = _tschema(
    "tiered_slots",
    _TIERED_FILE,
    _tfield("slot", pa.int32(), "slot number 0 .. S-1 (rows only where the 8 bytes are not 0)"),
    _tfield("head", pa.int32(), "local: newest item index of the slot (raw int32)", nullable=True),
    _tfield(
        "unused",
        pa.int32(),
        "local: the slot's second int32 (RocketMQ never writes it)",
        nullable=True,
    ),
    _tfield(
        "position", pa.int32(), "compacted: byte position of the slot's first item", nullable=True
    ),
    _tfield("length", pa.int32(), "compacted: byte length of the slot's items", nullable=True),
)

TIERED_ITEMS_SCHEMA = _tschema(
    "tiered_items",
    _TIERED_FILE,
    _tfield(
        "position",
        pa.int32(),
        "local: item index (record number, 1 .. itemCount); "
        "compacted: item ordinal in the item region (0-based)",
    ),
    _tfield(
        "slot",
        pa.int32(),
        "local: hash % S (Java remainder, may be negative for "
        "Integer.MIN_VALUE); compacted: the slot whose byte range holds the item",
        nullable=True,
    ),
    _tfield(
        "slot_rank",
        pa.int32(),
        "compacted: 0-based rank of the item in its slot "
        "(queries examine ranks 0 .. 1023); null for local items",
        nullable=True,
    ),
    _tfield("hash_code", pa.int32(), "hashCode of topic#key (Integer.MIN_VALUE kept)"),
    _tfield("topic_id", pa.int32(), "topicId"),
    _tfield("queue_id", pa.int32(), "queueId"),
    _tfield("offset", pa.int64(), "the message's offset in the queue's tiered commit log"),
    _tfield("size", pa.int32(), "message size"),
    _tfield("time_diff", pa.int32(), "whole seconds from the begin timestamp, as stored"),
    _tfield(
        "next_index",
        pa.int32(),
        "local: next (older item of the slot, 0 = end); null for compacted items",
        nullable=True,
    ),
    _tfield(
        "store_time",
        pa.int64(),
        "decoded time queries compare: query_begin_timestamp + time_diff * 1000 (Java long wrap)",
    ),
)

TIERED_SCHEMAS: dict[str, pa.Schema] = {
    "tiered_files": TIERED_FILES_SCHEMA,
    "tiered_slots": TIERED_SLOTS_SCHEMA,
    "tiered_items": TIERED_ITEMS_SCHEMA,
}


# -- RocketMQ's RocksDB message index (RIP-82) --------------------------------------------
# ``rocksdb_records``: one row per key of the ``default`` column family except the two
# bookkeeping keys, in RocksDB (bytewise) order.  ``rocksdb_bookkeeping``: those two.

ROCKSDB_SCHEMA_VERSION = "1"


def _rschema(table: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema(
        fields,
        metadata={"rmqarrow.table": table, "rmqarrow.schema_version": ROCKSDB_SCHEMA_VERSION},
    )


ROCKSDB_RECORDS_SCHEMA = _rschema(
    "rocksdb_records",
    _tfield(
        "hour",
        pa.int64(),
        "the key's first 8 bytes: hour(store time) in ms, the bucket "
        "a query walks (null: a key shorter than 8 bytes)",
        nullable=True,
    ),
    _tfield(
        "topic",
        pa.string(),
        "the topic (first '@' part; null: the key does not parse)",
        nullable=True,
    ),
    _tfield(
        "type",
        pa.string(),
        "K (a KEYS token), T (the TAGS value) or U (the message id); null: the key does not parse",
        nullable=True,
    ),
    _tfield(
        "key",
        pa.string(),
        "the key or tag (null for U); a value holding '@' is "
        "ambiguous in RocketMQ's unescaped key: queries use key_tail",
        nullable=True,
    ),
    _tfield("uniq_key", pa.string(), "the message id (UNIQ_KEY)", nullable=True),
    _tfield("offset", pa.int64(), "the key's last 8 bytes: the commit log offset", nullable=True),
    _tfield(
        "store_time",
        pa.int64(),
        "the value: the message's store time in ms (null: the value is not 8 bytes long)",
        nullable=True,
    ),
    _tfield(
        "key_tail",
        pa.binary(),
        "the raw key after its 8 hour bytes: what RocketMQ's "
        "prefix seek compares (bytewise), so SQL answers exactly as the native walk",
    ),
)

ROCKSDB_BOOKKEEPING_SCHEMA = _rschema(
    "rocksdb_bookkeeping",
    _tfield("name", pa.string(), "lastOffsetPy or lastStoreTimeStamp"),
    _tfield("value", pa.int64(), "its value (null: not 8 bytes long)", nullable=True),
)

ROCKSDB_SCHEMAS: dict[str, pa.Schema] = {
    "rocksdb_records": ROCKSDB_RECORDS_SCHEMA,
    "rocksdb_bookkeeping": ROCKSDB_BOOKKEEPING_SCHEMA,
}
