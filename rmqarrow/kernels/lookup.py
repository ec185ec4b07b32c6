"""Bulk chained lookup: many queries walk their slot chains together, vectorized.

The per-key walk (:func:`rmqarrow.kernels.walk.walk_chain`, rules 8-10 of
:mod:`rmqarrow.format.rules`) is run for all queries at once: every step gathers the entries
at the current positions of the still-walking queries, applies the match and stop rules, and
advances to ``prev``. Each hit records its rank among its query's hits (the count held
before it), so the result is put in native order by a scatter, without sorting.

In a valid file every chain runs strictly backwards. A query whose walk turns forward
(``prev > position``: only in a damaged file) leaves the vectorized walk, its hits in that
file are dropped, and the file is walked again for it by the exact scalar
:func:`~rmqarrow.kernels.walk.walk_chain` (which bounds cycles). The few queries still
walking very long chains late are finished the same way, so a step never runs for a handful
of queries.

Slot heads are read once per block, before any walk (a live writer's heads past the
header count walked back to committed entries first), so read-only and writable files take
the same walk.  With numba the walk of a block is the compiled
:func:`rmqarrow.kernels._numba.walk_chains` (the same rules, two dozen chains walked
interleaved with their reads prefetched); the numpy walk is the fallback and both are
tested against the scalar walk.
"""

from __future__ import annotations

import mmap
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
import pyarrow as pa

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.java import JAVA_INT_MAX, JAVA_LONG_MAX
from rmqarrow.format.layout import OpenIndex
from rmqarrow.format.queries import Query
from rmqarrow.kernels import _compiled as _kernels
from rmqarrow.kernels.arrays import per_query
from rmqarrow.kernels.hashing import index_key_hashes
from rmqarrow.kernels.walk import committed_heads, walk_chain

__all__ = [
    "RESULT_SCHEMA",
    "answer_queries",
    "answers_from_table",
    "query_offsets",
    "select_many",
]

#: A scalar for every query, or one value per query.
PerQuery = int | np.ndarray | Sequence[int]

RESULT_SCHEMA = pa.schema([("query", pa.int64()), ("phy_offset", pa.int64())])
#: Queries walked together: large enough to amortize each numpy call, small enough
#: that the per-step arrays stay in cache.
BLOCK = 1 << 18
#: Threads walking blocks at once (the bulk build also uses two: hash/sort and write).
THREADS = 2
_SCALAR_AFTER_STEPS = 64
_SCALAR_BELOW = 32


@dataclass
class _Walk:
    """Per-query state shared across files: the bounds, the hits held, the hits found."""

    hashes: np.ndarray  # int32
    max_num: np.ndarray  # int64
    begin: np.ndarray  # int64
    end: np.ndarray  # int64
    held: np.ndarray = field(init=False)  # int64 hits so far
    hit_query: list[np.ndarray] = field(default_factory=list)
    hit_rank: list[np.ndarray] = field(default_factory=list)
    hit_offset: list[np.ndarray] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.held = np.zeros(self.hashes.size, dtype=np.int64)

    def table(self) -> pa.Table:
        n = self.hashes.size
        counts = self.held
        total = int(counts.sum())
        kernels = _kernels.compiled()
        offsets = np.empty(total, dtype=np.int64)
        if kernels is not None:  # straight from each block's hits, no concatenation
            query, start = np.empty(total, dtype=np.int64), np.empty(n, dtype=np.int64)
            kernels.hit_rows(counts, start, query)
            for hits in zip(self.hit_query, self.hit_rank, self.hit_offset, strict=True):
                kernels.place_hits(start, *hits, offsets)
        else:
            if total:
                q = np.concatenate(self.hit_query)
                rank = np.concatenate(self.hit_rank)
                offsets[(np.cumsum(counts) - counts)[q] + rank] = np.concatenate(self.hit_offset)
            query = np.repeat(np.arange(n, dtype=np.int64), counts)
        return pa.table([pa.array(query), pa.array(offsets)], schema=RESULT_SCHEMA)


