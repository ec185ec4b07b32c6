"""Many queries at once: bulk key hashing and a local chain walk vectorized across queries.

:func:`walk_local_many` advances every query's walk one step per numpy pass (at most 512
passes, or the chain length in exact mode), instead of one Python loop per query.  A chain
whose ``next`` does not strictly decrease (only in a damaged file: RocketMQ always links a
new item to an older one) could revisit items, so such a query is handed to the scalar
:func:`~rmqarrow.tiered._local_query.walk_local`, whose cycle rule (17) then applies.
Answers equal the scalar ones item for item (tests check it on every golden query).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Sequence

import numpy as np

from rmqarrow.kernels.hashing import index_key_hashes
from rmqarrow.tiered.layout.binary import HEADER_SIZE, ITEM_DTYPE, SLOT_SIZE, items_position

from ._args import check_int, check_long, check_text
from ._local_query import walk_local
from ._rules import MAX_WALK_STEPS, key_hash
from ._types import IndexItem, TieredQuery

__all__ = ["checked_queries", "key_hashes", "slot_positions", "walk_local_many"]


def key_hashes(topics: Sequence[str], keys: Sequence[str]) -> np.ndarray:
    """Rules 1-2 over many (topic, key) pairs, as int64 (``MIN_VALUE`` stays negative)."""
    texts = [f"{t}#{k}" for t, k in zip(topics, keys, strict=True)]
    if not texts:
        return np.empty(0, np.int64)
    h = index_key_hashes(texts).astype(np.int64)
    # the classic hash maps MIN_VALUE to 0; this index keeps it: recheck the zeros
    for i in np.flatnonzero(h == 0).tolist():
        h[i] = key_hash(topics[i], keys[i])
    return h


def slot_positions(hashes: np.ndarray, hash_slot_num: int) -> np.ndarray:
    """Rule 3 over many hashes: ``28 + 8 * (h % S)`` with Java's remainder."""
    slots = np.fmod(hashes, np.int64(hash_slot_num))  # fmod keeps the dividend's sign
    out: np.ndarray = HEADER_SIZE + SLOT_SIZE * slots
    return out


def checked_queries(queries: Iterable[Sequence[object]]) -> tuple[list[TieredQuery], np.ndarray]:
    """The queries checked as :meth:`query` checks them, and their hashes."""
    qs = []
    for q in queries:
        topic, key, max_count, begin, end = q
        qs.append(
            TieredQuery(
                check_text("topic", topic),
                check_text("key", key),
                check_int("max_count", max_count),
                check_long("begin", begin),
                check_long("end", end),
            )
        )
    return qs, key_hashes([q.topic for q in qs], [q.key for q in qs])


def walk_local_many(
    buf: mmap.mmap,
    geometry: tuple[int, int],
    file_begin: int,
    queries: list[TieredQuery],
    hashes: np.ndarray,
    exact: bool = False,
) -> list[list[IndexItem]]:
    """:func:`walk_local` for every query; ``geometry`` is ``(S, itemCount)``."""
    hash_slot_num, item_count = geometry
    n = len(queries)
    answers: list[list[IndexItem]] = [[] for _ in range(n)]
    if n == 0:
        return answers
    pos = slot_positions(hashes, hash_slot_num)
    readable = (pos >= 0) & (pos + 4 <= len(buf))
    words = np.frombuffer(buf, ">i4", len(buf) // 4)
    v = np.zeros(n, np.int64)
    v[readable] = np.maximum(words[pos[readable] // 4], 0)
    max_counts = np.array([q.max_count for q in queries], np.int64)
    begins = np.array([q.begin for q in queries], np.int64)
    ends = np.array([q.end for q in queries], np.int64)
    limit = np.maximum(max_counts, 0) + (0 if exact else 1)
    items = np.frombuffer(buf, ITEM_DTYPE, item_count + 1, items_position(hash_slot_num))
    item_hash = items["hash_code"].astype(np.int64)
    with np.errstate(over="ignore"):
        item_time = items["time_diff"].astype(np.int64) * np.int64(1000) + np.int64(file_begin)
    item_next = items["next_index"].astype(np.int64)
    found = np.zeros(n, np.int64)
    scalar = np.zeros(n, bool)
    active = (v > 0) & (v <= item_count) & (limit > 0)
    hit_q: list[np.ndarray] = []
    hit_v: list[np.ndarray] = []
    steps = item_count + 1 if exact else MAX_WALK_STEPS
    while steps > 0:
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        cur = v[idx]
        t = item_time[cur]
        m = (item_hash[cur] == hashes[idx]) & (t >= begins[idx]) & (t <= ends[idx])
        hit_q.append(idx[m])
        hit_v.append(cur[m])
        found[idx[m]] += 1
        nxt = item_next[cur]
        odd = (nxt >= cur) & (found[idx] < limit[idx])
        scalar[idx[odd]] = True
        v[idx] = nxt
        active[idx] = (found[idx] < limit[idx]) & (nxt > 0) & (nxt <= item_count) & ~odd
        steps -= 1
    if hit_q:
        q_all = np.concatenate(hit_q)
        v_all = np.concatenate(hit_v)
        order = np.argsort(q_all, kind="stable")
        rows = items[v_all[order]].tolist()
        for q, row in zip(q_all[order].tolist(), rows, strict=True):
            if not scalar[q]:
                answers[q].append(IndexItem(*row))
    for q in np.flatnonzero(scalar).tolist():
        query = queries[q]
        answers[q] = walk_local(
            buf,
            hash_slot_num,
            item_count,
            file_begin,
            int(hashes[q]),
            int(pos[q]),
            query.max_count,
            query.begin,
            query.end,
            exact,
        )
    return answers
