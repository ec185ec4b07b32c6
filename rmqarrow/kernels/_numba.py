"""The compiled kernels (numba, the ``fast`` extra): key hash and bulk put.

* :func:`java_hashes` / :func:`index_hashes`: Java ``String.hashCode`` of UTF-8 keys.  A key
  of at most 64 bytes whose bytes are all ASCII (one UTF-16 unit each) is hashed as a dot
  product ``sum(u_i * 31**(n-1-i))`` in wrapping uint32 arithmetic, over a whole number of
  16-byte blocks: the bytes past the key's end meet zero weights, so the loop has no tail
  and LLVM vectorizes it (8 uint32 lanes; about 4x the serial multiply-add chain).  Any
  other key takes the exact serial path, which decodes UTF-8 to UTF-16 units (a non-BMP
  character becomes a surrogate pair, a surrogate written with ``surrogatepass`` its own
  unit).
* :func:`put_fields`, :func:`put_links`: :func:`put_one` for a run of puts, straight into
  the big-endian map: the fields that need no other put (on the hashing thread, ahead),
  then, in order, each put's ``prev_index`` and its slot head (Java's order); the heads
  are prefetched a few dozen puts ahead.
* :func:`walk_chains`: the bulk lookup's walk, :data:`WALKERS` chains interleaved, each
  step's read prefetched a turn ahead (about twice the speed of walking in rounds, a
  gather of every walking query's entry and then the rules, as the numpy walk does);
  :func:`slot_heads` reads the queries' slot heads, :func:`hit_rows` and :func:`place_hits`
  put the hits in native order.

Indices are unsigned where it matters: numba adds a negative-index wraparound check to
every signed index, which stops LLVM from vectorizing.

Importing this module raises ImportError without numba; :mod:`rmqarrow.kernels._compiled` then
reports no compiled kernels and the callers use their pure-numpy forms, which give
identical results (the tests run both).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import cgutils, types
from numba.extending import intrinsic

__all__ = [
    "chain_links",
    "hit_rows",
    "index_hashes",
    "java_hashes",
    "place_hits",
    "put_fields",
    "put_links",
    "slot_heads",
    "slot_members",
    "walk_chains",
]

_U = np.uint64
_U32 = np.uint32
_I32 = np.int32
_I64 = np.int64
#: Longest key (bytes) of the vectorized path; the weight table holds twice that.
_WIDTH = 64


def _weights() -> np.ndarray:
    """``w[j] = 31**(WIDTH-1-j) mod 2**32`` for j < WIDTH, then WIDTH zeros."""
    w = np.zeros(2 * _WIDTH, dtype=np.uint32)
    p = 1
    for m in range(_WIDTH):
        w[_WIDTH - 1 - m] = p
        p = (p * 31) & 0xFFFFFFFF
    return w


_WEIGHTS = _weights()


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _serial_hash(data: np.ndarray, k: np.uint64, stop: np.uint64) -> np.uint64:  # pragma: no cover
    # uint64 arithmetic wraps mod 2**64, so its low 32 bits are Java's int arithmetic.
    # While the next eight bytes are ASCII they are folded at once:
    # h*31^8 + sum(u_j * 31^(7-j)); the rest is decoded from UTF-8 unit by unit.
    mask6 = _U(0x3F)
    h = _U(0)
    while k + _U(8) <= stop:
        u0 = _U(data[k])
        u1 = _U(data[k + _U(1)])
        u2 = _U(data[k + _U(2)])
        u3 = _U(data[k + _U(3)])
        u4 = _U(data[k + _U(4)])
        u5 = _U(data[k + _U(5)])
        u6 = _U(data[k + _U(6)])
        u7 = _U(data[k + _U(7)])
        if (u0 | u1 | u2 | u3 | u4 | u5 | u6 | u7) >= _U(0x80):
            break
        h = (
            h * _U(852891037441)
            + u0 * _U(27512614111)
            + u1 * _U(887503681)
            + u2 * _U(28629151)
            + u3 * _U(923521)
            + u4 * _U(29791)
            + u5 * _U(961)
            + u6 * _U(31)
            + u7
        )
        k += _U(8)
    while k < stop:
        b0 = _U(data[k])
        if b0 < _U(0x80):
            h = h * _U(31) + b0
            k += _U(1)
        elif b0 < _U(0xE0):
            h = h * _U(31) + (((b0 & _U(0x1F)) << _U(6)) | (_U(data[k + _U(1)]) & mask6))
            k += _U(2)
        elif b0 < _U(0xF0):
            cp = (
                ((b0 & _U(0x0F)) << _U(12))
                | ((_U(data[k + _U(1)]) & mask6) << _U(6))
                | (_U(data[k + _U(2)]) & mask6)
            )
            h = h * _U(31) + cp
            k += _U(3)
        else:
            cp = (
                ((b0 & _U(0x07)) << _U(18))
                | ((_U(data[k + _U(1)]) & mask6) << _U(12))
                | ((_U(data[k + _U(2)]) & mask6) << _U(6))
                | (_U(data[k + _U(3)]) & mask6)
            )
            v = cp - _U(0x10000)
            h = h * _U(31) + (_U(0xD800) + (v >> _U(10)))
            h = h * _U(31) + (_U(0xDC00) + (v & _U(0x3FF)))
            k += _U(4)
    return h & _U(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _ascii_pass(  # pragma: no cover
    offsets: np.ndarray,
    data: np.ndarray,
    weights: np.ndarray,
    out: np.ndarray,
    slow: np.ndarray,
) -> int:
    # offsets are unsigned (see the module docstring); key i is data[offsets[i]:offsets[i+1]].
    # Keys this loop cannot hash exactly are flagged in ``slow`` (counted in the result).
    size = _U(data.size)
    width = _U(_WIDTH)
    flagged = 0
    for i in range(offsets.size - 1):
        k = _U(offsets[i])
        n = _U(offsets[i + 1]) - k
        span = (n + _U(15)) & ~_U(15)  # whole 16-byte blocks; weights past the key are 0
        if n > width or k + span > size:
            slow[i] = True
            flagged += 1
            continue
        base = width - n
        h = _U32(0)
        seen = _U32(0)
        j = _U(0)
        while j < span:
            u = _U32(data[k + j])
            h = _U32(h + _U32(u * weights[base + j]))
            seen = _U32(seen | u)
            j += _U(1)
        out[i] = h
        if seen >= _U32(0x80):  # a byte past the key may set it: then merely slower
            slow[i] = True
            flagged += 1
    return flagged


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _serial_pass(  # pragma: no cover
    offsets: np.ndarray, data: np.ndarray, out: np.ndarray, slow: np.ndarray
) -> None:
    for i in range(offsets.size - 1):
        if slow[i]:
            out[i] = _U32(_serial_hash(data, _U(offsets[i]), _U(offsets[i + 1])))


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _abs_pass(out: np.ndarray) -> None:  # pragma: no cover
    # indexKeyHashMethod: abs of the int32 hash, and Integer.MIN_VALUE -> 0
    for i in range(out.size):
        s = _I32(out[i])
        out[i] = _U32(0) if s == _I32(-2147483648) else _U32(-s if s < 0 else s)


def _run_hash(offsets: np.ndarray, data: np.ndarray, absolute: bool) -> np.ndarray:
    out = np.empty(offsets.size - 1, dtype=np.uint32)
    if out.size:
        unsigned = offsets.view(np.uint64 if offsets.itemsize == 8 else np.uint32)
        slow = np.zeros(out.size, dtype=np.bool_)
        if _ascii_pass(unsigned, data, _WEIGHTS, out, slow):
            _serial_pass(unsigned, data, out, slow)
        if absolute:
            _abs_pass(out)
    return out


def java_hashes(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Java ``String.hashCode`` (as uint32) of each key ``data[offsets[i]:offsets[i+1]]``.

    ``offsets`` are non-negative int32 or int64; ``data`` may extend past the last key
    (the vectorized path reads up to 15 bytes past a key when they are there).
    """
    return _run_hash(offsets, data, False)


