"""The bulk put's pager: pages faulted in ahead of the writes, shared by both threads."""

from __future__ import annotations

import ctypes
import itertools
import mmap
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from rmqarrow import IndexFile
from rmqarrow.kernels import pages

#: An 80 MB file: room for pages that must stay untouched, well past the device's
#: readahead (a first fault may bring in several MB around it).
_ENTRIES = 4_000_000


def _resident(f: IndexFile, first: int, stop: int) -> np.ndarray:
    """Which pages holding entries ``first .. stop-1`` are in memory (``mincore``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    g = f.regions.geometry
    start = (g.entries_offset + first * 20) & ~(mmap.PAGESIZE - 1)
    length = g.entries_offset + stop * 20 - start
    vec = ctypes.create_string_buffer(-(-length // mmap.PAGESIZE))
    assert libc.mincore(f.regions.header.ctypes.data + start, length, vec) == 0
    return np.frombuffer(vec.raw, dtype=np.uint8) & 1


def _linux_release() -> tuple[int, ...]:
    return tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])


@pytest.mark.skipif(
    sys.platform != "linux" or _linux_release() < (5, 14),
    reason="MADV_POPULATE_WRITE needs Linux >= 5.14; elsewhere the writes fault pages in",
)
def test_fault_in_brings_in_exactly_the_asked_entries(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, _ENTRIES) as f:
        assert not _resident(f, 1_000_000, 1_500_000).any()
        assert pages.fault_in(f, 1_000_000, 1_500_000)
        assert _resident(f, 1_000_000, 1_500_000).all()
        assert not _resident(f, 3_000_000, _ENTRIES).any()  # 30 MB on
        assert f.index_count == 1 and not f.regions.entries.view(np.uint8).any()


def test_threads_share_the_pages_without_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims: list[tuple[int, int]] = []
    fault_in = pages.fault_in

    def recorded(f: IndexFile, a: int, b: int) -> bool:
        claims.append((a, b))
        return fault_in(f, a, b)

    monkeypatch.setattr(pages, "fault_in", recorded)
    with IndexFile.create(tmp_path / "f", 4, _ENTRIES) as f:
        pager = pages.Pager(f, 7)
        stops = [250_000, 600_000, 1_000_000]
        threads = [threading.Thread(target=lambda: [pager.fault_until(s) for s in stops])
                   for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pager.fault_until(600_000)  # already claimed: nothing more
    claims.sort()
    assert claims[0][0] == 7 and claims[-1][1] == 1_000_000
    assert all(b == c for (_, b), (c, _) in itertools.pairwise(claims))
    assert all(0 < b - a <= pages.PIECE for a, b in claims)
    assert {250_000, 600_000} <= {b for _, b in claims}  # a piece never crosses a stop
