"""Whole-file passes over the entries: the chain check, and the entries of some slots.

:func:`slot_positions` finds every entry of some slots (what a set-based SQL lookup reads:
the slot's entries, whether or not a damaged chain still reaches them) in one streamed
pass over the stored hashes, chunk by chunk, each chunk's pages released after it, so the
memory it holds does not grow with the file.

The chain check: does every chain link the slot's entries in position order?

A file RocketMQ writes has, for every entry, ``prev_index`` = the previous position of the
same slot (0 for the first) and, for every slot, the head = its last position.  With numba
:func:`chain_links` checks that in one pass over the entries (a slot's last position kept
in a table as the pass goes); without it returns None and the caller uses its sort-based
numpy form, which gives the same findings.
"""

from __future__ import annotations

import numpy as np

from rmqarrow.format.layout import MappedIndex
from rmqarrow.kernels import _compiled as _kernels
from rmqarrow.kernels.stream import CHUNK, entry_chunks

__all__ = ["chain_links", "slot_positions"]


def chain_links(
    m: MappedIndex, n: int, max_examples: int
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | None:
    """For entries ``1..n`` of ``m``: (count of wrong ``prev_index`` values, the first
    ``max_examples`` such positions, their expected values, the expected slot heads), or
    None without the compiled kernels."""
    kernels = _kernels.compiled()
    if kernels is None:
        return None
    slot_num = m.geometry.hash_slot_num
    heads = np.zeros(slot_num, dtype=np.int32)
    last_neg = np.zeros(slot_num, dtype=np.int32)
    bad = np.zeros(max_examples, dtype=np.int64)
    expected = np.zeros(max_examples, dtype=np.int64)
    words = m.entries.view(np.uint32)
    count = 0
    for a, b in entry_chunks(m, n):  # resident memory: one chunk, whatever the file size
        count = int(
            kernels.chain_links(
                words,
                np.int64(a),
                np.int64(b),
                np.int64(slot_num),
                heads,
                last_neg,
                bad,
                expected,
                np.int64(count),
            )
        )
    shown = min(count, max_examples)
    return count, bad[:shown], expected[:shown], heads


def slot_positions(m: MappedIndex, wanted: np.ndarray, n: int) -> np.ndarray:
    """The positions ``1..n`` (ascending) whose slot is in ``wanted`` (slot numbers).

    Stored hashes are read chunk by chunk; after each chunk its pages are dropped from
    this process (``MADV_DONTNEED`` on a read-only map: they stay in the page cache), so
    the resident memory of a pass stays one chunk whatever the file size.
    """
    slot_num = m.geometry.hash_slot_num
    mask = np.zeros(slot_num, dtype=np.bool_)
    mask[wanted] = True
    kernels = _kernels.compiled()
    words = m.entries.view(np.uint32)
    found: list[np.ndarray] = []
    for a, b in entry_chunks(m, n, CHUNK):
        if kernels is not None:
            out = np.empty(b - a, dtype=np.int64)
            k = int(
                kernels.slot_members(words, np.int64(a), np.int64(b), np.int64(slot_num), mask, out)
            )
            found.append(out[:k].copy())
        else:
            h = m.entries["key_hash"][a:b].astype(np.int64)
            keep = h >= 0
            keep[keep] = mask[h[keep] % slot_num]
            found.append(np.flatnonzero(keep) + a)
    return np.concatenate(found) if found else np.empty(0, dtype=np.int64)
