"""``queryOffset`` over any sorted key source: the one implementation of the walk.

The native reader runs it over the RocksDB iterator; tests run it over a golden
``pairs.tsv``; the SQL engines reproduce its search in SQL and reuse everything around it
(parameter checks, the type fallback, lastKey parsing, the bookkeeping values).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import QueryOffsetResult
from rmqarrow.rocksdb._layout import (
    INDEX_TYPES,
    LAST_OFFSET_PY,
    LAST_STORE_TIMESTAMP,
    LONG,
    TYPE_KEY,
    TYPE_UNIQUE,
    be_long,
    record_prefix,
)
from rmqarrow.rocksdb._rules import get_hours, last_key_hour, last_key_to_bytes

__all__ = [
    "DAY_MS",
    "KeySource",
    "QueryOffsetResult",
    "RocksDBQuery",
    "Search",
    "bookkeeping",
    "query_offset",
    "search",
    "search_plan",
]

DAY_MS = 86_400_000


class KeySource(Protocol):
    """A column family read in RocksDB order."""

    def seek(self, key: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Pairs from the first key ``>= key`` onward."""
        ...

    def get(self, key: bytes) -> bytes | None: ...


@dataclass(frozen=True)
class RocksDBQuery:
    """One ``queryOffset`` call; ``index_type`` None or "" is an older client's."""

    topic: str
    key: str
    max_num: int
    begin: int
    end: int
    index_type: str | None = None
    last_key: str | None = None


@dataclass(frozen=True)
class Search:
    """One ``queryOffsetForIndex``, planned: the hours walked, the lastKey's hour and seek
    key (None without a lastKey), or ``null`` when RocketMQ returns a null list at once."""

    topic: str
    index_type: str
    key: str
    begin: int
    end: int
    max_num: int
    hours: list[int]
    last_hour: int | None
    seek_key: bytes | None
    null: bool = False

    def prefix(self, hour: int) -> bytes:
        return record_prefix(hour, self.topic, self.index_type, self.key)


def search_plan(
    topic: str, index_type: str, key: str, begin: int, end: int, max_num: int, last_key: str | None
) -> Search:
    """The hours and seek of one search (rules 19, 22, 23); the null cases decided here."""
    hours = get_hours(begin, end)
    last_hour: int | None = None
    seek: bytes | None = None
    null = not hours
    if last_key:
        last_hour = last_key_hour(last_key)
        if last_hour is None or last_hour <= 0 or last_hour % 3_600_000 != 0:
            null = True
        else:
            hours = [h for h in hours if h >= last_hour]
            seek = last_key_to_bytes(last_key)
            if seek is None and last_hour in hours:
                null = True  # the walk reaches the lastKey's hour and cannot rebuild it
    return Search(topic, index_type, key, begin, end, max_num, hours, last_hour, seek, null)


def search(src: KeySource, plan: Search) -> list[int] | None:
    """``queryOffsetForIndex`` over ``src``: offsets in RocketMQ's order, or None."""
    if plan.null:
        return None
    out: list[int] = []
    for hour in plan.hours:
        prefix = plan.prefix(hour)
        skip = plan.seek_key if hour == plan.last_hour else None
        for k, v in src.seek(skip if skip is not None else prefix):
            if not k:
                break
            if skip is not None and k == skip:
                continue
            if not k.startswith(prefix):
                break
            if len(v) < LONG.size:
                continue  # RocketMQ's getLong throws; the loop logs and goes on
            if plan.begin <= be_long(v) <= plan.end:
                out.append(be_long(k[-LONG.size :]))
                if len(out) >= plan.max_num:
                    return out
    return out


def bookkeeping(get: Callable[[bytes], bytes | None]) -> tuple[int | None, int | None]:
    """``(lastStoreTimeStamp, lastOffsetPy)``: 0 when absent, None when unreadable."""
    values: list[int | None] = []
    for name in (LAST_STORE_TIMESTAMP, LAST_OFFSET_PY):
        raw = get(name)
        values.append(0 if raw is None else be_long(raw) if len(raw) >= LONG.size else None)
    return values[0], values[1]


