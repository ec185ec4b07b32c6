"""The bulk put: many keys into one index file, vectorized with numpy.

It leaves exactly the bytes of ``put_key`` on each key in order (rules in
:mod:`rmqarrow.format.rules`):

* :func:`put_keys` is ``put_key`` on each key in order.  A batch is written in chunks;
  within a chunk the puts are ordered by (slot, position) with one sort of a combined
  int64 key, so each put's ``prev_index`` is the previous put of its slot, or, for the
  first put of a slot in the chunk, the slot's stored head when that is valid at the
  put's own position (``0 < head <= position``).  Entries go into the mapped file as one
  contiguous run, slot heads are scattered once, the header is written once.  A second
  thread hashes and sorts the next chunk while one is written (at most two in flight,
  so memory stays bounded whatever the batch).

The kernels work on any open file (:class:`rmqarrow.format.layout.OpenIndex`): its mapped
regions and its in-memory header.  ``IndexService.build_index_batch``
(:mod:`rmqarrow.index.build`) drives them across rolling files.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rmqarrow.format import rules as _rules
from rmqarrow.format.layout import OpenIndex, write_header
from rmqarrow.kernels.arrays import int64_values
from rmqarrow.kernels.hashing import check_keys, index_key_hashes

__all__ = ["CHUNK", "put_hashes", "put_keys"]

#: Puts per vectorized chunk: bounds temporaries to a few tens of MB whatever the batch.
CHUNK = 1 << 20


# -- IndexFile.put_keys ----------------------------------------------------------------------


def put_keys(
    f: OpenIndex,
    keys: pa.Array | pa.ChunkedArray | Sequence[str],
    phy_offsets: np.ndarray | Sequence[int],
    store_timestamps: np.ndarray | Sequence[int],
) -> int:
    """``put_key`` each key in order until the file is full; returns how many were put.

    Every input is validated before anything is written (a bad key anywhere refuses the
    whole batch).
    """
    arr = check_keys(keys)  # a chunked array stays chunked: slices of it are hashed
    n = len(arr)
    offsets = int64_values("phy_offsets", phy_offsets, n)
    stamps = int64_values("store_timestamps", store_timestamps, n)
    take = min(n, max(f.regions.geometry.index_num - f.state.index_count, 0))
    slot_num = f.regions.geometry.hash_slot_num
    bounds = [(a, min(a + CHUNK, take)) for a in range(0, take, CHUNK)]

    def plan(i: int) -> _Plan:
        a, b = bounds[i]
        return _plan(index_key_hashes(arr.slice(a, b - a)), slot_num)

    if len(bounds) <= 1:
        for i, (a, b) in enumerate(bounds):
            _apply(f, plan(i), offsets[a:b], stamps[a:b])
        return take
    # Hash and sort the next chunk on a second thread while this one is written (the
    # hash kernel and numpy's sort release the GIL); at most two chunks are in flight.
    with ThreadPoolExecutor(1, thread_name_prefix="rmqarrow-bulk") as pool:
        ahead = pool.submit(plan, 0)
        for i, (a, b) in enumerate(bounds):
            current = ahead.result()
            if i + 1 < len(bounds):
                ahead = pool.submit(plan, i + 1)
            _apply(f, current, offsets[a:b], stamps[a:b])
    return take


def put_hashes(f: OpenIndex, hashes: np.ndarray, offsets: np.ndarray, stamps: np.ndarray) -> int:
    """``_put_hash`` each (hash, offset, timestamp) in order until full; returns the count."""
    done = 0
    total = min(hashes.size, max(f.regions.geometry.index_num - f.state.index_count, 0))
    while done < total:
        stop = min(done + CHUNK, total)
        plan = _plan(hashes[done:stop], f.regions.geometry.hash_slot_num)
        _apply(f, plan, offsets[done:stop], stamps[done:stop])
        done = stop
    return done


@dataclass(frozen=True)
class _Plan:
    """A chunk of puts ordered by (slot, position), ready to chain into any file state.

    ``order[k]`` is the chunk index of the k-th put in that order; ``first`` marks where
    each slot's run starts in it and ``head_slot`` is that run's slot.
    """

    hashes: np.ndarray  # int32, chunk order
    order: np.ndarray  # int64
    first: np.ndarray  # int64 indices into order
    head_slot: np.ndarray  # int64


def _plan(hashes: np.ndarray, slot_num: int) -> _Plan:
    """Sort a chunk by (slot, position) with one sort of a combined int64 key."""
    m = hashes.size
    slot = (hashes % np.int32(slot_num)).astype(np.int64)  # hashes are >= 0
    shift = max(int(m - 1).bit_length(), 1)
    order_key = slot << shift
    order_key |= np.arange(m, dtype=np.int64)
    order_key.sort()
    s_slot = order_key >> shift
    order = order_key
    order &= (1 << shift) - 1  # reuses the key's memory
    starts = np.empty(m, dtype=bool)
    starts[0] = True
    np.not_equal(s_slot[1:], s_slot[:-1], out=starts[1:])
    first = np.flatnonzero(starts)
    return _Plan(hashes, order, first, s_slot[first])


def _apply(f: OpenIndex, plan: _Plan, offsets: np.ndarray, stamps: np.ndarray) -> None:
    """Write a planned chunk that fits, at positions ``index_count ..``: the same bytes
    as ``_put_hash`` on each put in order."""
    hashes, order, first = plan.hashes, plan.order, plan.first
    m = hashes.size
    h = f.state
    pos0 = h.index_count
    entries = f.regions.entries

    # time diffs: rules 4 and 5 (position 1 uses the old begin, then begin := its time)
    diffs = np.empty(m, dtype=np.int32)
    start = 0
    if pos0 <= 1:
        diffs[0] = _rules.time_diff(int(stamps[0]), h.begin_timestamp)
        h.begin_timestamp = int(stamps[0])
        h.begin_phy_offset = int(offsets[0])
        start = 1
    diffs[start:] = _rules.time_diffs(stamps[start:], h.begin_timestamp)

    # prev: the previous put of the slot, or for a slot's first put in the chunk the
    # stored head when valid at that put's own position (rule 2)
    raw_slots = f.regions.slots.view(np.int32)  # big-endian bytes read natively, swapped after
    heads = raw_slots[plan.head_slot].byteswap()
    s_pos = order.astype(np.int32)  # positions fit int32: a file holds < 2**31 / 20 entries
    s_pos += np.int32(pos0)
    heads[(heads <= _rules.INVALID_INDEX) | (heads > s_pos[first])] = _rules.INVALID_INDEX
    prev_sorted = np.empty(m, dtype=np.int32)
    prev_sorted[1:] = s_pos[:-1]
    prev_sorted[first] = heads
    prev = np.empty(m, dtype=np.int32)
    prev[order] = prev_sorted

    stop = pos0 + m
    entries["key_hash"][pos0:stop] = hashes
    entries["phy_offset"][pos0:stop] = offsets
    entries["time_diff"][pos0:stop] = diffs
    entries["prev_index"][pos0:stop] = prev
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = m - 1
    raw_slots[plan.head_slot] = s_pos[last].byteswap()

    h.hash_slot_count += int(np.count_nonzero(heads == _rules.INVALID_INDEX))
    h.index_count = stop
    h.end_phy_offset = int(offsets[-1])
    h.end_timestamp = int(stamps[-1])
    write_header(f.regions, f.state)
