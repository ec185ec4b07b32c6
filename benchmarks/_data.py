"""Shared benchmark data: distinct ~45-character keys and full index files, built fast.

Keys are generated with ``pyarrow.compute`` (no Python loop), so 20 M keys take seconds:
``TopicTest-benchmark#KEY-<12-digit counter>-<8-digit scramble>`` (45 characters).
Index files are written with the bulk ``IndexFile.put_keys``; :func:`index_file` caches
one per (geometry, count, seed) under a work directory so several benchmarks can share it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqarrow import Geometry, IndexFile
from rmqarrow.format.layout import HEADER_DTYPE
from rmqarrow.testing.stores import write_random_file

__all__ = [
    "T0",
    "full_files_store",
    "index_file",
    "make_keys",
    "make_offsets",
    "make_timestamps",
    "reset_peak",
    "rss_mb",
    "set_index_count",
]

T0 = 1_700_000_000_000
TOPIC = "TopicTest-benchmark"


def make_keys(n: int, start: int = 0, topic: str = TOPIC) -> pa.Array:
    """``n`` distinct full index keys (about 45 characters each), counter ``start..``."""
    ids = pa.array(np.arange(start, start + n, dtype=np.int64))
    counter = pc.utf8_lpad(pc.cast(ids, pa.string()), width=12, padding="0")
    scramble_ids = (np.arange(start, start + n, dtype=np.int64) * 2654435761) % 100_000_000
    scramble = pc.utf8_lpad(pc.cast(pa.array(scramble_ids), pa.string()), width=8, padding="0")
    prefix = pa.scalar(f"{topic}#KEY-", pa.string())
    return pc.binary_join_element_wise(prefix, counter, scramble, pa.scalar("-", pa.string()))


def make_offsets(n: int, seed: int = 0) -> np.ndarray:
    """Rising commit-log offsets: message sizes of 100..1,099 bytes."""
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.integers(100, 1100, n, dtype=np.int64))


def make_timestamps(n: int, seed: int = 1) -> np.ndarray:
    """Store times from ``T0`` rising by 0..2 ms a message."""
    rng = np.random.default_rng(seed)
    return T0 + np.cumsum(rng.integers(0, 3, n, dtype=np.int64))


def index_file(workdir: Path, geometry: Geometry, entries: int | None = None) -> Path:
    """A file of ``entries`` puts of :func:`make_keys` (default: full), cached in ``workdir``."""
    entries = geometry.index_num - 1 if entries is None else entries
    path = workdir / f"index-{geometry.hash_slot_num}x{geometry.index_num}-{entries}"
    if path.exists():
        return path
    tmp = workdir / f".{path.name}.tmp"
    tmp.unlink(missing_ok=True)
    with IndexFile.create(tmp, geometry.hash_slot_num, geometry.index_num) as f:
        f.put_keys(make_keys(entries), make_offsets(entries), make_timestamps(entries))
    os.replace(tmp, path)
    return path


def full_files_store(workdir: Path, g: Geometry, files: int = 6) -> Path:
    """A store of ``files`` full files of geometry ``g``, a day apart (cached in
    ``workdir``), written by :func:`rmqarrow.testing.stores.write_random_file`."""
    store = workdir / f"store-{g.hash_slot_num}x{g.index_num}"
    if store.is_dir() and len(list(store.iterdir())) == files:
        return store
    shutil.rmtree(store, ignore_errors=True)
    tmp = workdir / f".{store.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i in range(files):
        name = f"2024010{i + 1}000000000"
        write_random_file(
            tmp / name,
            g,
            g.index_num - 1,
            seed=i,
            begin_timestamp=1_704_067_200_000 + i * 86_400_000,
            begin_phy_offset=i * 40_000_000_000,
        )
    os.replace(tmp, store)
    return store


def set_index_count(path: Path, index_count: int) -> int:
    """Set an index file's header indexCount; the old value.  Set back, the entries past
    it are invisible to export, as in a live broker's file between two puts; put back,
    the file has "grown" by them."""
    header = np.memmap(path, dtype=HEADER_DTYPE, mode="r+", shape=(1,))
    old = int(header["index_count"][0])
    header["index_count"][0] = index_count
    header.flush()
    del header
    return old


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS since the last :func:`reset_peak`) in MB, from /proc."""
    current = peak = 0.0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    current = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return current, peak


def reset_peak() -> None:
    """Reset the kernel's peak-RSS mark of this process (Linux ``clear_refs`` 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
