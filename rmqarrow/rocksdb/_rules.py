"""Every rule of RocketMQ's RocksDB message index (RIP-82), in one place.

Read off RocketMQ's sources (``IndexRocksDBStore``, ``IndexRocksDBRecord``,
``MessageRocksDBStorage``) and confirmed by the golden fixtures in ``tests/golden/rocksdb``
(RocketMQ's own classes produced them; where a document and the fixtures disagree, the
fixtures win).  Where this list and the code disagree, the code is wrong.  Read against
``IndexRocksDBRecord`` (apache/rocketmq f1e2594d), ``IndexRocksDBStore`` (14d35e95) and
``MessageRocksDBStorage`` (11845442; rule 11's "last record is a U record" is the later
revision 2872ab46 the fixtures were made with).

Layout (:mod:`._layout`)

1. **Key.** ``hour(storeTime)`` (8 bytes, big-endian) + UTF-8 of ``@topic@K@key@uniq@``
   (one per KEYS token), ``@topic@T@tags@uniq@`` (the whole TAGS value) or
   ``@topic@U@uniq@`` + the commit log offset (8 bytes).  Nothing is escaped: ``@`` inside
   a topic, key, tag or id is written as is.  **Value**: the store time, 8 bytes.
2. **Hour.** ``MixAll.dealTimeToHourStamps``: ``t - t % 3,600,000``; ``t <= 0`` unchanged.
3. **Order.** The ``default`` family keeps RocksDB's bytewise comparator.
4. **Bookkeeping.** ``lastOffsetPy`` and ``lastStoreTimeStamp`` (8-byte values) in the same
   family; absent reads as 0.  They sort after every record of a positive hour before the
   year 2,200,000 (first byte ``l``).

buildIndex (:func:`records_for_message`, checked in this order, each ending the message)

5. ``offset < 0`` or ``msgSize <= 0``: dropped (RocketMQ logs an error).
6. ``offset < lastOffsetPy`` as stored now: dropped silently (a replay after a restart); an
   equal offset is indexed.
7. ``sysFlag & 0xC == 0xC`` (rollback): dropped; prepared, commit and plain are indexed.
8. Empty or null topic, empty or null uniq key, or ``storeTime <= 0``: dropped.
9. Records: one ``K`` per distinct non-empty token of ``KEYS.split(" ")`` (only the single
   space separates: TAB is part of a key); one ``T`` with the whole TAGS value when present
   and non-empty; always last one ``U``.

writeRecordsForIndex (one write batch per message here, see rule 12)

10. A record whose ``hour(storeTime) <= 0`` (before 1970-01-01T01:00Z) is skipped; the
    others are put (an identical key is overwritten: the later store time wins).
11. When the batch's last record is a ``U`` record: ``lastOffsetPy := offset`` if larger
    than the stored value, ``lastStoreTimeStamp := storeTime`` if larger — from that
    record's message only.  So offset 0 never creates ``lastOffsetPy``, and a 1970 store
    time writes no record but still moves ``lastOffsetPy``.
12. The broker's thread cuts batches by timing; for a CommitLog dispatched in order
    (offsets and store times increasing) one batch per message gives the same database.

queryOffset (:func:`rmqarrow.rocksdb._walk.query_offset`)

13. **null** when topic or key is empty, ``maxNum <= 0``, ``begin < 0``, ``end <= 0``,
    ``begin > end``, or a non-empty ``indexType`` other than ``K``, ``T``, ``U``.
14. ``begin == 0`` or ``end == Long.MAX_VALUE``: the window becomes ``[now - days, now]``.
15. **null** when ``end - begin > maxRocksDBIndexQueryDays`` days (exactly that is allowed).
16. ``maxNum = min(maxNum, maxMsgsNumBatch)``.
17. Empty or null ``indexType``: search ``K`` without ``lastKey``; when that finds nothing,
    search ``U``.  Otherwise search ``indexType`` with ``lastKey``.
18. The answer carries ``lastStoreTimeStamp`` and ``lastOffsetPy`` as stored; a bookkeeping
    value shorter than 8 bytes fails the read: the offsets list is then null and the
    values read so far (0 for the rest) are returned.

queryOffsetForIndex (one search)

19. Hours ``hour(begin), hour(begin) + 1 h, ..., hour(end)``, in order.
20. In each hour, seek ``hour + "@topic@TYPE@key@"`` and read forward until the first key
    that does not start with it (a byte prefix: key ``order`` also finds ``order@1``).
21. A record counts when its store time is in ``[begin, end]``; a value shorter than 8
    bytes is skipped; the offset is the key's last 8 bytes.  Stop at ``maxNum`` offsets.
22. ``lastKey`` (``hour@topic@TYPE@key@uniq@offset``) is split as Java's ``String.split``
    (trailing empty parts dropped).  Its first part must parse as ``Long.valueOf`` (sign,
    decimal digits of any script) to a positive whole hour, else the list is **null**.
23. Hours before the lastKey's hour are skipped.  In that hour the scan starts at the key
    rebuilt from the lastKey (``hour + "@" + parts 1-4 joined by "@" + "@" + offset``) and
    skips a key exactly equal to it; if the lastKey does not have exactly 6 parts or its
    offset is not a long, the list is **null** (only when the walk reaches that hour).
    The rebuilt key is only a seek target: naming another key, the scan starts where that
    sorts and ends at the first key outside the prefix.

Expiry

24. ``deleteRecordsForIndex(storeTime, hours)``: nothing when ``storeTime < 0`` or
    ``hours <= 0``; ``end = hour(storeTime)``, ``start = end - hours h``; one
    ``DeleteRange [start + "@", end + "@" + 512 x 0xFF)``; RocksDB refuses a range whose
    start sorts after its end (a negative start): nothing is deleted.  Bookkeeping stays.
25. ``deleteExpiredIndex``: ``deleteRecordsForIndex(hour(creation(earliest CommitLog file)
    - 1 h), 168)``, only when that hour differs from the previous call's.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqarrow.rocksdb._layout import (
    HOUR_MS,
    KEY_SPLIT,
    TYPE_KEY,
    TYPE_TAG,
    TYPE_UNIQUE,
    hour_of,
    java_utf8,
    long_bytes,
    middle_text,
)

__all__ = [
    "ROLLBACK",
    "IndexRecord",
    "get_hours",
    "java_parse_long",
    "java_split",
    "last_key_hour",
    "last_key_to_bytes",
    "records_for_message",
]

ROLLBACK = 0xC
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class IndexRecord:
    """One record ``buildIndex`` queues: its type, middle text, offset and store time."""

    index_type: str
    middle: str
    offset: int
    store_time: int


def java_split(text: str) -> list[str]:
    """``text.split("@")`` as Java does it: trailing empty parts dropped."""
    parts = text.split(KEY_SPLIT)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_parse_long(text: str) -> int | None:
    """``Long.parseLong``: an optional sign then decimal digits (any script's, one UTF-16
    unit each); None where Java throws (empty, other characters, overflow)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not all(c.isdecimal() and ord(c) < 0x10000 for c in body):
        return None
    value = int("".join(str(int(c)) for c in body))
    value = -value if text[:1] == "-" else value
    return value if _LONG_MIN <= value <= _LONG_MAX else None


