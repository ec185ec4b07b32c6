"""Answers as Arrow: one row per hit, the shape ``query_many`` returns for every kind."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from rmqarrow._vocab import Format
from rmqarrow.errors import (
    InvalidValueError,
    TieredReadError,
    UnsupportedOperationError,
    UsageError,
)
from rmqarrow.format.hashing import check_query_key
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query, read_queries_tsv
from rmqarrow.format.queries import as_queries as _as_queries
from rmqarrow.format.query_file import read_query_file
from rmqarrow.format.records import query_index_key
from rmqarrow.format.times import TimeBound, check_range, time_range
from rmqarrow.store._base import DEFAULT_MAX_NUM, Store, check_max_num
from rmqarrow.store._results import (
    LookupRequest,
    OffsetLookup,
    ResolvedHits,
    TieredLookup,
    refuse,
)
from rmqarrow.tiered import TieredAnswer, TieredQuery, as_tiered_queries

__all__ = [
    "ItemQueries",
    "OffsetQueries",
    "as_queries",
    "hits_table",
    "items_table",
    "read_tiered_query_file",
    "split_tiered_key",
    "topic_and_key",
]


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


def items_table(queries: Sequence[TieredQuery], answers: Sequence[TieredAnswer]) -> pa.Table:
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
        items: list[Any] = [None] if isinstance(a, TieredReadError) else list(a)
        for item in items:
            rows["query"].append(i)
            rows["topic"].append(q.topic)
            rows["key"].append(q.key)
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

    def _lookup(self, request: LookupRequest) -> OffsetLookup:
        r = request
        if r.last_key is not None:
            refuse("last_key", "is for the RocksDB index (open it with index=rocksdb)")
        if r.exact:
            refuse(
                "exact",
                "is for the tiered index, whose answers RocketMQ caps; an IndexFile "
                "query's answer is bounded by max_num= alone: raise it for more",
            )
        if r.topic is not None and r.queries is not None:
            refuse("topic", "goes with key=; queries= lines hold full index keys")
        if r.max_num < 0:
            refuse("max_num", f"must be >= 0, got {r.max_num}")
        if r.explain and r.engine not in (None, "native"):
            refuse("explain", "traces the native lookup; drop engine=")
        if r.resolve is not None and r.queries is not None:
            refuse("resolve", "works with key=, not queries=")
        self._check_lookup(r)
        queries, batch = _offset_queries(r)
        answers = self.answers(queries, engine=r.engine, master=r.master)
        explained = self._explained(queries, r) if r.explain else []
        resolved = None
        if r.resolve is not None:
            resolved = self._resolved(r, queries[0], answers[0])
        return OffsetLookup(queries, answers, batch, r.explain, explained, resolved)

    def _check_lookup(self, request: LookupRequest) -> None:
        """What this kind refuses of a lookup beyond the format's rules (nothing here)."""

    def _explained(self, queries: list[Query], request: LookupRequest) -> list[str]:
        """Why the native lookup answered each query (IndexFiles only)."""
        raise UnsupportedOperationError(
            f"{self.path}: explain= traces the native lookup over index files"
        )

    def _resolved(self, request: LookupRequest, q: Query, offsets: list[int]) -> ResolvedHits:
        """The hits read back from the CommitLog (IndexFiles only)."""
        refuse("resolve", "reads hits back from the CommitLog of a store")


def topic_and_key(topic: str | None, key: str) -> tuple[str, str, bool]:
    """The topic and key a lookup names: ``topic`` and ``key``, or a full key TOPIC#KEY
    split at its first '#' (topics hold none); and whether a topic was found at all."""
    if topic is not None:
        return topic, key, True
    topic, sep, rest = key.partition("#")
    return topic, rest, bool(sep)


def _typed(q: Query, topic: str | None, index_type: str | None) -> Query:
    """``q`` with its key made the index key of ``index_type``."""
    if topic is None and index_type is None:
        return q
    topic, key, found = topic_and_key(topic, q.key)
    if not found:
        raise UsageError(
            f"index_type={index_type}: {q.key!r} has no '#'; give topic=TOPIC or the key as "
            "TOPIC#KEY"
        )
    return Query(query_index_key(topic, key, index_type), q.max_num, q.begin, q.end)


def _offset_queries(r: LookupRequest) -> tuple[list[Query], bool]:
    """A lookup's queries for the index format, and whether they came from a file."""
    if r.begin > r.end:
        # as RocketMQ answers it, empty: refused, as it would silently find nothing
        raise UsageError(f"begin={r.begin} is after end={r.end}: the range is empty")
    if r.queries is not None:
        queries = read_query_file(
            r.queries, max_num=r.max_num, begin=r.begin, end=r.end, escaped=r.escaped
        )
        return [_typed(q, None, r.index_type) for q in queries], True
    assert r.key is not None  # the request holds one or the other
    if r.key == "":
        refuse("key", "is empty")
    return [_typed(Query(r.key, r.max_num, r.begin, r.end), r.topic, r.index_type)], False


