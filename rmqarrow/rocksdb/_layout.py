"""The bytes of RocketMQ's RocksDB message index, written once.

One database (``<storeRoot>/rocksdbstore``) with the column families ``default`` (this
index), ``timer`` and ``trans``.  An index record's key is ``hour (int64, big-endian) |
UTF-8("@topic@TYPE@key@uniqKey@") | commit log offset (int64, big-endian)`` (``U`` records
have no key part: ``@topic@U@uniqKey@``) and its value the exact store time (int64,
big-endian).  Two bookkeeping keys sit in the same family.  See :mod:`._rules` for what
RocketMQ does with them.
"""

from __future__ import annotations

import struct

__all__ = [
    "BOOKKEEPING_KEYS",
    "COLUMN_FAMILIES",
    "DEFAULT_CF",
    "DELETE_END_SUFFIX",
    "HOUR_MS",
    "INDEX_TYPES",
    "KEY_SPLIT",
    "LAST_OFFSET_PY",
    "LAST_STORE_TIMESTAMP",
    "LONG",
    "TYPE_KEY",
    "TYPE_TAG",
    "TYPE_UNIQUE",
    "be_long",
    "hour_of",
    "java_utf8",
    "long_bytes",
    "middle_text",
    "record_key",
    "record_prefix",
]

#: the families RocketMQ creates, in its order; the index lives in ``default``
DEFAULT_CF = "default"
COLUMN_FAMILIES = (DEFAULT_CF, "timer", "trans")

HOUR_MS = 3_600_000
LONG = struct.Struct(">q")
KEY_SPLIT = "@"
TYPE_KEY, TYPE_TAG, TYPE_UNIQUE = "K", "T", "U"
INDEX_TYPES = (TYPE_KEY, TYPE_TAG, TYPE_UNIQUE)

LAST_OFFSET_PY = b"lastOffsetPy"
LAST_STORE_TIMESTAMP = b"lastStoreTimeStamp"
BOOKKEEPING_KEYS = (LAST_OFFSET_PY, LAST_STORE_TIMESTAMP)
#: the exclusive end of an expiry range: hour + "@" + 512 bytes 0xFF
DELETE_END_SUFFIX = b"\xff" * 512


def hour_of(t: int) -> int:
    """``MixAll.dealTimeToHourStamps``: ``t`` floored to the hour; ``t <= 0`` unchanged."""
    return t if t <= 0 else t - t % HOUR_MS


def long_bytes(v: int) -> bytes:
    """``ByteBuffer.putLong``: 8 bytes, big-endian two's complement (wrapping)."""
    return LONG.pack(((v + (1 << 63)) % (1 << 64)) - (1 << 63))


def be_long(b: bytes) -> int:
    """The int64 of the first 8 bytes (``ByteBuffer.getLong``); ``b`` must hold 8."""
    return int(LONG.unpack_from(b, 0)[0])


def java_utf8(text: str) -> bytes:
    """``String.getBytes(UTF_8)``: an unpaired surrogate becomes ``?``."""
    return text.encode("utf-8", errors="replace")


def middle_text(topic: str, index_type: str, key: str | None, uniq_key: str) -> str:
    """``@topic@K@key@uniq@``, ``@topic@T@tags@uniq@`` or ``@topic@U@uniq@``."""
    if index_type == TYPE_UNIQUE:
        return f"@{topic}@{index_type}@{uniq_key}@"
    return f"@{topic}@{index_type}@{key}@{uniq_key}@"


def record_key(hour: int, middle: str, offset: int) -> bytes:
    """The whole key of one index record."""
    return long_bytes(hour) + java_utf8(middle) + long_bytes(offset)


def record_prefix(hour: int, topic: str, index_type: str, key: str) -> bytes:
    """What a query's prefix seek compares in one hour: ``hour + "@topic@TYPE@key@"``."""
    return long_bytes(hour) + java_utf8(f"@{topic}@{index_type}@{key}@")
