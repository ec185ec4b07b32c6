"""Why ``queryOffset`` answered what it did: the checks, the window, the cap, the type
fallback, and per hour of the walk whether the bucket exists and what its prefix held."""

from __future__ import annotations

import time

from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.rocksdb._layout import INDEX_TYPES, LONG, TYPE_KEY, TYPE_UNIQUE, be_long, long_bytes
from rmqarrow.rocksdb._walk import DAY_MS, KeySource, RocksDBQuery, Search, search, search_plan

__all__ = ["explain_query"]

_HOURS_SHOWN = 6


def _refusal(q: RocksDBQuery) -> str | None:
    checks = (
        (not q.topic, "the topic is empty"),
        (not q.key, "the key is empty"),
        (q.max_num <= 0, f"maxNum {q.max_num} <= 0"),
        (q.begin < 0, f"begin {q.begin} < 0"),
        (q.end <= 0, f"end {q.end} <= 0"),
        (q.begin > q.end, f"begin {q.begin} is after end {q.end}"),
        (
            bool(q.index_type) and q.index_type not in INDEX_TYPES,
            f"index type {q.index_type!r} is none of K, T, U",
        ),
    )
    for failed, why in checks:
        if failed:
            return f"RocketMQ returns null: {why}"
    return None


def _search_lines(src: KeySource, plan: Search) -> list[str]:
    label = f"type {plan.index_type}, key {plan.key!r}"
    if plan.null:
        return [
            f"{label}: RocketMQ returns a null list: the lastKey's hour does not parse "
            "as a positive whole hour, or the lastKey does not rebuild (6 '@' parts, "
            "numeric hour and offset)"
        ]
    if not plan.hours:
        return [f"{label}: no hour to walk (the lastKey's hour is after the window)"]
    found = search(src, plan) or []
    lines = [
        f"{label}: {len(found)} offsets over {len(plan.hours)} hour buckets "
        f"{plan.hours[0]}..{plan.hours[-1]} (cap {plan.max_num})"
    ]
    shown = 0
    for hour in plan.hours:
        bucket = next(iter(src.seek(long_bytes(hour))), None)
        exists = bucket is not None and bucket[0][: LONG.size] == long_bytes(hour)
        prefix = plan.prefix(hour)
        matching = in_window = 0
        for k, v in src.seek(prefix):
            if not k.startswith(prefix):
                break
            matching += 1
            in_window += len(v) >= LONG.size and plan.begin <= be_long(v) <= plan.end
        if shown < _HOURS_SHOWN and (matching or not found):
            state = (
                "no such bucket"
                if not exists
                else f"{matching} keys with the prefix, {in_window} stored in the window"
            )
            lines.append(f"  hour {hour}: {state}")
            shown += 1
    if plan.last_hour is not None:
        lines.append(
            f"  paged after lastKey's hour {plan.last_hour}: earlier hours skipped, "
            "and in that hour the scan starts after the rebuilt key and stops at the "
            "first key outside the prefix"
        )
    if len(found) >= plan.max_num:
        lines.append(
            f"  stopped at the cap {plan.max_num}: results come by hour, then by "
            "key bytes (message id), not by time"
        )
    return lines


def explain_query(
    src: KeySource,
    q: RocksDBQuery,
    *,
    max_msgs_num_batch: int,
    max_query_days: int,
    now: int | None = None,
) -> list[str]:
    """Lines saying how RocketMQ answers ``q`` on ``src``."""
    refused = _refusal(q)
    if refused:
        return [refused]
    begin, end = q.begin, q.end
    lines = []
    if begin == 0 or end == JAVA_LONG_MAX:
        end = int(time.time() * 1000) if now is None else now
        begin = end - max_query_days * DAY_MS
        lines.append(
            f"begin 0 or end Long.MAX_VALUE: the window becomes the last "
            f"{max_query_days} days by the wall clock, {begin}..{end}"
        )
    if end - begin > max_query_days * DAY_MS:
        return [
            *lines,
            f"RocketMQ returns null: the window is {(end - begin) / DAY_MS:.3f} "
            f"days, longer than maxRocksDBIndexQueryDays {max_query_days}",
        ]
    max_num = min(q.max_num, max_msgs_num_batch)
    if max_num < q.max_num:
        lines.append(f"maxNum {q.max_num} capped to maxMsgsNumBatch {max_msgs_num_batch}")
    if q.index_type:
        lines += _search_lines(
            src, search_plan(q.topic, q.index_type, q.key, begin, end, max_num, q.last_key)
        )
        return lines
    lines.append(
        "no index type (an older client): K is searched, then U when K finds "
        "nothing; a lastKey is ignored"
    )
    first = search_plan(q.topic, TYPE_KEY, q.key, begin, end, max_num, None)
    lines += _search_lines(src, first)
    if not search(src, first):
        lines += _search_lines(
            src, search_plan(q.topic, TYPE_UNIQUE, q.key, begin, end, max_num, None)
        )
    return lines
