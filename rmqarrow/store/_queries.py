"""Answers as Arrow: one row per hit, the shape ``query_many`` returns for every kind."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from rmqarrow._vocab import Format
from rmqarrow.errors import TieredReadError
from rmqarrow.format.hashing import check_query_key
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query
from rmqarrow.format.queries import as_queries as _as_queries
from rmqarrow.format.records import query_index_key
from rmqarrow.format.times import TimeBound, check_range, time_range
from rmqarrow.store._base import DEFAULT_MAX_NUM, Store, check_max_num

__all__ = ["ItemQueries", "OffsetQueries", "as_queries", "hits_table", "items_table"]


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


def as_queries(queries: Sequence[Any]) -> list[Query]:
    """The queries given to a store (:func:`rmqarrow.format.queries.as_queries`); a tuple
    whose begin is after its end is refused as :meth:`OffsetQueries.query` refuses it.  A
    :class:`~rmqarrow.Query` (a query file's line, a conformance set) is answered as
    RocketMQ answers it, empty: query files hold such ranges to test exactly that."""
    qs = _as_queries(queries)
    for i, (given, q) in enumerate(zip(queries, qs, strict=True)):
        if not isinstance(given, Query):
            check_range(q.begin, q.end, (f"query {i}: begin", f"query {i}: end"))
    return qs


class OffsetQueries(Store):
    """``query`` and ``query_many`` of the index-format kinds, from their ``answers``."""

    def answers(
        self, queries: Sequence[Any], *, engine: str | None = None, master: str | None = None
    ) -> list[list[int]]:
        """The answer of each query (:class:`~rmqarrow.Query` or ``(key, max_num[, begin,
        end])``) as a list of commit-log offsets, through ``engine``."""
        raise NotImplementedError

    def query(
        self,
        topic: str,
        key: str,
        *,
        begin: TimeBound = 0,
        end: TimeBound = JAVA_LONG_MAX,
        max_num: int = DEFAULT_MAX_NUM,
        engine: str | None = None,
        index_type: str | None = None,
    ) -> list[int]:
        """The commit-log offsets of ``topic#key`` stored in ``[begin, end]``, RocketMQ's
        answer (newest file first, newest entry first), at most ``max_num``;
        ``index_type="T"`` looks the tags ``key`` up instead (``topic#T#key``, written by
        5.4 and later), as the broker's query with that index type does.

        ``begin`` and ``end`` take what the command line's ``--begin``/``--end`` take:
        epoch milliseconds (an int or a numpy integer), an ISO 8601 string, or a
        ``datetime`` (aware as given; naive in the local zone, as the command line reads a
        time without a zone; a local time skipped by a DST change is refused).  A value
        that reads as epoch seconds (10^8 to 10^11, e.g. ``1_700_000_000``) is refused with
        :class:`~rmqarrow.errors.InvalidValueError` naming the ms value (it would silently
        match nothing), and so is a ``begin`` after ``end``.  A key holding a space gets a
        note when nothing is found: RocketMQ splits KEYS on spaces."""
        topic, key = check_query_key(topic, "topic"), check_query_key(key)
        b, e = time_range(begin, end)
        q = Query(query_index_key(topic, key, index_type), check_max_num(max_num), b, e)
        return self.answers([q], engine=engine)[0]

    def query_many(
        self, queries: Sequence[Any], *, engine: str | None = None, master: str | None = None
    ) -> pa.Table:
        """One row per hit: ``query`` (position in ``queries``), ``key``, ``phy_offset``."""
        qs = as_queries(queries)
        return hits_table(qs, self.answers(qs, engine=engine, master=master))


class ItemQueries(Store):
    """``query`` and ``query_many`` of the tiered kinds, from their ``answers``."""

    format = Format.TIERED

    def answers(
        self,
        queries: Sequence[tuple[Any, ...]],
        *,
        engine: str | None = None,
        exact: bool = False,
        master: str | None = None,
    ) -> list[Any]:
        """Per ``(topic, key, max_count, begin, end)``: the items, or RocketMQ's read error."""
        raise NotImplementedError

    def query(
        self,
        topic: str,
        key: str,
        *,
        begin: TimeBound = 0,
        end: TimeBound = JAVA_LONG_MAX,
        max_num: int = DEFAULT_MAX_NUM,
        engine: str | None = None,
        exact: bool = False,
    ) -> list[Any]:
        """The items RocketMQ returns for ``topic``/``key`` (``exact``: every match); a read
        RocketMQ fails raises :class:`~rmqarrow.errors.TieredReadError`.  ``begin`` and
        ``end`` take what the command line takes (see :meth:`OffsetQueries.query`)."""
        b, e = time_range(begin, end)
        answer = self.answers(
            [(topic, key, check_max_num(max_num), b, e)], engine=engine, exact=exact
        )[0]
        if isinstance(answer, TieredReadError):
            raise answer
        return list(answer)

    def query_many(
        self, queries: Sequence[Any], *, engine: str | None = None, exact: bool = False
    ) -> pa.Table:
        """One row per item (or per failing query, with ``error``); a ``begin`` or ``end``
        in epoch seconds is refused naming the query, as :meth:`query` refuses it."""
        qs = [tuple(q) for q in queries]
        for i, q in enumerate(qs):
            if len(q) > 3:  # a short tuple is refused below, naming what it lacks
                b, e = q[3], q[4] if len(q) > 4 else JAVA_LONG_MAX
                bounds = time_range(b, e, (f"query {i}: begin", f"query {i}: end"))
                qs[i] = (*q[:3], *bounds[: len(q[3:5])], *q[5:])
        return items_table(qs, self.answers(qs, engine=engine, exact=exact))
