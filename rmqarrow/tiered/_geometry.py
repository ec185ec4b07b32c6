"""Finding a tiered file's geometry (rule 30).

What a path is (a tiered file of either form, a folder of them) is decided once, by
:func:`rmqarrow.format.detect.detect`.  The compacted form states its ``S`` (slot 0 always
starts right after the slot table); the local form's ``S`` and ``N`` are broker
configuration, so they are taken from the defaults when the size fits, else from the only
geometry under which the newest item heads its own slot.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rmqarrow.errors import CorruptIndexError, StoreNotFoundError, UsageError
from rmqarrow.format.layout import GeometryHint
from rmqarrow.tiered.layout.binary import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    HEADER_SIZE,
    HEADER_STRUCT,
    ITEM_SIZE,
    SLOT_SIZE,
    unsealed_size,
)

__all__ = ["local_geometry"]

#: Local files larger than this are not searched for their geometry (pass S and N).
_SEARCH_LIMIT = 1 << 30


def _head(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def _candidates(words: np.ndarray, size: int, item_count: int) -> list[tuple[int, int]]:
    """Every (S, N) with ``28 + 8S + 32N == size`` under which item ``itemCount`` heads the
    slot of its hash, and the record after it is empty."""
    rest = size - HEADER_SIZE
    # 8S + 32N = rest: S ranges over values with rest - 8S a positive multiple of 32
    if rest % SLOT_SIZE:
        return []
    s = np.arange(rest % ITEM_SIZE // SLOT_SIZE or 4, rest // SLOT_SIZE, 4, dtype=np.int64)
    s = s[(s >= 1) & ((rest - SLOT_SIZE * s) % ITEM_SIZE == 0)]
    n = (rest - SLOT_SIZE * s) // ITEM_SIZE
    keep = n > item_count
    s, n = s[keep], n[keep]
    item_at = HEADER_SIZE + SLOT_SIZE * s + ITEM_SIZE * item_count
    h = words[item_at // 4].astype(np.int64)
    slot = np.fmod(h, s)
    pos = HEADER_SIZE + SLOT_SIZE * slot
    ok = pos >= HEADER_SIZE
    head = np.zeros(len(s), np.int64)
    head[ok] = words[pos[ok] // 4]
    ok &= head == item_count
    nxt_at = item_at + ITEM_SIZE
    has_next = n > item_count + 1
    blank = np.ones(len(s), bool)
    for w in range(ITEM_SIZE // 4):
        at = nxt_at[has_next & ok] // 4 + w
        blank[np.flatnonzero(has_next & ok)] &= words[at] == 0
    ok &= blank
    return list(zip(s[ok].tolist(), n[ok].tolist(), strict=True))


def local_geometry(
    path: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> tuple[int, int, str | None]:
    """``(S, N, note)`` to open the local file ``path`` with (note says how it was found).

    Given values win (one given: the other fitted from the size); then the defaults when
    the size matches; then the search of rule 30.  Raises :class:`UsageError` when the
    geometry cannot be told (pass both values).
    """
    hash_slot_num, index_num = geometry.hash_slot_num, geometry.index_num
    p = Path(path)
    if not p.is_file():
        raise StoreNotFoundError(f"{p}: no such tiered index file")
    size = p.stat().st_size
    if hash_slot_num is not None and index_num is not None:
        return hash_slot_num, index_num, None
    if hash_slot_num is not None or index_num is not None:
        s = hash_slot_num
        n = index_num
        rest = size - HEADER_SIZE
        if s is not None and (rest - SLOT_SIZE * s) > 0 and (rest - SLOT_SIZE * s) % ITEM_SIZE == 0:
            return s, (rest - SLOT_SIZE * s) // ITEM_SIZE, f"index_num fitted from {size} bytes"
        if n is not None and (rest - ITEM_SIZE * n) > 0 and (rest - ITEM_SIZE * n) % SLOT_SIZE == 0:
            return (rest - ITEM_SIZE * n) // SLOT_SIZE, n, f"hash_slot_num fitted from {size} bytes"
        raise UsageError(
            f"{p}: {size} bytes do not fit hash_slot_num={hash_slot_num}, index_num={index_num} "
            "(a local tiered file has 28 + 8*S + 32*N bytes)"
        )
    if size == unsealed_size(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM):
        return DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, None
    ask = (
        "pass the broker's tieredStoreIndexFileMaxHashSlotNum and MaxIndexNum as "
        "hash_slot_num= and index_num="
    )
    data = _head(p, HEADER_SIZE) if size >= HEADER_SIZE else b""
    if len(data) < HEADER_SIZE:
        raise CorruptIndexError(f"{p}: {size} bytes, shorter than a tiered index header (28)")
    item_count = HEADER_STRUCT.unpack_from(data, 0)[4]
    if item_count <= 0 or size > _SEARCH_LIMIT or size % 4:
        raise UsageError(
            f"{p}: the geometry of this {size}-byte file cannot be told from it; " + ask
        )
    words = np.memmap(p, ">i4", mode="r")  # only the int32s looked at are read
    try:
        found = _candidates(words, size, item_count)
    finally:
        del words
    if len(found) != 1:
        raise UsageError(
            f"{p}: {len(found)} geometries fit this {size}-byte file"
            + (f" (e.g. {found[:3]})" if found else "")
            + "; "
            + ask
        )
    s, n = found[0]
    return s, n, f"geometry S={s}, N={n} found from the file's newest item (rule 30)"
