"""Bulk forms of the IndexFile and IndexService writes, vectorized with numpy.

Each function leaves exactly the bytes of the one-at-a-time operation it stands for
(rules in :mod:`rmqarrow._rules`):

* :func:`put_keys` is ``put_key`` on each key in order.  With the compiled kernels
  (:mod:`rmqarrow._numba_kernels`) the puts are chained and written in one serial pass
  per chunk, straight into the mapped bytes, while a second thread hashes the next chunk;
  the pages the batch will write are faulted in first, in one ``madvise`` call.  The pure
  numpy form orders each chunk by (slot, position) with one sort of a combined int64 key,
  so each put's ``prev_index`` is the previous put of its slot, or, for the first put of
  a slot in the chunk, the slot's stored head when that is valid at the put's own
  position (``0 < head <= position``); entries go in as one contiguous run, slot heads
  are scattered once.  Either way the header is written once per chunk and at most two
  chunks are in flight, so memory stays bounded whatever the batch.
* :func:`build_index_batch` is ``build_index`` on each record of a table: keys expanded
  by :mod:`rmqarrow._expand`, rollbacks skipped, the end-offset guard computed as a
  running maximum, files rolled exactly when the one-by-one service rolls them.

The bulk lookup lives in :mod:`rmqarrow._bulk_lookup`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from . import _kernels, _rules
from ._bulk_lookup import answers_from_table, query_offsets, select_many
from ._expand import expand_keys, record_columns
from .errors import InvalidValueError
from .hashing import check_keys, index_key_hashes

if TYPE_CHECKING:
    from .indexfile import IndexFile
    from .service import IndexService

__all__ = [
    "answers_from_table",
    "build_index_batch",
    "int64_values",
    "put_hashes",
    "put_keys",
    "query_offsets",
    "select_many",
]

#: Puts per vectorized chunk: bounds temporaries to a few tens of MB whatever the batch.
CHUNK = 1 << 20
_ENTRY_SIZE = 20
#: Linux's ``madvise(MADV_POPULATE_WRITE)``: fault a range in for writing, in one call.
_MADV_POPULATE_WRITE = 23
_INT64_MAX = 2**63 - 1


def int64_values(name: str, values: object, n: int | None = None) -> np.ndarray:
    """``values`` (numpy, Arrow or a sequence of ints) as int64, checked; ``n`` = length."""
    if isinstance(values, pa.ChunkedArray | pa.Array):
        if values.null_count:
            raise InvalidValueError(f"{name} holds {values.null_count} nulls; need int64 values")
        if not pa.types.is_integer(values.type):
            raise InvalidValueError(f"{name} must be integers, got Arrow {values.type}")
        arr = np.asarray(values.to_numpy(zero_copy_only=False))
    elif isinstance(values, np.ndarray):
        arr = values
    else:
        seq = list(values)  # type: ignore[call-overload]
        for v in seq:
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise InvalidValueError(f"{name} must hold ints, got {type(v).__name__}: {v!r}")
        big = [v for v in seq if not -(2**63) <= int(v) <= _INT64_MAX]
        if big:
            raise InvalidValueError(f"{name} must fit a Java long (int64), got {int(big[0])}")
        arr = np.asarray(seq, dtype=np.int64) if seq else np.empty(0, np.int64)
    if arr.ndim != 1:
        raise InvalidValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise InvalidValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > _INT64_MAX:
        raise InvalidValueError(f"{name} must fit a Java long (int64), got {int(arr.max())}")
    if n is not None and arr.size != n:
        raise InvalidValueError(f"{name} has {arr.size} values, expected {n} (one per key)")
    return arr.astype(np.int64, copy=False)


# -- IndexFile.put_keys ----------------------------------------------------------------------


def put_keys(
    f: IndexFile,
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
    take = min(n, max(f.geometry.index_num - f._h.index_count, 0))
    bounds = [(a, min(a + CHUNK, take)) for a in range(0, take, CHUNK)]
    if _kernels.compiled() is not None:
        _put_keys_compiled(f, arr, offsets, stamps, bounds)
        return take
    slot_num = f.geometry.hash_slot_num

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


def _put_keys_compiled(
    f: IndexFile, arr: pa.Array | pa.ChunkedArray, offsets: np.ndarray, stamps: np.ndarray,
    bounds: list[tuple[int, int]],
) -> None:
    """:func:`put_keys` with the compiled kernels: one pass per chunk, no sort.

    A second thread hashes the next chunk while the main thread chains and writes this
    one; the pages the batch writes are faulted in first, in one call (far cheaper than a
    fault per page).
    """
    if not bounds:
        return
    _prefault(f, f._h.index_count, bounds[-1][1])
    with ThreadPoolExecutor(1, thread_name_prefix="rmqarrow-bulk") as pool:
        ahead = pool.submit(index_key_hashes, arr.slice(0, bounds[0][1]))
        for i, (a, b) in enumerate(bounds):
            hashes = ahead.result()
            if i + 1 < len(bounds):
                c, d = bounds[i + 1]
                ahead = pool.submit(index_key_hashes, arr.slice(c, d - c))
            _put_run(f, hashes, offsets[a:b], stamps[a:b])


def _prefault(f: IndexFile, pos0: int, count: int) -> None:
    """Fault in the slot table and the entries ``pos0 .. pos0+count`` (Linux >= 5.14
    ``MADV_POPULATE_WRITE``; elsewhere the writes fault them in one by one, as before)."""
    g = f.geometry
    start = 0  # the header and slot table share the first pages
    stop = g.entries_offset + (pos0 + count) * _ENTRY_SIZE
    with contextlib.suppress(AttributeError, OSError, ValueError):
        f._m.mm.madvise(_MADV_POPULATE_WRITE, start, min(stop, g.file_size) - start)


def _put_run(f: IndexFile, hashes: np.ndarray, offsets: np.ndarray, stamps: np.ndarray) -> None:
    """The compiled ``_put_hash`` over puts that fit; the first put of a file (rule 5)
    goes through ``_put_hash`` itself.  The header is written once."""
    h = f._h
    if not hashes.size:
        return
    if h.index_count <= 1:
        f._put_hash(int(hashes[0]), int(offsets[0]), int(stamps[0]))
        hashes, offsets, stamps = hashes[1:], offsets[1:], stamps[1:]
        if not hashes.size:
            return
    module = _kernels.compiled()
    assert module is not None
    slots = f._m.slots.view(np.uint32)
    words = f._m.entries.view(np.uint32)
    h.hash_slot_count += module.put_chain(hashes, offsets, stamps, h.begin_timestamp,
                                          h.index_count, slots, words)
    h.index_count += hashes.size
    h.end_phy_offset = int(offsets[-1])
    h.end_timestamp = int(stamps[-1])
    f._write_header()


def put_hashes(f: IndexFile, hashes: np.ndarray, offsets: np.ndarray, stamps: np.ndarray) -> int:
    """``_put_hash`` each (hash, offset, timestamp) in order until full; returns the count."""
    done = 0
    total = min(hashes.size, max(f.geometry.index_num - f._h.index_count, 0))
    if _kernels.compiled() is not None:
        _put_run(f, hashes[:total].astype(np.int32, copy=False), offsets[:total],
                 stamps[:total])
        return total
    while done < total:
        stop = min(done + CHUNK, total)
        plan = _plan(hashes[done:stop], f.geometry.hash_slot_num)
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


def _apply(f: IndexFile, plan: _Plan, offsets: np.ndarray, stamps: np.ndarray) -> None:
    """Write a planned chunk that fits, at positions ``index_count ..``: the same bytes
    as ``_put_hash`` on each put in order."""
    hashes, order, first = plan.hashes, plan.order, plan.first
    m = hashes.size
    h = f._h
    pos0 = h.index_count
    entries = f._m.entries

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
    raw_slots = f._m.slots.view(np.int32)  # big-endian bytes read natively, swapped after
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
    f._write_header()


# -- IndexService.build_index_batch ----------------------------------------------------------

_LONG_MIN = np.int64(-(2**63))


def build_index_batch(service: IndexService, records: pa.Table | pa.RecordBatch) -> None:
    """``build_index`` on each record in order; the same files, bytes and roll timing."""
    n = records.num_rows
    if n == 0:
        return
    cols = record_columns(records)
    expanded = expand_keys(records, skip=cols.rollback)
    hashes = index_key_hashes(expanded.keys)
    counts = expanded.counts
    key_start = np.cumsum(counts) - counts
    has_keys = counts > 0
    rec_off = cols.commit_log_offset
    rec_ts = cols.store_timestamp
    # a record's key ranges are contiguous: key k belongs to expanded.record[k]
    r0 = 0
    while r0 < n:
        f = service.last_file_for_write()  # at the start of record r0, as build_index
        room = f.geometry.index_num - f.index_count
        r1 = min(n, r0 + max(4 * room, 1 << 16))
        seg_off = rec_off[r0:r1]
        cand = np.where(has_keys[r0:r1], seg_off, _LONG_MIN)
        guard = np.empty(r1 - r0, dtype=np.int64)
        guard[0] = f.end_phy_offset
        if r1 - r0 > 1:
            np.maximum(np.maximum.accumulate(cand[:-1]), f.end_phy_offset, out=guard[1:])
        kept = has_keys[r0:r1] & (seg_off >= guard)
        filled = np.cumsum(np.where(kept, counts[r0:r1], 0))
        j = int(np.searchsorted(filled, room, side="left"))
        last = r0 + j if j < filled.size else r1 - 1
        a, b = int(key_start[r0]), int(key_start[last] + counts[last])
        rec = expanded.record[a:b]
        sel = a + np.flatnonzero(kept[rec - r0])
        rec_sel = expanded.record[sel]
        done = put_hashes(f, hashes[sel], rec_off[rec_sel], rec_ts[rec_sel])
        while done < sel.size:  # the record overflowed: roll mid-record, as put_key fails
            f = service._new_file()
            rest = sel[done:]
            done += put_hashes(f, hashes[rest], rec_off[rec_sel[done:]], rec_ts[rec_sel[done:]])
        r0 = last + 1
