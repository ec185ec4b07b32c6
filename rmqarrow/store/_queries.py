"""Answers as Arrow: one row per hit, the shape ``query_many`` returns for every kind."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from rmqarrow.format.queries import Query, as_queries

__all__ = ["as_queries", "hits_table", "items_table"]


def hits_table(queries: Sequence[Query], answers: Sequence[Sequence[int]]) -> pa.Table:
    """``query`` (int32 position in ``queries``), ``key`` and ``phy_offset`` per hit, each
    query's hits in answer order."""
    counts = [len(a) for a in answers]
    query_ids = [i for i, n in enumerate(counts) for _ in range(n)]
    return pa.table(
        {
            "query": pa.array(query_ids, pa.int32()),
            "key": pa.array([queries[i].key for i in query_ids], pa.string()),
            "phy_offset": pa.array([o for a in answers for o in a], pa.int64()),
        }
    )


def items_table(queries: Sequence[tuple[Any, ...]], answers: Sequence[Any]) -> pa.Table:
    """For tiered answers: ``query``, ``topic``, ``key``, the item fields and ``error``
    (RocketMQ's read error for a query that fails, with no item rows)."""
    from rmqarrow.errors import TieredReadError

    rows: dict[str, list[Any]] = {
        c: []
        for c in (
            "query",
            "topic",
            "key",
            "queue_id",
            "offset",
            "size",
            "time_diff",
            "topic_id",
            "hash_code",
            "next_index",
            "error",
        )
    }
    for i, (q, a) in enumerate(zip(queries, answers, strict=True)):
        failed = isinstance(a, TieredReadError)
        for item in [None] if failed else a:
            rows["query"].append(i)
            rows["topic"].append(q[0])
            rows["key"].append(q[1])
            for name in (
                "queue_id",
                "offset",
                "size",
                "time_diff",
                "topic_id",
                "hash_code",
                "next_index",
            ):
                rows[name].append(None if item is None else getattr(item, name))
            rows["error"].append(str(a) if item is None else None)
    types = {
        "query": pa.int32(),
        "topic": pa.string(),
        "key": pa.string(),
        "queue_id": pa.int32(),
        "offset": pa.int64(),
        "size": pa.int32(),
        "time_diff": pa.int32(),
        "topic_id": pa.int32(),
        "hash_code": pa.int32(),
        "next_index": pa.int32(),
        "error": pa.string(),
    }
    return pa.table({c: pa.array(v, types[c]) for c, v in rows.items()})
