"""Checking tiered index files: header, slots, chains and compacted slot ranges.

Files are read in bounded chunks of their slot table through a read-only map, so checking a
default-size file (680 MB) costs a few megabytes of memory.  Each problem is one sentence
naming what RocketMQ writes instead.  A note is something RocketMQ itself writes that is
not what it means (the end timestamp its recovery resets, rule 12): worth knowing, not
damage.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rmqarrow.errors import CorruptIndexError, RmqArrowError
from rmqarrow.format.layout import GeometryHint
from rmqarrow.format.times import format_time
from rmqarrow.tiered.layout.binary import (
    COMPACT_ITEM_DTYPE,
    COMPACT_ITEM_SIZE,
    COMPACT_SLOT_DTYPE,
    HEADER_SIZE,
    ITEM_DTYPE,
    SLOT_DTYPE,
    items_position,
)

from ._compacted import CompactedIndexFile
from ._open import folder_geometry, open_file, open_tiered, tiered_file_paths
from ._rules import store_time_bounds
from ._store import TieredIndexStore
from ._unsealed import TieredIndexFile

__all__ = ["TieredCheck", "TieredFileCheck", "check_tiered"]

#: Slots read at a time (8 bytes each): memory stays flat in the file's size.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class TieredFileCheck:
    """One file's problems (empty: healthy) and notes (never unhealthy)."""

    path: Path
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "ok": self.ok,
            "problems": list(self.problems),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class TieredCheck:
    """Every checked file of a tiered path."""

    files: list[TieredFileCheck]

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "files": [f.to_dict() for f in self.files]}


def _chunks(path: Path, dtype: np.dtype[Any], count: int) -> Iterator[tuple[int, np.ndarray]]:
    """``(first index, records)`` of the ``count`` slot records after the header."""
    if count <= 0:
        return
    table = np.memmap(path, dtype=dtype, mode="r", offset=HEADER_SIZE, shape=(count,))
    try:
        for start in range(0, count, _CHUNK):
            yield start, np.array(table[start : start + _CHUNK])
    finally:
        del table


def _check_unsealed(f: TieredIndexFile) -> list[str]:
    problems: list[str] = []
    unused = bad = 0
    first_bad: tuple[int, int] | None = None
    for start, slots in _chunks(f.path, SLOT_DTYPE, f.hash_slot_num):
        unused += int(np.count_nonzero(slots["unused"]))
        heads = slots["item_index"]
        wrong = np.flatnonzero((heads < 0) | (heads > f.item_count))
        bad += len(wrong)
        if first_bad is None and len(wrong):
            first_bad = (start + int(wrong[0]), int(heads[wrong[0]]))
    if unused:
        problems.append(f"{unused} slots with a non-zero second int32 (RocketMQ never writes it)")
    if first_bad is not None:
        problems.append(
            f"{bad} slot heads outside 0 .. itemCount (e.g. slot {first_bad[0]} = {first_bad[1]})"
        )
    try:
        with f.compacted() as c:
            kept = max(c.size - items_position(f.hash_slot_num), 0) // COMPACT_ITEM_SIZE
    except CorruptIndexError as exc:
        problems.append(f"chains: {exc}")
    else:
        if kept < f.item_count:
            problems.append(
                f"{f.item_count - kept} of {f.item_count} items are reachable "
                "from no slot (an Integer.MIN_VALUE key in a header slot, or "
                "damage); the upload drops them"
            )
    return problems


def _check_compacted(f: CompactedIndexFile) -> list[str]:
    if f.size == 0:
        return []
    base = items_position(f.hash_slot_num)
    items = (f.size - base) // COMPACT_ITEM_SIZE
    expect = base  # doCompaction writes each slot's range right after the previous one
    ok = True
    for _, slots in _chunks(f.path, COMPACT_SLOT_DTYPE, f.hash_slot_num):
        length = slots["length"].astype(np.int64)
        position = slots["position"].astype(np.int64)
        starts = expect + np.concatenate([[0], np.cumsum(length)[:-1]])
        if np.any(length < 0) or np.any(length % COMPACT_ITEM_SIZE) or np.any(position != starts):
            ok = False
            break
        expect += int(length.sum())
    if not ok or expect != base + COMPACT_ITEM_SIZE * items:
        return [
            "slot ranges are not the back-to-back, "
            f"{COMPACT_ITEM_SIZE}-byte aligned ranges doCompaction writes covering all "
            f"{items} items"
        ]
    return []


def _check_file(f: TieredIndexFile | CompactedIndexFile) -> list[str]:
    if isinstance(f, TieredIndexFile):
        return _check_unsealed(f)
    return _check_compacted(f)


def _newest_time_diff(f: TieredIndexFile | CompactedIndexFile) -> int | None:
    """The largest stored time diff of the file's items (None without items)."""
    if isinstance(f, TieredIndexFile):
        dtype, start, count = ITEM_DTYPE, items_position(f.hash_slot_num), f.item_count
        start += ITEM_DTYPE.itemsize  # item 0 is never written
    else:
        dtype, start = COMPACT_ITEM_DTYPE, items_position(f.hash_slot_num)
        count = max(f.size - start, 0) // COMPACT_ITEM_SIZE
    if count <= 0:
        return None
    table = np.memmap(f.path, dtype=dtype, mode="r", offset=start, shape=(count,))
    try:
        return max(int(table["time_diff"][i : i + _CHUNK].max()) for i in range(0, count, _CHUNK))
    finally:
        del table


def _end_time_note(f: TieredIndexFile | CompactedIndexFile) -> str | None:
    """A note when the header's end timestamp is not its newest item's store time."""
    newest = _newest_time_diff(f)
    if newest is None:
        return None
    low, high = store_time_bounds(newest, f.begin_timestamp)
    end = f.end_timestamp
    if low <= end <= high:
        return None
    why = (
        "RocketMQ writes the begin timestamp there when it reopens a local file at "
        "start-up, and an upload keeps it"
        if end == f.begin_timestamp
        else "RocketMQ writes the newest store time it indexed there: something else changed it"
    )
    return (
        f"the header's end timestamp {end} ({format_time(end)}) is not the newest item's "
        f"store time, {format_time(low)} to {format_time(high)} by its time diff ({why}); "
        "queries do not read it; RocketMQ's code expires an uploaded index segment by it"
    )


def check_tiered(
    path: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> TieredCheck:
    """Check one tiered file or every file of a tiered folder (read-only); what
    ``geometry`` does not give is found by the tiered rules."""
    p = Path(path)
    report: list[TieredFileCheck] = []
    if p.is_dir():
        gs, gn, _ = folder_geometry(p, geometry)
        paths = tiered_file_paths(p)
    else:
        gs = gn = 0
        paths = [p]
    for q in paths:
        try:
            if p.is_dir():
                f = open_file(q, gs, gn)
            else:
                opened, _ = open_tiered(q, geometry)
                assert not isinstance(opened, TieredIndexStore)
                f = opened
            with f:
                problems = _check_file(f)
                note = _end_time_note(f)
        except RmqArrowError as exc:
            problems, note = [str(exc)], None
        report.append(TieredFileCheck(q, problems, [note] if note else []))
    return TieredCheck(report)