def get_hours(begin: int, end: int) -> list[int]:
    """``MixAll.getHours``: every hour from ``hour(begin)`` to ``hour(end)``."""
    first, last = hour_of(begin), hour_of(end)
    return list(range(first, last + 1, HOUR_MS)) if first <= last else []


def last_key_hour(last_key: str) -> int | None:
    """The lastKey's hour (its first part as a long), None when it does not parse."""
    parts = java_split(last_key)
    return java_parse_long(parts[0]) if parts else None


def last_key_to_bytes(last_key: str) -> bytes | None:
    """The seek key rebuilt from a lastKey, None when it has not 6 parts or bad numbers."""
    parts = java_split(last_key)
    if len(parts) != 6:
        return None
    hour, offset = java_parse_long(parts[0]), java_parse_long(parts[5])
    if hour is None or offset is None:
        return None
    middle = "".join(KEY_SPLIT + p for p in parts[1:5]) + KEY_SPLIT
    return long_bytes(hour) + java_utf8(middle) + long_bytes(offset)


def records_for_message(
    topic: str | None,
    keys: str | None,
    tags: str | None,
    uniq_key: str | None,
    offset: int,
    store_time: int,
    sys_flag: int,
    msg_size: int,
    last_offset_py: int,
) -> list[IndexRecord] | None:
    """What ``buildIndex`` queues for one message (rules 5-9); None when it drops it."""
    if offset < 0 or msg_size <= 0:
        return None
    if offset < last_offset_py:
        return None
    if sys_flag & ROLLBACK == ROLLBACK:
        return None
    if not topic or not uniq_key or store_time <= 0:
        return None
    out: list[IndexRecord] = []
    if keys:
        for token in dict.fromkeys(t for t in keys.split(" ") if t):
            out.append(
                IndexRecord(
                    TYPE_KEY, middle_text(topic, TYPE_KEY, token, uniq_key), offset, store_time
                )
            )
    if tags:
        out.append(
            IndexRecord(TYPE_TAG, middle_text(topic, TYPE_TAG, tags, uniq_key), offset, store_time)
        )
    out.append(
        IndexRecord(
            TYPE_UNIQUE, middle_text(topic, TYPE_UNIQUE, None, uniq_key), offset, store_time
        )
    )
    return out
