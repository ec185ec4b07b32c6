"""One file's entries in (slot, position) order, row group by row group (what export writes).

:class:`SlotOrder` sorts the entries ``1..n`` of a mapped file by (slot, position), the
slot being Java's remainder of the stored hash, and hands out decoded rows of that order
in ranges.  With numba (:mod:`rmqarrow.kernels._numba_order`) the sort is a counting sort
by slot, O(n): the entries are first spread into buckets of slots (decoded records, with
their positions), and each bucket is sorted by slot when a range first asks for its rows
(so a writer's decoding thread sorts beside it).  Without it (or with
``RMQARROW_NO_NUMBA=1``) one int64 sort of ``slot << 32 | index`` gives the order and the
columns are decoded whole, then gathered with ``np.take``: the same rows, more memory and
time.  Both give identical rows; the tests compare them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from rmqarrow._optional import compiled_kernels
from rmqarrow.format.layout import MappedIndex
from rmqarrow.kernels.stream import CHUNK, release_entries

__all__ = ["COMPILED", "RECORD_DTYPE", "Rows", "SlotOrder"]

#: The compiled kernels (numba), when importable.
COMPILED = "rmqarrow.kernels._numba_order"
#: Slots per bucket of the counting sort: a bucket's rows (about 1 MiB at RocketMQ's
#: 4 entries a slot) and counters stay in cache while it is sorted.
SHIFT = 12
#: A sorted entry as the counting sort stores it: native byte order, with its position.
RECORD_DTYPE = np.dtype(
    [
        ("key_hash", "<i4"),
        ("time_diff", "<i4"),
        ("prev_index", "<i4"),
        ("position", "<i4"),
        ("phy_offset", "<i8"),
    ]
)


@dataclass(frozen=True)
class Rows:
    """Decoded entries of a range of the (slot, position) order, one array a column."""

    position: np.ndarray  # int32
    key_hash: np.ndarray  # int32
    slot: np.ndarray  # int32
    phy_offset: np.ndarray  # int64
    time_diff: np.ndarray  # int32
    prev_index: np.ndarray  # int32


class SlotOrder:
    """The entries ``1..n`` of ``m`` sorted by (slot, position); ``rows(a, b)`` decodes
    rows ``a..b-1`` of that order.  ``m`` must stay mapped while this is used."""

    def __init__(
        self, m: MappedIndex, n: int, spare: np.ndarray | None = None, threads: int = 1
    ) -> None:
        """``spare``: a :meth:`buffer` of an earlier order, reused for this one's records
        when large enough (its pages are already faulted in: 480 MB of zeroed pages for a
        full file otherwise).  ``threads``: how many threads spread the entries into
        buckets (the map's chunks in parallel, each into its own rows of every bucket)."""
        self.n = n
        kernels = compiled_kernels(COMPILED)
        if kernels is None:
            self._numpy(m, n)
        else:
            self._counting(kernels, m, n, spare, threads)

    def buffer(self) -> np.ndarray | None:
        """The records buffer, for the next order's ``spare`` (None without numba)."""
        return getattr(self, "_buffer", None)

    def _counting(
        self, k: ModuleType, m: MappedIndex, n: int, spare: np.ndarray | None, threads: int
    ) -> None:
        slot_num = m.geometry.hash_slot_num
        words = m.entries.view(np.uint32)
        step = CHUNK if threads <= 1 else CHUNK // 4  # smaller chunks share out evenly
        chunks = [(a, min(a + step, n + 1)) for a in range(1, n + 1, step)]
        with contextlib.ExitStack() as stack:
            run: Callable[..., Iterable[Any]] = map
            if threads > 1 and len(chunks) > 1:
                run = stack.enter_context(ThreadPoolExecutor(threads)).map
            lo = 0
            counts = self._bucket_counts(k, m, words, chunks, lo, run)
            if counts is None:  # a negative (damaged) hash: count slots from 1 - slot_num
                lo = 1 - slot_num
                counts = self._bucket_counts(k, m, words, chunks, lo, run)
                assert counts is not None
            total = counts.sum(axis=0)  # entries per bucket (total[0] = 0)
            bounds = np.cumsum(total)  # each bucket's first row, then the end
            if spare is not None and spare.size >= 6 * n and spare.dtype == np.uint32:
                self._buffer = spare
            else:
                self._buffer = np.empty(6 * n, dtype=np.uint32)
            records = self._buffer[: 6 * n].reshape(n, 6)
            # each chunk's first row in every bucket: after the earlier chunks' rows, so
            # a bucket holds its entries in position order
            firsts = bounds[:-1] + np.cumsum(counts[:, 1:], axis=0) - counts[:, 1:]

            def scatter(c: int) -> None:
                a, b = chunks[c]
                k.scatter_buckets(
                    words,
                    a,
                    b,
                    np.int64(slot_num),
                    np.int64(lo),
                    np.int64(SHIFT),
                    firsts[c].copy(),
                    records,
                )
                release_entries(m, a, b)

            list(run(scatter, range(len(chunks))))
        self._kernels, self._lo, self._slot_num = k, lo, slot_num
        self._bounds = bounds
        self._rows = records
        self._records = records.view(RECORD_DTYPE).reshape(n)
        self._ends = np.empty(slot_num - lo, dtype=np.int64)
        self._sorted = 0  # buckets 0 .. _sorted - 1 are in (slot, position) order
        self._tmp = np.empty((int(total.max(initial=0)), 6), dtype=np.uint32)
        self._cursor = np.empty(1 << SHIFT, dtype=np.int64)
        self._keys: np.ndarray | None = None

    def _sort_until(self, stop: int) -> None:
        """Sort the buckets holding rows below ``stop`` (each bucket once, when its rows
        are first asked for: the export's decoding thread does it beside the writer)."""
        need = int(np.searchsorted(self._bounds, stop, side="left"))
        if need > self._sorted:
            self._kernels.sort_buckets(
                self._rows,
                self._bounds,
                np.int64(self._slot_num),
                np.int64(self._lo),
                np.int64(SHIFT),
                self._ends,
                np.int64(self._sorted),
                np.int64(need),
                self._tmp,
                self._cursor,
            )
            self._sorted = need

    def sort_all(self, threads: int = 1) -> None:
        """Sort every bucket now, on ``threads`` threads (each its own share of the rows,
        and its own scratch).  Afterwards :meth:`rows` only reads, so several threads may
        ask for ranges at once (a file's entries written as several parts)."""
        if self._keys is not None:
            return  # the numpy order is complete from the start
        buckets = self._bounds.size - 1
        first = self._sorted
        if first >= buckets:
            return
        rows = self._bounds[buckets] - self._bounds[first]
        share = [int(self._bounds[first] + rows * i // threads) for i in range(1, threads)]
        cuts = [first, *np.searchsorted(self._bounds, share, side="left").tolist(), buckets]
        cuts = sorted(max(first, min(c, buckets)) for c in cuts)

        def sort(i: int) -> None:
            self._kernels.sort_buckets(
                self._rows,
                self._bounds,
                np.int64(self._slot_num),
                np.int64(self._lo),
                np.int64(SHIFT),
                self._ends,
                np.int64(cuts[i]),
                np.int64(cuts[i + 1]),
                np.empty_like(self._tmp),
                np.empty_like(self._cursor),
            )

        with ThreadPoolExecutor(max(threads, 1)) as pool:
            list(pool.map(sort, range(len(cuts) - 1)))
        self._sorted = buckets

    @staticmethod
    def _bucket_counts(
        k: ModuleType,
        m: MappedIndex,
        words: np.ndarray,
        chunks: list[tuple[int, int]],
        lo: int,
        run: Callable[..., Iterable[Any]],
    ) -> np.ndarray | None:
        """Entries per bucket of slots of each chunk (a row a chunk, column 0 always 0), or
        None if a slot is below ``lo``."""
        buckets = ((m.geometry.hash_slot_num - lo) >> SHIFT) + 1
        counts = np.zeros((max(len(chunks), 1), buckets + 1), dtype=np.int64)

        def count(c: int) -> bool:
            a, b = chunks[c]
            ok: bool = k.bucket_histogram(
                words,
                a,
                b,
                np.int64(m.geometry.hash_slot_num),
                np.int64(lo),
                np.int64(SHIFT),
                counts[c, 1:],
            )
            release_entries(m, a, b)
            return ok

        return counts if all(list(run(count, range(len(chunks))))) else None

    def _numpy(self, m: MappedIndex, n: int) -> None:
        e = m.entries[1 : n + 1]
        key_hash = e["key_hash"].astype(np.int32)
        slot = np.fmod(key_hash, np.int32(m.geometry.hash_slot_num)).astype(np.int64)
        keys = (slot << 32) | np.arange(n, dtype=np.int64)  # one SIMD int64 sort
        del slot
        keys.sort()
        self._keys = keys
        self._cols = (
            key_hash,
            e["phy_offset"].astype(np.int64),
            e["time_diff"].astype(np.int32),
            e["prev_index"].astype(np.int32),
        )

    def rows(self, start: int, stop: int) -> Rows:
        """Rows ``start .. stop - 1`` of the order, decoded."""
        if self._keys is not None:
            keys = self._keys[start:stop]
            idx = keys & 0xFFFFFFFF
            key_hash, phy, td, prev = self._cols
            return Rows(
                (idx + 1).astype(np.int32),
                np.take(key_hash, idx),
                (keys >> 32).astype(np.int32),
                np.take(phy, idx),
                np.take(td, idx),
                np.take(prev, idx),
            )
        self._sort_until(stop)
        rec = self._records[start:stop]
        slot = np.empty(len(rec), dtype=np.int32)
        # the slots of the sorted buckets only: the others' ends are not set yet
        known = self._ends[: min(self._sorted << SHIFT, self._ends.size)]
        bucket = int(np.searchsorted(known, start, side="right"))
        self._kernels.fill_slots(
            self._ends, np.int64(start), np.int64(bucket), np.int64(self._lo), slot
        )
        return Rows(
            rec["position"].copy(),
            rec["key_hash"].copy(),
            slot,
            rec["phy_offset"].copy(),
            rec["time_diff"].copy(),
            rec["prev_index"].copy(),
        )
