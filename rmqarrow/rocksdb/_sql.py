"""The search of ``queryOffsetForIndex`` in SQL, for every engine that speaks it.

What SQL does: the hours walked, the byte-prefix match (a range on the raw key bytes after
the hour, ``key_tail``, which is exactly "starts with"), the store-time window, RocketMQ's
order (hour, then key bytes), the cap (``ROW_NUMBER() <= maxNum``) and the lastKey page:
in the lastKey's hour only keys after the rebuilt seek key count, and none at all when the
first key after it lies outside the prefix (RocketMQ's scan stops there).

What Python does around it (:func:`rmqarrow.rocksdb._walk.answer_batched`), because SQL
cannot express it exactly: the null cases and parameter checks, the wall-clock window,
``Long.valueOf``/``String.split`` on the lastKey (Java accepts digits of every script),
rebuilding the seek key, the ``K`` -> ``U`` fallback and the bookkeeping values.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from rmqarrow.rocksdb._layout import HOUR_MS, LONG, java_utf8, long_bytes
from rmqarrow.rocksdb._walk import Search

__all__ = [
    "SEARCHES_SCHEMA",
    "bookkeeping_getter",
    "search_sql",
    "searches_table",
    "split_hits",
]

SEARCHES_SCHEMA = pa.schema(
    [
        ("sid", pa.int64()),
        ("h_lo", pa.int64()),
        ("h_hi", pa.int64()),
        ("mid", pa.binary()),
        ("mid_succ", pa.binary()),
        ("t_begin", pa.int64()),
        ("t_end", pa.int64()),
        ("max_num", pa.int64()),
        ("lh", pa.int64()),
        ("seek_tail", pa.binary()),
    ]
)


def searches_table(plans: list[Search]) -> pa.Table:
    """One row per search: hours, prefix range, window, cap, and the lastKey's hour and
    seek (null unless the walk reaches that hour)."""
    rows: dict[str, list[object]] = {f.name: [] for f in SEARCHES_SCHEMA}
    for sid, p in enumerate(plans):
        mid = java_utf8(f"@{p.topic}@{p.index_type}@{p.key}@")
        paged = p.last_hour is not None and p.last_hour in p.hours and p.seek_key is not None
        for name, value in (
            ("sid", sid),
            ("h_lo", p.hours[0]),
            ("h_hi", p.hours[-1]),
            ("mid", mid),
            ("mid_succ", mid[:-1] + bytes([mid[-1] + 1])),  # the prefix ends with "@"
            ("t_begin", p.begin),
            ("t_end", p.end),
            ("max_num", p.max_num),
            ("lh", p.last_hour if paged else None),
            ("seek_tail", p.seek_key[LONG.size :] if paged and p.seek_key else None),
        ):
            rows[name].append(value)
    return pa.table(rows, schema=SEARCHES_SCHEMA)


def search_sql(records: str, searches: str, q: Callable[[str], str]) -> str:
    """The batched search over the ``records`` and ``searches`` tables (``q`` quotes a
    column name for the engine); rows ``(sid, phy_offset, rn)`` in RocketMQ's order."""
    off = q("offset")
    return f"""
WITH firsts AS (
  SELECT s.sid, MIN(r.key_tail) AS first_tail
  FROM {searches} s JOIN {records} r ON r.hour = s.lh AND r.key_tail > s.seek_tail
  GROUP BY s.sid
),
hits AS (
  SELECT s.sid, r.{off} AS phy_offset, s.max_num,
         ROW_NUMBER() OVER (PARTITION BY s.sid ORDER BY r.hour, r.key_tail) AS rn
  FROM {searches} s
  JOIN {records} r
    ON r.hour >= s.h_lo AND r.hour <= s.h_hi
   AND r.key_tail >= s.mid AND r.key_tail < s.mid_succ
  LEFT JOIN firsts f ON f.sid = s.sid
  WHERE r.hour % {HOUR_MS} = 0
    AND r.store_time >= s.t_begin AND r.store_time <= s.t_end
    AND (s.lh IS NULL OR r.hour <> s.lh OR
         (r.key_tail > s.seek_tail AND f.first_tail >= s.mid AND f.first_tail < s.mid_succ))
)
SELECT sid, phy_offset, rn FROM hits WHERE rn <= max_num ORDER BY sid, rn
"""


def split_hits(n: int, rows: list[tuple[int, int]]) -> list[list[int]]:
    """``(sid, offset)`` rows, ordered, into one offsets list per search."""
    out: list[list[int]] = [[] for _ in range(n)]
    for sid, offset in rows:
        out[sid].append(offset)
    return out


def bookkeeping_getter(table: pa.Table) -> Callable[[bytes], bytes | None]:
    """``get`` for :func:`~rmqarrow.rocksdb._walk.bookkeeping` over an exported
    ``rocksdb_bookkeeping`` table (a null value reads as unreadable, as its bytes were)."""
    values = {r["name"].encode(): r["value"] for r in table.to_pylist()}

    def get(name: bytes) -> bytes | None:
        if name not in values:
            return None
        v = values[name]
        return b"" if v is None else long_bytes(v)

    return get
