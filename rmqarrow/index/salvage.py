"""Salvage recovery: keep a damaged newest file's entries stored at or before a cutoff.

RocketMQ deletes, after an abnormal exit, every index file whose end timestamp is later
than the checkpoint's indexMsgTimestamp, losing the entries that were already valid
(apache/rocketmq issue #3868).  :func:`salvage_file` rewrites such a file with only the
entries surely stored at or before the cutoff (entry 1 exactly at the header's begin
timestamp, the others within the second their diff gives), in their
original order with their original time diffs, chains relinked around the dropped ones.
The original file is kept next to the store directory, never inside it (RocketMQ's
``IndexService.load`` opens every entry of ``store/index``, hidden ones included):
``STORE/../.STORE.before-salvage/NAME``; the rewrite is staged there too and renamed in.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from rmqarrow._space import reserve
from rmqarrow._staging import sibling
from rmqarrow.format.layout import Geometry, map_regions

__all__ = ["backup_dir", "salvage_file"]

_log = logging.getLogger(__name__)


def backup_dir(path: Path) -> Path:
    """Where the original of a salvaged file is kept: beside its store directory."""
    store = path.absolute().parent
    return store.parent / f".{store.name}.before-salvage"


def _backup_path(path: Path) -> Path:
    keep_dir = backup_dir(path)
    keep_dir.mkdir(exist_ok=True)
    backup = keep_dir / path.name
    n = 1
    while backup.exists():
        backup = keep_dir / f"{path.name}.{n}"
        n += 1
    return backup


def salvage_file(path: Path, geometry: Geometry, cutoff: int) -> int:
    """Rewrite ``path`` keeping entries stored at or before ``cutoff``; returns how many.

    The original is kept in :func:`backup_dir` either way.  With nothing to keep, the file
    leaves the store (as RocketMQ deletes it) for that folder and 0 is returned.
    """
    src = map_regions(path, geometry, writable=False)
    try:
        header = src.header[0].item()
        begin_ts, _, begin_phy, _, _, index_count = header
        entries = np.array(src.entries[1 : max(index_count, 1)])
    finally:
        src.close()
    with np.errstate(over="ignore"):
        times = np.int64(begin_ts) + entries["time_diff"].astype(np.int64) * 1000
        # A diff is truncated to the second, so a store time is known only to within
        # 999 ms; keep an entry only if it is surely at or before the cutoff.  Entry 1's
        # time is exact: the header's begin timestamp was set from it.
        latest = times + 999
    if len(latest):
        latest[0] = begin_ts
    keep = (latest <= cutoff) & (entries["time_diff"] >= 0)
    kept = entries[keep]
    k = len(kept)
    if k == 0:
        backup = _backup_path(path)
        os.replace(path, backup)
        _log.warning(
            "%s: none of its %d entries is surely stored at or before the checkpoint's "
            "index time %d; the file left the store as RocketMQ removes it, kept in %s",
            path,
            len(entries),
            cutoff,
            backup,
        )
        return 0
    slots_of = kept["key_hash"].astype(np.int64) % geometry.hash_slot_num
    positions = np.arange(1, k + 1, dtype=np.int64)
    order = np.lexsort((positions, slots_of))
    prev = np.zeros(k, dtype=np.int64)
    same = slots_of[order][1:] == slots_of[order][:-1]
    prev[order[1:][same]] = positions[order[:-1][same]]
    kept["prev_index"] = prev
    backup = _backup_path(path)
    tmp = sibling(backup.parent / path.name, "salvage")
    with open(tmp, "xb") as fh:
        try:
            reserve(fh.fileno(), geometry.file_size, tmp)
        except BaseException:
            tmp.unlink()
            raise
    dst = map_regions(tmp, geometry, writable=True)
    try:
        dst.entries[1 : k + 1] = kept
        last = order[np.r_[~same, True]]  # the last kept entry of each slot
        dst.slots[slots_of[last]] = positions[last]
        dst.header[0] = (
            begin_ts,
            int(times[keep][-1]),
            begin_phy,
            int(kept["phy_offset"][-1]),
            len(last),
            k + 1,
        )
    finally:
        dst.close()
    os.replace(path, backup)
    os.replace(tmp, path)
    _log.warning(
        "%s: salvaged %d of its %d entries (stored at or before the checkpoint's index "
        "time %d); the original is kept in %s",
        path,
        k,
        len(entries),
        cutoff,
        backup,
    )
    return k
