"""Queries for ``verify``: keys sampled from an index, absent keys, random windows.

The index stores only key hashes, never keys.  Every engine hashes the key it is given
and from then on sees only that hash, so two keys with the same hash get the same answer
from every engine (the index cannot tell them apart).  :func:`probe_key` uses this: for a
hash sampled from the index it builds a printable key with exactly that hash
(``topic#verify-`` followed by seven characters from ``A`` .. ``_``: Java's
``String.hashCode`` is a polynomial in 31 and ``31**7 > 2**32``, so seven base-31 digits
reach every residue).  Verification by probe keys is therefore as strong as by the real
keys; real keys (``keys=``) are used instead when a caller has them.

:func:`sample_queries` mixes keys present in the index (sampled uniformly over entries, so
hot keys come up more often, as in real traffic), absent keys (hashes no file holds),
time windows (all time; a window around a real entry; open-ended; inverted or empty) and
``max_num`` values from 1 to past any chain length.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.hashing import index_key_hash, java_string_hash
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import MappedIndex, map_regions
from rmqarrow.format.queries import Query
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.kernels.chains import slot_positions
from rmqarrow.kernels.hashing import index_key_hashes
from rmqarrow.kernels.stream import CHUNK, entry_chunks

__all__ = ["IndexSample", "probe_key", "sample_entries", "sample_queries", "shadowed_entries"]

_MOD = 1 << 32
_DIGITS = 7
_BASE_CHAR = 65  # "A"; digits 0..30 are "A".."_"
_MAX_NUMS = (1, 1, 2, 3, 4, 8, 16, 32, 64, 64, 1000)


def probe_key(key_hash: int, prefix: str = "verify#probe-") -> str:
    """A printable key starting with ``prefix`` whose index hash is ``key_hash``."""
    if not 0 <= key_hash < 1 << 31:
        raise InvalidValueError(f"an index key hash is 0 .. 2**31-1, got {key_hash}")
    # hash(prefix + s) = hash(prefix) * 31**7 + sum(c_i * 31**(6-i)); c_i = 65 + d_i.
    base = (java_string_hash(prefix) * 31**_DIGITS) % _MOD
    offset = sum(_BASE_CHAR * 31**k for k in range(_DIGITS)) % _MOD
    r = (key_hash - base - offset) % _MOD
    digits = []
    for _ in range(_DIGITS):
        r, d = divmod(r, 31)
        digits.append(chr(_BASE_CHAR + d))
    key = prefix + "".join(reversed(digits))
    assert index_key_hash(key) == key_hash, (key, key_hash)
    return key


@dataclass(frozen=True)
class IndexSample:
    """Entries drawn from a store: their hash and store time (as the lookup reads it)."""

    key_hashes: np.ndarray  # int32
    store_timestamps: np.ndarray  # int64
    time_min: int
    time_max: int


def sample_entries(files: Sequence[IndexFile], n: int, rng: np.random.Generator) -> IndexSample:
    """``n`` entries drawn uniformly over every entry of ``files`` (with replacement)."""
    counts = np.array([f.entry_count for f in files], dtype=np.int64)
    stamps = [f.begin_timestamp for f in files] + [f.end_timestamp for f in files]
    t_min, t_max = (min(stamps), max(stamps)) if stamps else (0, 0)
    total = int(counts.sum())
    if total == 0 or n <= 0:
        empty32, empty64 = np.empty(0, np.int32), np.empty(0, np.int64)
        return IndexSample(empty32, empty64, t_min, t_max)
    picks = np.sort(rng.integers(0, total, size=n))
    bounds = np.concatenate([[0], np.cumsum(counts)])
    hashes, times = [], []
    # picks are sorted: each file's are one run of them (a mask per file would cost
    # files x picks)
    cuts = np.searchsorted(picks, bounds)
    for i, f in enumerate(files):
        mine = picks[cuts[i] : cuts[i + 1]] - bounds[i] + 1
        if mine.size == 0:
            continue
        m = map_regions(f.path, f.geometry, writable=False)
        try:
            e = m.entries[mine]
            hashes.append(e["key_hash"].astype(np.int32))
            with np.errstate(over="ignore"):
                times.append(np.int64(f.begin_timestamp) + e["time_diff"].astype(np.int64) * 1000)
            del e
        finally:
            m.close()
    return IndexSample(np.concatenate(hashes), np.concatenate(times), t_min, t_max)


def _present_hashes(files: Sequence[IndexFile], candidates: np.ndarray) -> np.ndarray:
    """Which ``candidates`` (int32 hashes) some file of the store holds.

    A stored hash equal to a candidate ``c >= 0`` sits in slot ``c % hash_slot_num``, so
    only the entries of the candidates' slots are compared (found by one streamed pass,
    :func:`rmqarrow.kernels.chains.slot_positions`), not every hash of every file.
    """
    found = np.zeros(candidates.size, dtype=bool)
    cands = np.asarray(candidates, dtype=np.int64)
    for f in files:
        m = map_regions(f.path, f.geometry, writable=False)
        try:
            n = max(f.index_count, 1) - 1
            if cands.size and int(cands.min()) >= 0:
                slots = np.unique(cands % f.geometry.hash_slot_num)
                stored = m.entries["key_hash"][slot_positions(m, slots, n)].astype(np.int64)
            else:  # a negative candidate: compare with every stored hash
                stored = m.entries[1 : n + 1]["key_hash"].astype(np.int64)
            found |= np.isin(cands, stored)
            del stored
        finally:
            m.close()
    return found


def shadowed_entries(
    files: Sequence[IndexFile], limit: int, rng: np.random.Generator
) -> list[tuple[int, int, int]]:
    """Entries an out-of-order store time hides from the native walk, newest file first.

    For an entry L stored earlier than an entry before it in the same file, every older
    entry E of L's slot with a later time is past the cut of a walk with
    ``begin = time(L) + 1``, though E's hash and time match.  Returns up to ``limit``
    ``(hash of E, time(L) + 1, time of E)``: the queries on which a plain filter and the
    native lookup differ (unless the walk was cut even earlier).
    """
    out: list[tuple[int, int, int]] = []
    for f in reversed(files):
        if len(out) >= limit:
            break
        n = max(f.index_count, 1) - 1
        m = map_regions(f.path, f.geometry, writable=False)
        try:
            late = _late_positions(m, n)
            if n < 2 or late.size == 0:  # the usual case: read once, in chunks
                continue
            e = m.entries[1 : n + 1]
            hashes = e["key_hash"].astype(np.int64)
            with np.errstate(over="ignore"):
                t = np.int64(f.begin_timestamp) + e["time_diff"].astype(np.int64) * 1000
            del e
        finally:
            m.close()
        slots = np.fmod(hashes, f.geometry.hash_slot_num)
        for p in rng.permutation(late)[: 4 * limit]:
            below = np.flatnonzero((slots[:p] == slots[p]) & (t[:p] > t[p]))
            if below.size:
                b = int(rng.choice(below))
                out.append((int(hashes[b]), int(t[p]) + 1, int(t[b])))
                if len(out) >= limit:
                    break
    return out


def _late_positions(m: MappedIndex, n: int, chunk: int = CHUNK) -> np.ndarray:
    """Indices ``i`` (0-based, of entries ``1..n``) stored earlier than some entry before
    them, found chunk by chunk with the running maximum carried over: one streamed pass,
    a chunk of memory (store times rise with ``time_diff``, so it is compared alone)."""
    found: list[np.ndarray] = []
    carry = np.iinfo(np.int64).min  # no entry before the first
    for a, b in entry_chunks(m, n, chunk):
        td = m.entries["time_diff"][a:b].astype(np.int64)
        before = np.empty_like(td)
        before[0] = carry
        np.maximum.accumulate(td[:-1], out=before[1:])
        np.maximum(before[1:], carry, out=before[1:])
        found.append(np.flatnonzero(td < before) + (a - 1))
        carry = max(carry, int(before[-1]), int(td[-1]))
        del td, before
    return np.concatenate(found) if found else np.empty(0, dtype=np.int64)


def _window(rng: random.Random, t: int, t_min: int, t_max: int) -> tuple[int, int]:
    """A time window: all time, around ``t``, open-ended, or empty/inverted."""
    span = max(t_max - t_min, 1000)
    kind = rng.random()
    if kind < 0.35:
        return 0, JAVA_LONG_MAX
    if kind < 0.40:
        return t, t  # exactly the entry's read time
    if kind < 0.45:
        return t + 1, JAVA_LONG_MAX  # just after it: the entry itself cuts the walk
    if kind < 0.75:
        return t - rng.randrange(0, span // 2 + 1), t + rng.randrange(0, span // 2 + 1)
    if kind < 0.85:
        return t - rng.randrange(0, 5000), JAVA_LONG_MAX
    if kind < 0.93:
        return 0, t + rng.randrange(0, 5000)
    if kind < 0.97:
        return t + 1000, t - 1000  # begin > end: the native rules still apply
    return t_max + 1 + rng.randrange(0, span), t_max + span + 1  # after every file


def sample_queries(
    files: Sequence[IndexFile],
    n: int,
    *,
    seed: int = 0,
    keys: Sequence[str] | None = None,
    absent_share: float = 0.2,
) -> list[Query]:
    """``n`` queries over a store (``files`` oldest first); see the module doc.

    With ``keys`` (full index keys), present-key queries use those of them the index holds
    and absent-key queries those it does not; otherwise probe keys stand in (same hashes).
    """
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    n_absent = round(n * absent_share) if n > 1 else 0
    n_present = n - n_absent
    shadowed = shadowed_entries(files, n_present // 10, nrng)
    n_present -= len(shadowed)
    sample = sample_entries(files, n_present, nrng)
    t_min, t_max = sample.time_min, sample.time_max
    present: list[tuple[str, int]] = []
    absent: list[str] = []
    by_hash: dict[int, str] = {}
    if keys is not None:
        keys = list(dict.fromkeys(keys))
        hashes = index_key_hashes(keys) if keys else np.empty(0, np.int32)
        held = _present_hashes(files, hashes)
        known = [k for k, h in zip(keys, held, strict=True) if h]
        absent = [k for k, h in zip(keys, held, strict=True) if not h]
        by_hash = dict(zip(hashes.tolist(), keys, strict=True))
        if known:
            sampled = [by_hash.get(int(h)) for h in sample.key_hashes]
            hits = [
                (k, int(t))
                for k, t in zip(sampled, sample.store_timestamps, strict=True)
                if k is not None
            ]
            # keys the sample missed are drawn directly (their time: any in range)
            while len(hits) < n_present:
                hits.append((rng.choice(known), rng.randint(t_min, max(t_max, t_min))))
            present = hits[:n_present]
    else:
        present = [
            (probe_key(int(h)), int(t))
            for h, t in zip(sample.key_hashes, sample.store_timestamps, strict=True)
        ]
    n_absent = n - len(present) - len(shadowed)
    if len(absent) < n_absent:
        cands = [f"verify#absent-{rng.getrandbits(48):012x}" for _ in range(4 * n_absent + 8)]
        held = _present_hashes(files, index_key_hashes(cands))
        absent += [k for k, h in zip(cands, held, strict=True) if not h]
    out = [Query(k, rng.choice(_MAX_NUMS), *_window(rng, t, t_min, t_max)) for k, t in present]
    for h, begin, t in shadowed:
        key = by_hash.get(h) or probe_key(h)
        end = JAVA_LONG_MAX if rng.random() < 0.5 else t + rng.randrange(0, 60_000)
        out.append(Query(key, rng.choice(_MAX_NUMS[4:]), begin, end))
    for k in rng.sample(absent, min(n_absent, len(absent))):
        t = rng.randint(t_min, max(t_max, t_min))
        out.append(Query(k, rng.choice(_MAX_NUMS), *_window(rng, t, t_min, t_max)))
    rng.shuffle(out)
    return out