def _prepare(
    keys: pa.Array | pa.ChunkedArray | Sequence[str],
    max_num: object,
    begin: object,
    end: object,
) -> _Walk:
    hashes = index_key_hashes(keys, threads=THREADS)
    n = hashes.size
    max_nums = per_query("max_num", max_num, n)
    if n and int(max_nums.min()) < 0:
        raise InvalidValueError(f"max_num must be >= 0, got {int(max_nums.min())}")
    return _Walk(hashes, max_nums, per_query("begin", begin, n), per_query("end", end, n))


def select_many(
    f: OpenIndex,
    keys: pa.Array | pa.ChunkedArray | Sequence[str],
    max_num: PerQuery,
    begin: PerQuery,
    end: PerQuery,
) -> pa.Table:
    """``f.select_phy_offsets`` for each key: a table (query, phy_offset) in native order."""
    w = _prepare(keys, max_num, begin, end)
    _walk_file(f, w, np.flatnonzero(w.max_num > 0))
    return w.table()


def query_offsets(
    files: Sequence[OpenIndex],
    keys: pa.Array | pa.ChunkedArray | Sequence[str],
    max_num: PerQuery,
    begin: PerQuery,
    end: PerQuery,
    *,
    release: bool = False,
) -> pa.Table:
    """``query_files`` for each key over ``files`` (oldest first), no batch cap.

    ``release`` drops each read-only file's mapped pages from this process once it is
    walked (they stay in the page cache).  The kernel maps 64 KiB around every page a walk
    faults in, so a thousand queries leave some 200 MB of each file resident: a one-shot
    caller over many files (``verify``) would hold that for every file at once."""
    w = _prepare(keys, max_num, begin, end)
    active = np.flatnonzero(w.max_num > 0)
    for f in reversed(files):
        if not active.size:
            break
        fb, fe = f.state.begin_timestamp, f.state.end_timestamp
        b, e = w.begin[active], w.end[active]
        matched = ((b < fb) & (e > fe)) | ((fb <= b) & (b <= fe)) | ((fb <= e) & (e <= fe))
        _walk_file(f, w, active[matched])
        if release and not f.regions.writable and not f.regions.mm.closed:
            f.regions.mm.madvise(mmap.MADV_DONTNEED)
        stop = (fb < b) | (w.held[active] >= w.max_num[active])
        active = active[~stop]
    return w.table()


def _walk_file(f: OpenIndex, w: _Walk, queries: np.ndarray) -> None:
    """Walk one file for ``queries`` (indices into ``w``), adding their hits.

    Queries go in blocks so that every per-step temporary stays in cache, walked by
    ``THREADS`` threads.
    """
    if f.state.index_count <= 1:
        return
    blocks = [queries[a : a + BLOCK] for a in range(0, queries.size, BLOCK)]
    if len(blocks) <= 1 or THREADS <= 1:
        for block in blocks:
            _walk_block(f, w, block)
        return
    # Blocks hold disjoint queries, so two threads may walk them at once (numpy releases
    # the GIL in its gathers and comparisons); hits are placed by rank, not by arrival.
    with ThreadPoolExecutor(THREADS, thread_name_prefix="rmqarrow-walk") as pool:
        for done in [pool.submit(_walk_block, f, w, block) for block in blocks]:
            done.result()


def _same_everywhere(a: np.ndarray) -> bool:
    """One value for every query (a scalar's broadcast view is known to be)."""
    return a.size == 0 or (a.strides == (0,)) or bool((a == a[0]).all())


