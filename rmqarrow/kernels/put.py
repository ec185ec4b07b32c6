"""The bulk put: many keys into one index file, vectorized with numpy.

It leaves exactly the bytes of ``put_key`` on each key in order (rules in
:mod:`rmqarrow.format.rules`):

* :func:`put_keys` is ``put_key`` on each key in order.  With the compiled kernels
  (:mod:`rmqarrow.kernels._numba`) a second thread hashes the next chunk and writes the
  fields of its entries that need no other put, while the main thread chains this one
  in one serial pass straight into the mapped bytes (each put's ``prev_index``, then its
  slot head); a thread that would wait for the other faults in the batch's next pages
  instead (:mod:`rmqarrow.kernels.pages`): 0.1-0.9 CPU-s for a full default file,
  depending on how fast the system hands out fresh memory.  The pure numpy form orders
  each chunk by (slot, position) with one sort of a combined int64 key, so each put's
  ``prev_index`` is the previous put of its slot, or, for the first put of a slot in
  the chunk, the slot's stored head when that is valid at the put's own position
  (``0 < head <= position``); entries go in as one contiguous run, slot heads are
  scattered once.  Either way the header is written once per chunk
  and at most two chunks are in flight, so memory stays bounded whatever the batch.

The kernels work on any open file (:class:`rmqarrow.format.layout.OpenIndex`): its mapped
regions and its in-memory header.  ``IndexService.build_index_batch``
(:mod:`rmqarrow.index.build`) drives them across rolling files.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rmqarrow._crash import crash_point
from rmqarrow.format import rules as _rules
from rmqarrow.format.layout import INDEX_SIZE, MappedIndex, OpenIndex, write_header
from rmqarrow.kernels import _compiled as _kernels
from rmqarrow.kernels.arrays import int64_values
from rmqarrow.kernels.hashing import check_keys, index_key_hashes
from rmqarrow.kernels.pages import Pager, fault_in
from rmqarrow.kernels.walk import committed_heads

__all__ = [
    "CHUNK",
    "put_hashes",
    "put_keys",
    "put_one",
    "repair_uncommitted",
    "uncommitted_entries",
]

#: Puts per vectorized chunk: bounds temporaries to a few tens of MB whatever the batch.
CHUNK = 1 << 20
#: Chunks the compiled put hashes and writes ahead of the one it chains (memory bound).
_IN_FLIGHT = 2
#: Slot heads on a 4 KiB page; a batch of fewer puts than the table has pages leaves
#: most of them untouched, so it is not faulted in (nor dirtied) up front.
_SLOTS_PER_PAGE = 1024


def put_one(f: OpenIndex, key_hash: int, phy_offset: int, store_timestamp: int) -> bool:
    """``IndexFile.putKey`` for one hashed key: False exactly when the file is full."""
    h, regions = f.state, f.regions
    position = h.index_count
    if position >= regions.geometry.index_num:
        return False
    slot = key_hash % regions.geometry.hash_slot_num
    prev = _rules.slot_head_or_invalid(int(regions.slots[slot]), position)
    diff = _rules.time_diff(store_timestamp, h.begin_timestamp)
    regions.entries[position] = (key_hash, phy_offset, diff, prev)
    crash_point("put:entries")
    regions.slots[slot] = position
    crash_point("put:heads")
    if position <= 1:
        h.begin_phy_offset = phy_offset
        h.begin_timestamp = store_timestamp
    if prev == _rules.INVALID_INDEX:
        h.hash_slot_count += 1
    h.index_count = position + 1
    h.end_phy_offset = phy_offset
    h.end_timestamp = store_timestamp
    write_header(regions, h)
    return True


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
    if _kernels.compiled() is not None:
        _put_keys_compiled(f, arr, offsets, stamps, bounds)
        return take
    slot_num = f.regions.geometry.hash_slot_num

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
    f: OpenIndex,
    arr: pa.Array | pa.ChunkedArray,
    offsets: np.ndarray,
    stamps: np.ndarray,
    bounds: list[tuple[int, int]],
) -> None:
    """:func:`put_keys` with the compiled kernels: two sequential passes per chunk.

    A second thread hashes each chunk and writes the fields of its entries that need no
    other put, at most :data:`_IN_FLIGHT` chunks ahead, while the main thread chains them
    in order (each put's ``prev_index``, then its slot head).  Faulting the batch's pages
    in is the work either thread takes whenever it would otherwise wait for the other:
    the main thread for the next chunk's hashes, the second one for room to hash ahead.
    Where fresh memory is slow to hand out (a virtual machine's) the faults are half of
    the build's CPU time, and a fixed share of them per thread left one thread idle while
    the other faulted.  Stopped by an exception, the file may hold the next chunk's
    fields past the header: readers stop at the header's count, later puts overwrite
    them, and the next writable open clears them (:func:`repair_uncommitted`).
    """
    if not bounds:
        return
    module = _kernels.compiled()
    assert module is not None
    h = f.state
    pos0 = h.index_count
    # rule 5: the batch's first put sets a new file's begin timestamp (put_one does that
    # put itself); every later put's time diff counts from it
    skip = 1 if pos0 <= 1 else 0
    begin = np.int64(stamps[0] if skip else h.begin_timestamp)
    words = f.regions.entries.view(np.uint32)
    pager, last = Pager(f, pos0), pos0 + bounds[-1][1]
    room = threading.Semaphore(_IN_FLIGHT)  # released by the main thread per chunk chained
    stop = threading.Event()
    # each chunk's hashes, popped by the main thread once chained (memory stays bounded)
    planned: dict[int, Future[np.ndarray]] = {i: Future() for i in range(len(bounds))}

    def plan(a: int, b: int) -> np.ndarray:
        hashes = index_key_hashes(arr.slice(a, b - a))
        # pages faulted in a piece at a time, not by the writes (one fault a page)
        pager.fault_until(pos0 + b)
        module.put_fields(
            hashes,
            offsets[a:b],
            stamps[a:b],
            begin,
            np.int64(pos0 + a),
            np.int64(skip if a == 0 else 0),
            np.int64(b - a),
            words,
        )
        return hashes

    def plan_all() -> None:  # the second thread
        try:
            for i, (a, b) in enumerate(bounds):
                while not room.acquire(blocking=False):
                    if stop.is_set() or not pager.fault_next(last):
                        room.acquire()  # nothing left to fault: wait for the main thread
                        break
                if stop.is_set():
                    return
                planned[i].set_result(plan(a, b))
            while not stop.is_set() and pager.fault_next(last):
                pass
        except BaseException as e:  # to the main thread, which may wait for any chunk
            for pending in list(planned.values()):
                if not pending.done():
                    pending.set_exception(e)
            raise

    with ThreadPoolExecutor(1, thread_name_prefix="rmqarrow-bulk") as pool:
        helper = pool.submit(plan_all)
        try:
            if bounds[-1][1] >= f.regions.geometry.hash_slot_num // _SLOTS_PER_PAGE:
                fault_in(f, -1, 0)  # the slot table: so many puts write heads on every page
            for i, (a, b) in enumerate(bounds):
                while not planned[i].done() and pager.fault_next(last):
                    pass
                hashes = planned[i].result()
                del planned[i]  # only once done: the second thread sets it by its key
                _put_run(f, hashes, offsets[a:b], stamps[a:b], fields_written=True)
                room.release()
        finally:
            stop.set()
            room.release()  # wakes the second thread if it waits for room
        helper.result()


def _put_run(
    f: OpenIndex,
    hashes: np.ndarray,
    offsets: np.ndarray,
    stamps: np.ndarray,
    fields_written: bool = False,
) -> None:
    """The compiled :func:`put_one` over puts that fit; the first put of a file (rule 5)
    goes through :func:`put_one` itself.  ``fields_written``: :func:`put_fields` has
    already run on these puts.  The header is written once, at the end.

    Each put's ``prev_index`` is written before its slot head, and the header follows
    them all, so an interruption anywhere leaves heads that point at written entries
    only (:func:`repair_uncommitted` rolls them back to the header on the next open).
    """
    h = f.state
    module = _kernels.compiled()
    assert module is not None
    if not hashes.size:
        return
    if h.index_count <= 1:
        put_one(f, int(hashes[0]), int(offsets[0]), int(stamps[0]))
        hashes, offsets, stamps = hashes[1:], offsets[1:], stamps[1:]
        if not hashes.size:
            return
    pos0, n = np.int64(h.index_count), np.int64(hashes.size)
    words = f.regions.entries.view(np.uint32)
    if not fields_written:
        module.put_fields(
            hashes, offsets, stamps, np.int64(h.begin_timestamp), pos0, np.int64(0), n, words
        )
    crash_point("put:entries")
    links = (hashes, np.int64(f.regions.geometry.hash_slot_num), pos0)
    slots, half = f.regions.slots.view(np.uint32), np.int64(n // 2)
    empty = module.put_links(*links, np.int64(0), half, slots, words)
    crash_point("put:some-heads")
    empty += module.put_links(*links, half, n, slots, words)
    crash_point("put:heads")
    h.hash_slot_count += int(empty)
    h.index_count += hashes.size
    h.end_phy_offset = int(offsets[-1])
    h.end_timestamp = int(stamps[-1])
    write_header(f.regions, h)


def put_hashes(f: OpenIndex, hashes: np.ndarray, offsets: np.ndarray, stamps: np.ndarray) -> int:
    """:func:`put_one` each (hash, offset, timestamp) in order until full; returns the count."""
    done = 0
    total = min(hashes.size, max(f.regions.geometry.index_num - f.state.index_count, 0))
    module = _kernels.compiled()
    if module is not None:
        _put_run(f, hashes[:total].astype(np.int32, copy=False), offsets[:total], stamps[:total])
        return total
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
    as :func:`put_one` on each put in order."""
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
    crash_point("put:entries")
    new_heads = s_pos[last].byteswap()
    half = new_heads.size // 2
    raw_slots[plan.head_slot[:half]] = new_heads[:half]
    crash_point("put:some-heads")
    raw_slots[plan.head_slot[half:]] = new_heads[half:]
    crash_point("put:heads")

    h.hash_slot_count += int(np.count_nonzero(heads == _rules.INVALID_INDEX))
    h.index_count = stop
    h.end_phy_offset = int(offsets[-1])
    h.end_timestamp = int(stamps[-1])
    write_header(f.regions, f.state)


# -- crash repair ----------------------------------------------------------------------------

#: Entries scanned per step when clearing an interrupted batch's tail.
_TAIL_BLOCK = 1 << 16


def uncommitted_entries(regions: MappedIndex, count: int) -> int:
    """How many entries from position ``count`` on a writer wrote without counting them in
    the header (killed, or still writing, between the entries and the header): the run
    written from about position ``count`` on (a block whose last entry is written
    continues it), read a block at a time, never the whole unwritten rest of the file."""
    raw = regions.entries.view(np.uint8).reshape(-1, INDEX_SIZE)
    end = count
    while end < regions.geometry.index_num:
        stop = min(end + _TAIL_BLOCK, regions.geometry.index_num)
        nonzero = raw[end:stop].any(axis=1)
        if not nonzero.any():
            break
        end += int(np.flatnonzero(nonzero)[-1]) + 1
        if end < stop:
            break
    return end - count


def repair_uncommitted(f: OpenIndex) -> str | None:
    """Bring a writable file back to its header after an interrupted batch; what was done.

    Writers write each entry before the slot head that points at it, and the header
    last (see :func:`put_keys`; the compiled put also writes the next chunk's fields
    ahead).  A crash before the header leaves entries past its ``indexCount`` and heads
    pointing at them; resuming on top would cut chains and miscount ``hashSlotCount``.  Here each
    head ``>= indexCount`` is walked back to its newest committed position
    (:func:`rmqarrow.kernels.walk.committed_heads`) and the uncommitted entries are
    zeroed, so the file is byte-identical to one whose writer stopped at the header's
    count.  Returns None when the file was already consistent.
    """
    regions, count = f.regions, max(f.state.index_count, 1)
    heads = regions.slots.astype(np.int64)
    bad = np.flatnonzero(heads >= count)
    if bad.size:
        fixed = committed_heads(regions, heads[bad], bad, count)
        regions.slots[bad] = np.maximum(fixed, 0)  # a damaged head: an empty slot
    end = count + uncommitted_entries(regions, count)
    if end > count:
        regions.entries.view(np.uint8).reshape(-1, INDEX_SIZE)[count:end] = 0
    if not bad.size and end == count:
        return None
    return (
        f"{regions.path}: an interrupted write was rolled back to the header "
        f"(indexCount {count}): {bad.size} slot head(s) reset, {end - count} uncommitted "
        f"entr{'y' if end - count == 1 else 'ies'} cleared; a resumed build puts them again"
    )
