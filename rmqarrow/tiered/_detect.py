"""Recognising tiered index files and folders, and finding a file's geometry (rule 30).

A tiered file starts with magic BEGIN or END; a classic ``IndexFile`` starts with a
millisecond timestamp, so the two never look alike.  The compacted form states its ``S``
(slot 0 always starts right after the slot table); the local form's ``S`` and ``N`` are
broker configuration, so they are taken from the defaults when the size fits, else from
the only geometry under which the newest item heads its own slot.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np

from rmqarrow.errors import CorruptIndexError, StoreNotFoundError, UsageError

from ._layout import (
    BEGIN_MAGIC,
    COMPACT_ITEM_SIZE,
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    END_MAGIC,
    HEADER_SIZE,
    HEADER_STRUCT,
    INT32,
    ITEM_SIZE,
    SLOT_SIZE,
    items_position,
    unsealed_size,
)
from ._segment import LOCAL_DIR_NAME, parse_segment_name

__all__ = [
    "TieredKind",
    "compacted_slot_num",
    "detect_tiered",
    "local_geometry",
]

TieredKind = Literal["unsealed", "compacted", "local-dir", "segment-dir"]

#: Local files larger than this are not searched for their geometry (pass S and N).
_SEARCH_LIMIT = 1 << 30


def _head(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def compacted_slot_num(data: bytes, size: int) -> int | None:
    """``S`` of a compacted file from its first bytes and size, or None if not compacted."""
    if size <= HEADER_SIZE or len(data) < HEADER_SIZE + SLOT_SIZE:
        return None
    magic = INT32.unpack_from(data, 0)[0]
    first = int(INT32.unpack_from(data, HEADER_SIZE)[0])
    if magic != END_MAGIC or first < items_position(1) or (first - HEADER_SIZE) % SLOT_SIZE:
        return None
    s = (first - HEADER_SIZE) // SLOT_SIZE
    rest = size - items_position(s)
    if rest < COMPACT_ITEM_SIZE or rest % COMPACT_ITEM_SIZE:
        return None
    return s


def _tiered_file_kind(path: Path) -> Literal["unsealed", "compacted"] | None:
    try:
        size = path.stat().st_size
        data = _head(path, HEADER_SIZE + SLOT_SIZE)
    except OSError:
        return None
    if len(data) < HEADER_SIZE:
        return None
    magic = HEADER_STRUCT.unpack_from(data, 0)[0]
    if magic not in (BEGIN_MAGIC, END_MAGIC):
        return None
    # the magic alone tells a tiered file (a classic file starts with a positive timestamp);
    # a damaged one is then reported by opening it, not mistaken for something else
    return "compacted" if compacted_slot_num(data, size) is not None else "unsealed"


def detect_tiered(path: str | os.PathLike[str]) -> TieredKind | None:
    """What ``path`` is, when it is tiered-index data; None for anything else.

    ``"unsealed"``/``"compacted"``: one local or uploaded file (by header and layout);
    ``"local-dir"``: a ``tiered_index_file/`` folder, a folder holding one, or a folder of
    numerically named tiered files; ``"segment-dir"``: a folder of uploaded segments (names
    ``<md5 prefix><20-digit base offset>``).  Never raises for unreadable input.
    """
    p = Path(path)
    if p.is_file():
        return _tiered_file_kind(p)
    if not p.is_dir():
        return None
    local = p / LOCAL_DIR_NAME
    for folder in (local, p):
        if not folder.is_dir():
            continue
        try:
            names = sorted(folder.iterdir())
        except OSError:
            return None
        for q in names:
            if q.is_file() and q.name.isascii() and q.name.isdigit() and _tiered_file_kind(q):
                return "local-dir"
        if folder == p and any(parse_segment_name(q.name) is not None and q.is_file()
                               for q in names):
            return "segment-dir"
    return None


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
    path: str | os.PathLike[str],
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> tuple[int, int, str | None]:
    """``(S, N, note)`` to open the local file ``path`` with (note says how it was found).

    Given values win; then the defaults when the size matches; then the search of rule 30.
    Raises :class:`UsageError` when the geometry cannot be told (pass both values).
    """
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
    ask = ("pass the broker's tieredStoreIndexFileMaxHashSlotNum and MaxIndexNum as "
           "--hash-slot-num and --index-num (hash_slot_num=, index_num=)")
    data = _head(p, HEADER_SIZE) if size >= HEADER_SIZE else b""
    if len(data) < HEADER_SIZE:
        raise CorruptIndexError(f"{p}: {size} bytes, shorter than a tiered index header (28)")
    item_count = HEADER_STRUCT.unpack_from(data, 0)[4]
    if item_count <= 0 or size > _SEARCH_LIMIT or size % 4:
        raise UsageError(f"{p}: the geometry of this {size}-byte file cannot be told from it; "
                         + ask)
    words = np.memmap(p, ">i4", mode="r")  # only the int32s looked at are read
    try:
        found = _candidates(words, size, item_count)
    finally:
        del words
    if len(found) != 1:
        raise UsageError(
            f"{p}: {len(found)} geometries fit this {size}-byte file"
            + (f" (e.g. {found[:3]})" if found else "") + "; " + ask
        )
    s, n = found[0]
    return s, n, f"geometry S={s}, N={n} found from the file's newest item (rule 30)"