def _walk_block(f: OpenIndex, w: _Walk, queries: np.ndarray) -> None:
    state, regions = f.state, f.regions
    count = state.index_count
    if not queries.size:
        return
    at = _as_index(queries)
    held_before = w.held[at].copy()
    # the same bounds for every query (the common case) stay scalars
    uniform = all(_same_everywhere(a) for a in (w.begin, w.end))
    # ... and when they hold every time the file can store, times need no computing
    last_t = state.begin_timestamp + JAVA_INT_MAX * 1000
    all_time = (
        uniform
        and last_t <= JAVA_LONG_MAX
        and int(w.begin[0]) <= state.begin_timestamp
        and int(w.end[0]) >= last_t
    )
    limit = regions.geometry.index_num
    hashes = w.hashes[at]
    slot_num = regions.geometry.hash_slot_num
    kernels = _kernels.compiled()
    if kernels is not None:
        pos: np.ndarray = np.empty(hashes.size, dtype=np.int64)
        kernels.slot_heads(hashes, regions.slots.view(np.uint32), np.int64(slot_num), pos)
    else:
        pos = regions.slots.view(np.int32)[hashes % np.int32(slot_num)].byteswap()
    # Each head is read once, here: a live writer's heads past the header count (or an
    # interrupted batch's) are walked back to committed entries before any walk.
    if (pos >= count).any():
        pos = committed_heads(regions, pos, hashes % np.int32(slot_num), count)
    if kernels is not None:
        _walk_compiled(kernels, f, w, queries, at, pos, held_before, all_time, uniform)
        return
    entries = regions.entries
    # gathering whole 20-byte rows of raw bytes is far faster than a structured gather
    rows = entries.view(np.uint8).reshape(-1, entries.dtype.itemsize)
    begin_ts = np.int64(state.begin_timestamp)
    left = w.max_num[at] - held_before
    ok = (pos > 0) & (pos <= count) & (pos < limit) & (left > 0)
    idx = np.flatnonzero(ok)
    cur, pos, hashes, left = queries[idx], pos[idx], hashes[idx], left[idx]
    b: np.ndarray | np.int64 = w.begin[0] if uniform else w.begin[cur]
    en: np.ndarray | np.int64 = w.end[0] if uniform else w.end[cur]
    cap = min(count, limit - 1)  # a valid prev is 1..cap
    hashes_raw = hashes.byteswap()  # compared with the stored big-endian bytes as they are
    found_q: list[np.ndarray] = []
    found_rank: list[np.ndarray] = []
    found_off: list[np.ndarray] = []
    scalar: list[np.ndarray] = []
    steps = 0
    with np.errstate(over="ignore"):
        while cur.size:
            if steps >= _SCALAR_AFTER_STEPS and cur.size < _SCALAR_BELOW:
                scalar.append(cur)
                break
            steps += 1
            got = np.take(rows, pos, axis=0)  # (k, 20) raw bytes
            raw = got.view(np.int32)  # columns: hash, offset (2), time diff, prev
            diff = raw[:, 3].byteswap()
            prev = raw[:, 4].byteswap()
            live = diff >= 0
            hit = live & (raw[:, 0] == hashes_raw)
            valid = live & (prev > 0) & (prev <= cap)
            if not all_time:
                t = begin_ts + diff.astype(np.int64) * 1000  # Java long arithmetic: wraps
                hit &= (b <= t) & (t <= en)
                valid &= t >= b
            hits = np.flatnonzero(hit)
            if hits.size:
                q = cur[hits]
                found_q.append(q)
                found_rank.append(w.held[q])
                high = raw[hits, 1].byteswap().astype(np.int64)
                low = raw[hits, 2].byteswap().view(np.uint32).astype(np.int64)
                found_off.append((high << 32) | low)
                w.held[q] += 1
                left[hits] -= 1
            forward = valid & (prev > pos)
            if forward.any():
                scalar.append(cur[forward])
            go = valid & (prev < pos) & (left > 0)
            idx = np.flatnonzero(go)
            cur, pos, hashes_raw, left = cur[idx], prev[idx], hashes_raw[idx], left[idx]
            if not uniform:
                b, en = b[idx], en[idx]  # type: ignore[index]
    _finish(f, w, queries, held_before, found_q, found_rank, found_off, scalar)


def _as_index(queries: np.ndarray) -> slice | np.ndarray:
    """Ascending ``queries`` as a slice when they are consecutive (the common case), so
    their per-query values are views instead of gathers."""
    first, last = int(queries[0]), int(queries[-1])
    return slice(first, last + 1) if last - first + 1 == queries.size else queries