def _checked(q: RocksDBQuery, max_query_days: int, now: int | None) -> tuple[int, int] | None:
    """The window after rules 13-15, or None where RocketMQ returns null."""
    begin, end = q.begin, q.end
    if (
        not q.topic
        or not q.key
        or q.max_num <= 0
        or begin < 0
        or end <= 0
        or begin > end
        or (q.index_type and q.index_type not in INDEX_TYPES)
    ):
        return None
    if begin == 0 or end == JAVA_LONG_MAX:
        end = int(time.time() * 1000) if now is None else now
        begin = end - max_query_days * DAY_MS
    if end - begin > max_query_days * DAY_MS:
        return None
    return begin, end


def query_offset(
    q: RocksDBQuery,
    get: Callable[[bytes], bytes | None],
    run: Callable[[Search], list[int] | None],
    *,
    max_msgs_num_batch: int,
    max_query_days: int,
    now: int | None = None,
) -> QueryOffsetResult | None:
    """``IndexRocksDBStore.queryOffset`` with ``run`` doing each search (rules 13-18)."""
    window = _checked(q, max_query_days, now)
    if window is None:
        return None
    begin, end = window
    max_num = min(q.max_num, max_msgs_num_batch)
    last_ts, last_off = bookkeeping(get)
    if last_ts is None or last_off is None:  # Java's unboxing fails inside its try
        return QueryOffsetResult(None, last_ts or 0, 0)
    if not q.index_type:
        found = run(search_plan(q.topic, TYPE_KEY, q.key, begin, end, max_num, None))
        if not found:
            found = run(search_plan(q.topic, TYPE_UNIQUE, q.key, begin, end, max_num, None))
    else:
        found = run(search_plan(q.topic, q.index_type, q.key, begin, end, max_num, q.last_key))
    return QueryOffsetResult(found, last_ts, last_off)


def answer_batched(
    queries: list[RocksDBQuery],
    get: Callable[[bytes], bytes | None],
    run_many: Callable[[list[Search]], list[list[int]]],
    *,
    max_msgs_num_batch: int,
    max_query_days: int,
    now: int | None = None,
) -> list[QueryOffsetResult | None]:
    """:func:`query_offset` for many queries, the searches run in two batches by
    ``run_many`` (an engine's SQL): every first search, then the ``U`` fallbacks of the
    untyped queries that found nothing.  ``run_many`` gets only plans that are not null."""
    last_ts, last_off = bookkeeping(get)
    out: list[QueryOffsetResult | None] = [None] * len(queries)
    firsts: dict[int, Search] = {}
    windows: dict[int, tuple[int, int, int]] = {}
    for i, q in enumerate(queries):
        window = _checked(q, max_query_days, now)
        if window is None:
            continue
        if last_ts is None or last_off is None:
            out[i] = QueryOffsetResult(None, last_ts or 0, 0)
            continue
        max_num = min(q.max_num, max_msgs_num_batch)
        windows[i] = (window[0], window[1], max_num)
        if q.index_type:
            firsts[i] = search_plan(q.topic, q.index_type, q.key, *window, max_num, q.last_key)
        else:
            firsts[i] = search_plan(q.topic, TYPE_KEY, q.key, *window, max_num, None)
    found = _run(firsts, run_many)
    fallbacks = {
        i: search_plan(queries[i].topic, TYPE_UNIQUE, queries[i].key, *windows[i], None)
        for i in firsts
        if not queries[i].index_type and not found[i]
    }
    found.update(_run(fallbacks, run_many))
    for i, offsets in found.items():
        out[i] = QueryOffsetResult(offsets, last_ts or 0, last_off or 0)
    return out


def _run(
    plans: dict[int, Search], run_many: Callable[[list[Search]], list[list[int]]]
) -> dict[int, list[int] | None]:
    live = [i for i, p in plans.items() if not p.null and p.hours]
    results = run_many([plans[i] for i in live]) if live else []
    found: dict[int, list[int] | None] = {i: (None if p.null else []) for i, p in plans.items()}
    found.update(zip(live, results, strict=True))
    return found