def index_hashes(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """RocketMQ's ``indexKeyHashMethod`` (abs of the Java hash, MIN -> 0) as int32."""
    return _run_hash(offsets, data, True).view(np.int32)


# -- bulk put and lookup over the mapped file (big-endian words) ----------------------------


@numba.njit(cache=True, nogil=True, inline="always")
def _bswap(x: np.uint32) -> np.uint32:  # pragma: no cover
    # LLVM turns this into one bswap instruction
    x = _U32(x)
    return _U32(
        (x >> _U32(24))
        | ((x >> _U32(8)) & _U32(0xFF00))
        | ((x << _U32(8)) & _U32(0xFF0000))
        | (x << _U32(24))
    )


def _prefetch_typing(typingctx, ary, index):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``llvm.prefetch`` of ``ary[index]`` (a read, kept in every cache level)."""
    sig = types.void(ary, index)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        aryty = signature.args[0]
        arr = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
            context, builder, aryty, arr, [args[1]]
        )
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
            builder.module, fnty, "llvm.prefetch.p0i8"
        )
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


_prefetch: Any = intrinsic(_prefetch_typing)

#: Slot heads prefetched ahead by the lookup's head reads: enough misses in flight to
#: hide the memory latency of random reads of the slot table.
_AHEAD = 24
#: ... and by the bulk put, whose entry writes compete with the reads (measured: 16 ahead
#: 0.39 s for a full file, 32 0.38 s, 48 0.37 s, 64 0.38 s).
_PUT_AHEAD = 48


@numba.njit(cache=True, nogil=True, inline="always")
def _remainder_magic(d: np.int64) -> np.uint64:  # pragma: no cover
    """The constant of :func:`_remainder` for divisor ``d`` (1 <= d < 2**32)."""
    return _U(0xFFFFFFFFFFFFFFFF) // _U(d) + _U(1)  # wraps to 0 for d == 1: still right


@numba.njit(cache=True, nogil=True, inline="always")
def _remainder(a: np.uint32, d: np.int64, magic: np.uint64) -> np.uint64:  # pragma: no cover
    """``a % d`` for 32-bit unsigned ``a`` and ``d`` by two multiplications (Lemire's
    "faster remainder by direct computation", exact for every 32-bit ``a`` and ``d``):
    a hardware division costs 10-40 cycles, and a slot is found for every put."""
    low = magic * _U(a)
    dd = _U(d)
    return ((low >> _U(32)) * dd + (((low & _U(0xFFFFFFFF)) * dd) >> _U(32))) >> _U(32)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def put_fields(  # pragma: no cover
    hashes: np.ndarray,
    offsets: np.ndarray,
    stamps: np.ndarray,
    begin_ts: np.int64,
    pos0: np.int64,
    first: np.int64,
    stop: np.int64,
    words: np.ndarray,
) -> None:
    """The fields of puts ``first .. stop-1`` that do not depend on other puts (key hash,
    offset, time diff: all but ``prev_index``), put ``i`` at position ``pos0 + i``, into
    the big-endian entries (``words``, raw uint32, five a put): one sequential sweep.

    A run's fields can be written ahead, on another thread: nothing points at an entry
    until :func:`put_links` has written its ``prev_index`` and then its slot's head.
    """
    for i in range(first, stop):
        diff = _I64(0)  # rule 4
        if begin_ts > 0:
            delta = _I64(_U(stamps[i]) - _U(begin_ts))  # wraps like Java's long
            if delta > 0:
                diff = min(delta // 1000, _I64(2147483647))
        off = _U(offsets[i])
        e = _U(pos0 + i) * _U(5)
        words[e] = _bswap(_U32(hashes[i]))
        words[e + _U(1)] = _bswap(_U32(off >> _U(32)))
        words[e + _U(2)] = _bswap(_U32(off & _U(0xFFFFFFFF)))
        words[e + _U(3)] = _bswap(_U32(diff))


@numba.njit(cache=True, nogil=True, boundscheck=False)
def put_links(  # pragma: no cover
    hashes: np.ndarray,
    slot_num: np.int64,
    pos0: np.int64,
    first: np.int64,
    stop: np.int64,
    slots: np.ndarray,
    words: np.ndarray,
) -> np.int64:
    """Chain puts ``first .. stop-1`` (fields written by :func:`put_fields`), in order:
    each put's ``prev_index`` (rule 2), then its slot's head, Java's order, so an
    interruption leaves heads that point at written entries only (the compiler keeps
    the two stores in that order: as far as it knows the arrays may overlap).  ``slots``
    is the slot table, ``words`` the entries, both raw big-endian uint32.  Returns how
    many puts found their slot empty (rule 3).

    The head of the put :data:`_PUT_AHEAD` on is prefetched, so that many random reads of
    the slot table are in flight.
    """
    magic = _remainder_magic(slot_num)
    empty = 0
    for i in range(first, stop):
        if i + _PUT_AHEAD < stop:
            _prefetch(slots, _remainder(_U32(hashes[i + _PUT_AHEAD]), slot_num, magic))
        s = _remainder(_U32(hashes[i]), slot_num, magic)  # index hashes are >= 0
        pos = pos0 + i
        head = _I64(_I32(_bswap(slots[s])))
        prev = head if 0 < head <= pos else _I64(0)  # rule 2
        if prev == 0:
            empty += 1  # rule 3
        words[_U(pos) * _U(5) + _U(4)] = _bswap(_U32(prev))
        slots[s] = _bswap(_U32(pos))
    return _I64(empty)


# -- bulk lookup: the queries of a block walk their chains interleaved -------------------


@numba.njit(cache=True, nogil=True, boundscheck=False)
def slot_heads(  # pragma: no cover
    hashes: np.ndarray,
    slots: np.ndarray,
    slot_num: np.int64,
    out: np.ndarray,
) -> None:
    """The stored head of each index hash's slot into ``out`` (int64), read from the slot
    table as raw big-endian uint32 words, prefetching :data:`_AHEAD` keys on (about twice
    numpy's gather)."""
    n = hashes.size
    magic = _remainder_magic(slot_num)  # index hashes are >= 0: the remainder is Java's
    for i in range(min(_AHEAD, n)):
        _prefetch(slots, _remainder(_U32(hashes[i]), slot_num, magic))
    for i in range(n):
        if i + _AHEAD < n:
            _prefetch(slots, _remainder(_U32(hashes[i + _AHEAD]), slot_num, magic))
        out[i] = _I64(_I32(_bswap(slots[_remainder(_U32(hashes[i]), slot_num, magic)])))


@numba.njit(cache=True, nogil=True, boundscheck=False)
def hit_rows(  # pragma: no cover
    counts: np.ndarray,
    start: np.ndarray,
    rows: np.ndarray,
) -> None:
    """The lookup's query column: ``counts[i]`` rows of query ``i``, in query order, into
    ``rows``; ``start[i]`` gets query ``i``'s first row.  (Both arrays are allocated by
    the caller: numpy's allocator gives large arrays huge pages, this module's would fault
    them in 4 KiB at a time.)"""
    total = 0
    for i in range(counts.size):
        start[i] = total
        for j in range(counts[i]):
            rows[total + j] = i
        total += counts[i]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def place_hits(  # pragma: no cover
    start: np.ndarray,
    query: np.ndarray,
    rank: np.ndarray,
    offset: np.ndarray,
    out: np.ndarray,
) -> None:
    """The lookup's offset column: hit ``k`` (of query ``query[k]``, its ``rank[k]``-th)
    goes to row ``start[query[k]] + rank[k]`` of ``out`` (``start`` from
    :func:`hit_rows`)."""
    for k in range(query.size):
        out[start[query[k]] + rank[k]] = offset[k]


@numba.njit(cache=True, nogil=True, inline="always")
def _prefetch_entry(words: np.ndarray, p: np.int64) -> None:  # pragma: no cover
    """Prefetch both ends of entry ``p`` (five words at ``5 * p``): a 20-byte entry
    crosses a 64-byte cache line one time in four, and the walk reads its last
    words (time diff, ``prev``) first, so prefetching the first word alone left those
    reads to miss while every other walker waited (measured: 5-10% of the walk's CPU)."""
    _prefetch(words, _U(p) * _U(5))
    _prefetch(words, _U(p) * _U(5) + _U(4))  # the same line as the first, mostly: a hit


#: Queries walked at once, interleaved, by :func:`walk_chains`: each holds one prefetched
#: read in flight, enough to hide the memory latency without overflowing the core's
#: outstanding-miss buffers (measured best at 24; 32 and more were slower).
WALKERS = 24


@numba.njit(cache=True, nogil=True, boundscheck=False)
def walk_chains(  # pragma: no cover
    queries: np.ndarray,
    hashes: np.ndarray,
    heads: np.ndarray,
    left0: np.ndarray,
    begin: np.ndarray,
    end: np.ndarray,
    uniform: bool,
    all_time: bool,
    begin_ts: np.int64,
    count: np.int64,
    limit: np.int64,
    words: np.ndarray,
    held: np.ndarray,
    hq: np.ndarray,
    hr: np.ndarray,
    ho: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bulk lookup's walk (rules 8-10) of ``queries`` over one file.

    :data:`WALKERS` queries walk their chains interleaved: each step takes the next
    walker in turn, applies the match and stop rules to the entry it stands on (prefetched,
    both its cache lines, when it moved there, ``WALKERS`` steps ago), and then moves it to
    ``prev`` (prefetching that entry) or, its walk over, gives it the next query.  So
    ``WALKERS`` random reads of the map are always in flight and all the walk's state stays
    in the L1 cache.
    ``heads`` are the queries' slot heads as read by the caller (committed ones: a live
    writer's heads are walked back first); ``words`` is the entries as raw big-endian
    uint32; ``hashes``, ``left0``, ``begin`` and ``end`` are per query of ``queries``
    (``begin``/``end`` one value when ``uniform``).  A hit is recorded with its rank
    ``held[q]`` (then incremented).  A query whose chain turns forward (a damaged file)
    stops and is returned in ``forward``; its hits in this file are among those returned,
    for the caller to drop and walk again exactly.  ``hq``, ``hr``, ``ho`` are the
    caller's buffers for the hits (of one size, not empty; grown here when full).
    Returns (hit query, hit rank, hit offset, forward queries).
    """
    fwd = np.empty(16, dtype=np.int64)
    walker = np.empty((3, WALKERS), dtype=np.int64)  # query index (-1: idle), position, left
    state = np.zeros(5, dtype=np.int64)  # next query, walkers busy, turn, hits, forward
    for turn in range(WALKERS):
        state[1] += _next_query(turn, heads, left0, count, limit, state, walker, words)
    # The walk stops whenever an output buffer is full, to grow it here: reassigning an
    # array inside the walk's loop would put reference counting (atomic instructions,
    # which wait for every read in flight) into each step.
    while True:
        _walk_steps(
            queries,
            hashes,
            heads,
            left0,
            begin,
            end,
            uniform,
            all_time,
            begin_ts,
            count,
            limit,
            words,
            held,
            state,
            walker,
            hq,
            hr,
            ho,
            fwd,
        )
        if state[1] == 0:
            break
        if state[3] == hq.size:
            hq = _grow(hq)
            hr = _grow(hr)
            ho = _grow(ho)
        if state[4] == fwd.size:
            fwd = _grow(fwd)
    nh, nf = state[3], state[4]
    return hq[:nh], hr[:nh], ho[:nh], fwd[:nf]


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _next_query(  # pragma: no cover
    turn: int,
    heads: np.ndarray,
    left0: np.ndarray,
    count: np.int64,
    limit: np.int64,
    state: np.ndarray,
    walker: np.ndarray,
    words: np.ndarray,
) -> int:
    """Put the next query with a chain to walk on walker ``turn``; 1 if one was left."""
    k = heads.size
    while state[0] < k:
        i = state[0]
        state[0] += 1
        p = heads[i]
        if p > 0 and p <= count and p < limit and left0[i] > 0:
            walker[0, turn] = i
            walker[1, turn] = p
            walker[2, turn] = left0[i]
            _prefetch_entry(words, p)
            return 1
    walker[0, turn] = -1
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _walk_steps(  # pragma: no cover
    queries: np.ndarray,
    hashes: np.ndarray,
    heads: np.ndarray,
    left0: np.ndarray,
    begin: np.ndarray,
    end: np.ndarray,
    uniform: bool,
    all_time: bool,
    begin_ts: np.int64,
    count: np.int64,
    limit: np.int64,
    words: np.ndarray,
    held: np.ndarray,
    state: np.ndarray,
    walker: np.ndarray,
    hq: np.ndarray,
    hr: np.ndarray,
    ho: np.ndarray,
    fwd: np.ndarray,
) -> None:
    """:func:`walk_chains`' steps until every walker is idle or an output buffer is full."""
    cap = min(count, limit - 1)  # a valid prev is 1..cap
    busy, turn, nh, nf = state[1], state[2], state[3], state[4]
    b = begin[0]
    e = end[0]
    while busy > 0 and nh < hq.size and nf < fwd.size:
        c = walker[0, turn]
        if c >= 0:
            p = walker[1, turn]
            lft = walker[2, turn]
            w = _U(p) * _U(5)
            prev = _I64(0)
            go = False
            diff = _I64(_I32(_bswap(words[w + _U(3)])))
            if diff >= 0:
                prev = _I64(_I32(_bswap(words[w + _U(4)])))
                if not uniform:
                    b = begin[c]
                    e = end[c]
                hit = _I32(_bswap(words[w])) == hashes[c]
                older = False
                if not all_time:
                    t = begin_ts + diff * 1000  # wraps like Java's long
                    hit = hit and b <= t and t <= e
                    older = t < b
                if hit:
                    q = queries[c]
                    hq[nh] = q
                    hr[nh] = held[q]
                    high = _U(_bswap(words[w + _U(1)]))
                    low = _U(_bswap(words[w + _U(2)]))
                    ho[nh] = _I64((high << _U(32)) | low)
                    nh += 1
                    held[q] += 1
                    lft -= 1
                if not (older or prev <= 0 or prev > cap):
                    if prev > p:
                        fwd[nf] = queries[c]
                        nf += 1
                    elif prev < p and lft > 0:
                        go = True
            if go:
                walker[1, turn] = prev
                walker[2, turn] = lft
                _prefetch_entry(words, prev)
            else:
                busy += _next_query(turn, heads, left0, count, limit, state, walker, words) - 1
        turn += 1
        if turn == WALKERS:
            turn = 0
    state[1], state[2], state[3], state[4] = busy, turn, nh, nf


@numba.njit(cache=True, nogil=True)
def _grow(a: np.ndarray) -> np.ndarray:  # pragma: no cover
    out = np.empty(max(2 * a.size, 16), dtype=a.dtype)
    out[: a.size] = a
    return out


@numba.njit(cache=True, nogil=True, boundscheck=False)
def chain_links(  # pragma: no cover
    words: np.ndarray,
    a: np.int64,
    b: np.int64,
    slot_num: np.int64,
    heads: np.ndarray,
    last_neg: np.ndarray,
    bad: np.ndarray,
    expected: np.ndarray,
    count: np.int64,
) -> np.int64:
    """One pass over entries ``a..b-1`` (raw big-endian words), continuing a pass that
    ended at ``a``: each entry's expected ``prev_index`` is the last earlier position of
    its slot (Java remainder of its hash; 0 for the first).  Updates ``heads`` (the last
    position of each slot >= 0) and ``last_neg`` (slots < 0: a damaged hash), records the
    positions whose stored prev differs in ``bad`` (their expected value in
    ``expected``) from index ``count`` on while there is room; returns the new count."""
    for p in range(a, b):
        w = _U(p) * _U(5)
        h = _I64(_I32(_bswap(words[w])))
        s = h % slot_num
        if h < 0 and s != 0:  # Java's remainder keeps the dividend's sign
            s -= slot_num
        if s >= 0:
            want = _I64(heads[s])
            heads[s] = p
        else:
            want = _I64(last_neg[-s])
            last_neg[-s] = p
        if _I64(_I32(_bswap(words[w + _U(4)]))) != want:
            if count < bad.size:
                bad[count] = p
                expected[count] = want
            count += 1
    return count


@numba.njit(cache=True, nogil=True, boundscheck=False)
def slot_members(  # pragma: no cover
    words: np.ndarray,
    start: np.int64,
    stop: np.int64,
    slot_num: np.int64,
    wanted: np.ndarray,
    out: np.ndarray,
) -> np.int64:
    """Positions ``start..stop-1`` whose slot (Java remainder of the stored hash) is
    ``wanted`` (a bool per slot), written to ``out``; returns how many."""
    k = 0
    for p in range(start, stop):
        h = _I64(_I32(_bswap(words[_U(p) * _U(5)])))
        if h >= 0 and wanted[h % slot_num]:
            out[k] = p
            k += 1
    return _I64(k)
