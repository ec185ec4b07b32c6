"""One file's entries in (slot, position) order, row group by row group (what export writes).

:class:`SlotOrder` sorts the entries ``1..n`` of a mapped file by (slot, position), the
slot being Java's remainder of the stored hash, and hands out decoded rows of that order
in ranges.  With numba (:mod:`rmqarrow.kernels._numba_order`) the sort is a counting sort
by slot, O(n), that keeps only the positions (4 bytes an entry) and the slots' end rows,
and a range's rows are read one record per row from the map.  Without it (or with
``RMQARROW_NO_NUMBA=1``) one int64 sort of ``slot << 32 | index`` gives the order and the
columns are decoded whole, then gathered with ``np.take``: the same rows, more memory and
time.  Both give identical rows; the tests compare them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

from rmqarrow._optional import compiled_kernels
from rmqarrow.format.layout import MappedIndex
from rmqarrow.kernels.stream import entry_chunks

__all__ = ["COMPILED", "RECORD_DTYPE", "Rows", "SlotOrder"]

#: The compiled kernels (numba), when importable.
COMPILED = "rmqarrow.kernels._numba_order"
#: Slots per bucket of the counting sort: a bucket's rows (about 1 MiB at RocketMQ's
#: 4 entries a slot) and counters stay in cache while it is sorted.
SHIFT = 12
#: A sorted entry as the counting sort stores it: native byte order, with its position.
RECORD_DTYPE = np.dtype([("key_hash", "<i4"), ("time_diff", "<i4"), ("prev_index", "<i4"),
                         ("position", "<i4"), ("phy_offset", "<i8")])


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

    def __init__(self, m: MappedIndex, n: int, spare: np.ndarray | None = None) -> None:
        """``spare``: a :meth:`buffer` of an earlier order, reused for this one's records
        when large enough (its pages are already faulted in: 480 MB of zeroed pages for a
        full file otherwise)."""
        self.n = n
        kernels = compiled_kernels(COMPILED)
        if kernels is None:
            self._numpy(m, n)
        else:
            self._counting(kernels, m, n, spare)

    def buffer(self) -> np.ndarray | None:
        """The records buffer, for the next order's ``spare`` (None without numba)."""
        return getattr(self, "_buffer", None)

    def _counting(
        self, k: ModuleType, m: MappedIndex, n: int, spare: np.ndarray | None
    ) -> None:
        slot_num = m.geometry.hash_slot_num
        words = m.entries.view(np.uint32)
        lo = 0
        counts = self._bucket_counts(k, m, n, words, lo)
        if counts is None:  # a negative (damaged) hash: count slots from 1 - slot_num
            lo = 1 - slot_num
            counts = self._bucket_counts(k, m, n, words, lo)
            assert counts is not None
        bounds = np.cumsum(counts)  # each bucket's first row, then the end
        if spare is not None and spare.size >= 6 * n and spare.dtype == np.uint32:
            self._buffer = spare
        else:
            self._buffer = np.empty(6 * n, dtype=np.uint32)
        records = self._buffer[: 6 * n].reshape(n, 6)
        cursor = bounds[:-1].copy()
        for a, b in entry_chunks(m, n):
            k.scatter_buckets(words, a, b, np.int64(slot_num), np.int64(lo), np.int64(SHIFT),
                              cursor, records)
        ends = np.empty(slot_num - lo, dtype=np.int64)
        k.sort_buckets(records, bounds, np.int64(slot_num), np.int64(lo), np.int64(SHIFT),
                       ends)
        self._kernels, self._lo = k, lo
        self._records = records.view(RECORD_DTYPE).reshape(n)
        self._ends = ends
        self._keys: np.ndarray | None = None

    @staticmethod
    def _bucket_counts(
        k: ModuleType, m: MappedIndex, n: int, words: np.ndarray, lo: int
    ) -> np.ndarray | None:
        """Entries per bucket of slots (``counts[0] = 0``), or None if a slot is below
        ``lo``."""
        buckets = ((m.geometry.hash_slot_num - lo) >> SHIFT) + 1
        counts = np.zeros(buckets + 1, dtype=np.int64)
        for a, b in entry_chunks(m, n):
            if not k.bucket_histogram(words, a, b, np.int64(m.geometry.hash_slot_num),
                                      np.int64(lo), np.int64(SHIFT), counts[1:]):
                return None
        return counts

    def _numpy(self, m: MappedIndex, n: int) -> None:
        e = m.entries[1 : n + 1]
        key_hash = e["key_hash"].astype(np.int32)
        slot = np.fmod(key_hash, np.int32(m.geometry.hash_slot_num)).astype(np.int64)
        keys = (slot << 32) | np.arange(n, dtype=np.int64)  # one SIMD int64 sort
        del slot
        keys.sort()
        self._keys = keys
        self._cols = (key_hash, e["phy_offset"].astype(np.int64),
                      e["time_diff"].astype(np.int32), e["prev_index"].astype(np.int32))

    def rows(self, start: int, stop: int) -> Rows:
        """Rows ``start .. stop - 1`` of the order, decoded."""
        if self._keys is not None:
            keys = self._keys[start:stop]
            idx = keys & 0xFFFFFFFF
            key_hash, phy, td, prev = self._cols
            return Rows((idx + 1).astype(np.int32), np.take(key_hash, idx),
                        (keys >> 32).astype(np.int32), np.take(phy, idx), np.take(td, idx),
                        np.take(prev, idx))
        rec = self._records[start:stop]
        slot = np.empty(len(rec), dtype=np.int32)
        bucket = int(np.searchsorted(self._ends, start, side="right"))
        self._kernels.fill_slots(self._ends, np.int64(start), np.int64(bucket),
                                 np.int64(self._lo), slot)
        return Rows(rec["position"].copy(), rec["key_hash"].copy(), slot,
                    rec["phy_offset"].copy(), rec["time_diff"].copy(), rec["prev_index"].copy())
