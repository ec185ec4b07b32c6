"""Synthetic native index files, written in bulk with numpy (tests and benchmarks).

:func:`write_random_file` fills the three regions of :mod:`rmqarrow.format.layout` directly: a
file holding ``entries`` puts of random key hashes, with the chains, slot heads and
header exactly as RocketMQ's ``putKey`` leaves them when every slot head was valid and
store times never go backwards.  A default-geometry file (19,999,999 entries) takes a
few seconds instead of the minutes one put at a time would need.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

import numpy as np

from rmqarrow.errors import GeometryError, OutputExistsError
from rmqarrow.format.layout import HEADER_DTYPE, Geometry, map_regions
from rmqarrow.format.naming import file_name_for

__all__ = ["write_random_file", "write_random_store"]


def write_random_file(
    path: str | os.PathLike[str],
    geometry: Geometry,
    entries: int,
    *,
    seed: int = 0,
    begin_timestamp: int = 1_700_000_000_000,
    begin_phy_offset: int = 0,
    distinct_hashes: int | None = None,
) -> None:
    """Write a new file of ``entries`` random puts (0 .. ``index_num - 1``).

    Hashes are drawn from ``distinct_hashes`` values when given (so keys repeat), store
    times rise by 0..1,999 ms a put, physical offsets by 100..1,099 bytes a put.
    """
    p = Path(path)
    if not 0 <= entries <= geometry.index_num - 1:
        raise GeometryError(f"{p}: {entries} entries do not fit {geometry}")
    if p.exists():
        raise OutputExistsError(f"{p}: exists; refusing to overwrite it")
    rng = np.random.default_rng(seed)
    with open(p, "xb") as fh:
        fh.truncate(geometry.file_size)
    m = map_regions(p, geometry, writable=True)
    try:
        n = entries
        if distinct_hashes:
            pool = rng.integers(0, 2**31 - 1, size=distinct_hashes, dtype=np.int32)
            key_hash = pool[rng.integers(0, distinct_hashes, size=n)]
        else:
            key_hash = rng.integers(0, 2**31 - 1, size=n, dtype=np.int32)
        slot = key_hash % np.int32(geometry.hash_slot_num)
        store_ts = begin_timestamp + np.cumsum(rng.integers(0, 2000, size=n, dtype=np.int64))
        phy = begin_phy_offset + np.cumsum(rng.integers(100, 1100, size=n, dtype=np.int64))
        if n:
            store_ts -= store_ts[0] - begin_timestamp
            phy -= phy[0] - begin_phy_offset
        positions = np.arange(1, n + 1, dtype=np.int32)
        # prev_index: the previous position with the same slot (0 for the first one).
        order = np.argsort(slot, kind="stable")
        sorted_slot = slot[order]
        same = np.zeros(n, dtype=bool)
        same[1:] = sorted_slot[1:] == sorted_slot[:-1]
        prev = np.zeros(n, dtype=np.int32)
        prev[order[1:][same[1:]]] = positions[order[:-1][same[1:]]]
        # slot heads: the last position of each slot.
        last = np.ones(n, dtype=bool)
        last[:-1] = sorted_slot[1:] != sorted_slot[:-1]
        m.slots[sorted_slot[last]] = positions[order[last]]
        e = m.entries[1 : n + 1]
        e["key_hash"] = key_hash
        e["phy_offset"] = phy
        e["time_diff"] = ((store_ts - begin_timestamp) // 1000).astype(np.int32)
        e["prev_index"] = prev
        h = m.header
        h["begin_timestamp"] = begin_timestamp if n else 0
        h["end_timestamp"] = int(store_ts[-1]) if n else 0
        h["begin_phy_offset"] = begin_phy_offset if n else 0
        h["end_phy_offset"] = int(phy[-1]) if n else 0
        h["hash_slot_count"] = int(np.count_nonzero(last))
        h["index_count"] = n + 1
    finally:
        m.close()


def write_random_store(
    store_dir: str | os.PathLike[str],
    geometry: Geometry,
    entries_per_file: list[int],
    *,
    seed: int = 0,
    distinct_hashes: int | None = None,
) -> list[Path]:
    """A store directory of random files named like RocketMQ's, oldest first.

    Names are RocketMQ's 17-digit ``yyyyMMddHHmmssSSS`` (UTC), one millisecond apart from
    ``20231114221320000`` on, so they sort in the files' time order however many there
    are; file ``i`` begins an hour after the previous one, or at its last store time when
    that is later (a broker's next file never begins before the last one ends).
    """
    d = Path(store_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    ts = _NAMED_FROM
    end = 0
    for i, n in enumerate(entries_per_file):
        p = d / file_name_for(_NAMED_FROM + i, _dt.UTC)
        begin = max(ts + i * 3_600_000, end)
        write_random_file(
            p,
            geometry,
            n,
            seed=seed + i,
            begin_timestamp=begin,
            begin_phy_offset=i * 10**9,
            distinct_hashes=distinct_hashes,
        )
        end = max(end, _end_timestamp(p))
        paths.append(p)
    return paths


#: 2023-11-14T22:13:20Z, the first file's name and begin time
_NAMED_FROM = 1_700_000_000_000


def _end_timestamp(path: Path) -> int:
    header = np.fromfile(path, dtype=HEADER_DTYPE, count=1)
    return int(header["end_timestamp"][0])