def _walk_compiled(
    kernels: ModuleType,
    f: OpenIndex,
    w: _Walk,
    queries: np.ndarray,
    at: slice | np.ndarray,
    heads: np.ndarray,
    held_before: np.ndarray,
    all_time: bool,
    uniform: bool,
) -> None:
    """The walk of one block by the compiled kernel (same rules, chains interleaved)."""
    state, regions = f.state, f.regions
    sel = slice(0, 1) if uniform else at
    hq, hr, ho, fwd = kernels.walk_chains(
        queries,
        w.hashes[at],
        np.asarray(heads, dtype=np.int64),
        w.max_num[at] - held_before,
        # contiguous bounds (not a scalar's broadcast view): one compiled form for all
        np.ascontiguousarray(w.begin[sel]),
        np.ascontiguousarray(w.end[sel]),
        uniform,
        all_time,
        np.int64(state.begin_timestamp),
        np.int64(state.index_count),
        np.int64(regions.geometry.index_num),
        regions.entries.view(np.uint32),
        w.held,
        *_hit_buffers(queries.size),
    )
    if 2 * hq.size < queries.size:  # views would keep the whole buffers to the end
        hq, hr, ho = hq.copy(), hr.copy(), ho.copy()
    _finish(f, w, queries, held_before, [hq], [hr], [ho], [fwd] if fwd.size else [])


def _hit_buffers(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compiled walk's first buffers for hit queries, ranks and offsets (allocated
    here: numpy gives large arrays huge pages, numba faults them in 4 KiB at a time)."""
    size = max(n, 16)
    return (
        np.empty(size, dtype=np.int64),
        np.empty(size, dtype=np.int64),
        np.empty(size, dtype=np.int64),
    )


def _finish(
    f: OpenIndex,
    w: _Walk,
    queries: np.ndarray,
    held_before: np.ndarray,
    found_q: list[np.ndarray],
    found_rank: list[np.ndarray],
    found_off: list[np.ndarray],
    scalar: list[np.ndarray],
) -> None:
    """Walk the ``scalar`` queries again exactly, then hand the block's hits to ``w``."""
    state, regions = f.state, f.regions
    if scalar:  # drop their hits in this file and walk it again, exactly
        redo = np.concatenate(scalar)
        w.held[redo] = held_before[np.searchsorted(queries, redo)]
        for i, q in enumerate(found_q):
            keep = ~np.isin(q, redo)
            if not keep.all():
                found_q[i], found_rank[i] = q[keep], found_rank[i][keep]
                found_off[i] = found_off[i][keep]
        for q in redo.tolist():
            out: list[int] = []
            have = int(w.held[q])
            walk_chain(
                regions,
                state,
                int(w.hashes[q]),
                int(w.max_num[q]) - have,
                int(w.begin[q]),
                int(w.end[q]),
                out,
            )
            if out:
                found_q.append(np.full(len(out), q, dtype=np.int64))
                found_rank.append(np.arange(have, have + len(out), dtype=np.int64))
                found_off.append(np.asarray(out, dtype=np.int64))
                w.held[q] = have + len(out)
    with w.lock:
        w.hit_query.extend(found_q)
        w.hit_rank.extend(found_rank)
        w.hit_offset.extend(found_off)


def answer_queries(
    files: Sequence[OpenIndex], queries: Sequence[Query], *, release: bool = False
) -> list[list[int]]:
    """The native answer of each query over ``files`` (oldest first), no batch cap: one
    list of offsets per query.  ``release``: see :func:`query_offsets`."""
    table = query_offsets(
        files,
        [q.key for q in queries],
        [q.max_num for q in queries],
        [q.begin for q in queries],
        [q.end for q in queries],
        release=release,
    )
    return answers_from_table(table, len(queries))


def answers_from_table(table: pa.Table, n: int) -> list[list[int]]:
    """A (query, phy_offset) result table as one list of offsets per query ``0..n-1``."""
    query = np.asarray(table.column("query").to_numpy(), dtype=np.int64)
    counts = np.bincount(query, minlength=n) if query.size else np.zeros(n, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(
        np.int32 if query.size < 2**31 else np.int64
    )
    values = table.column("phy_offset").combine_chunks()
    lists = (pa.ListArray if offsets.dtype == np.int32 else pa.LargeListArray).from_arrays(
        pa.array(offsets), values
    )
    out: list[list[int]] = lists.to_pylist()
    return out