class ItemQueries(Store):
    """``query`` and ``query_many`` of the tiered kinds, from their ``answers``."""

    format = Format.TIERED

    def answers(
        self,
        queries: Sequence[Any],
        *,
        engine: str | None = None,
        exact: bool = False,
        master: str | None = None,
    ) -> list[TieredAnswer]:
        """Per :class:`~rmqarrow.tiered.TieredQuery` (or ``(topic, key, max_count, begin,
        end)``): the items, or RocketMQ's read error."""
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
            [TieredQuery(topic, key, check_max_num(max_num), b, e)], engine=engine, exact=exact
        )[0]
        if isinstance(answer, TieredReadError):
            raise answer
        return list(answer)

    def query_many(
        self, queries: Sequence[Any], *, engine: str | None = None, exact: bool = False
    ) -> pa.Table:
        """One row per item (or per failing query, with ``error``); a ``begin`` or ``end``
        in epoch seconds is refused naming the query, as :meth:`query` refuses it."""
        given = [tuple(q) for q in queries]
        for i, q in enumerate(given):
            if len(q) > 3:  # a short tuple is refused below, naming what it lacks
                b, e = q[3], q[4] if len(q) > 4 else JAVA_LONG_MAX
                bounds = time_range(b, e, (f"query {i}: begin", f"query {i}: end"))
                given[i] = (*q[:3], *bounds[: len(q[3:5])], *q[5:])
        qs = as_tiered_queries(given)
        return items_table(qs, self.answers(qs, engine=engine, exact=exact))

    def _lookup(self, request: LookupRequest) -> TieredLookup:
        r = request
        if r.last_key is not None:
            refuse("last_key", "is for the RocksDB index (open it with index=rocksdb)")
        if r.index_type is not None:
            refuse("index_type", "is for the RocksDB index and index files")
        if r.resolve is not None:
            refuse(
                "resolve",
                "reads the classic CommitLog; tiered items hold offsets in the queue's "
                "tiered commit log, which rmqarrow does not read",
            )
        if r.explain:
            refuse("explain", "traces the lookups of index files and the RocksDB index")
        if r.topic is not None and r.queries is not None:
            refuse("topic", "goes with key=; queries= lines hold full keys topic#key")
        self._check_lookup(r)
        queries, batch = _tiered_queries(r)
        answers = self.answers(queries, engine=r.engine, exact=r.exact, master=r.master)
        if batch:
            return TieredLookup(queries, answers, batch, r.exact)
        answer = answers[0]
        if isinstance(answer, TieredReadError):
            raise answer
        return self._with_notes(TieredLookup(queries, answers, batch, r.exact), r)

    def _check_lookup(self, request: LookupRequest) -> None:
        """What this kind refuses of a lookup beyond the format's rules (nothing here)."""

    def _with_notes(self, lookup: TieredLookup, request: LookupRequest) -> TieredLookup:
        """One answer with what the files themselves add (the local files' kind)."""
        return lookup


def split_tiered_key(full: str) -> tuple[str, str]:
    """``topic#key`` as ``(topic, key)``; a key without ``#`` is refused."""
    topic, sep, key = full.partition("#")
    if not sep:
        raise UsageError(f"tiered index keys are topic#key (or topic= with key=); got {full!r}")
    return topic, key


def read_tiered_query_file(path: str | os.PathLike[str], *, escaped: bool = False) -> list[Query]:
    """The queries of a tiered query file: every line ``key<TAB>max_num<TAB>begin<TAB>end``
    with full keys ``topic#key``; a malformed one refused saying so."""
    try:
        return read_queries_tsv(path, escaped=escaped)
    except InvalidValueError as exc:
        # an IndexFile query file's short lines and header line are not read here: say so
        raise InvalidValueError(
            f"{exc}; a query file for tiered files gives all four fields on every line, the "
            "key as TOPIC#KEY, with no header line"
        ) from None


def _tiered_queries(r: LookupRequest) -> tuple[list[TieredQuery], bool]:
    """A lookup's queries for the tiered format, and whether they came from a file."""
    if r.queries is not None:
        qs = read_tiered_query_file(r.queries, escaped=r.escaped)
        return [TieredQuery(*split_tiered_key(q.key), q.max_num, q.begin, q.end) for q in qs], True
    assert r.key is not None  # the request holds one or the other
    topic, key = (r.topic, r.key) if r.topic is not None else split_tiered_key(r.key)
    return [TieredQuery(topic, key, r.max_num, r.begin, r.end)], False
