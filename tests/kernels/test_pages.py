"""The bulk put's pager: pages faulted in ahead of the writes, shared by both threads."""

from __future__ import annotations

import itertools
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from rmqarrow import IndexFile
from rmqarrow.kernels import pages

_ENTRIES = 4_000_000  # an 80 MB file


def _mapped_kb(path: Path) -> int:
    """How much of the file this process has mapped in (``Rss`` of its map in smaps):
    what faulting in adds, whether or not the filesystem cached the pages already."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.endswith(str(path)):
            rss = next(x for x in lines[i + 1 :] if x.startswith("Rss:"))
            return int(rss.split()[1])
    raise AssertionError(f"{path} is not mapped")


def _large_page_kb() -> int:
    """The kernel's largest page for a mapping (its PMD size; 2 MiB on x86-64)."""
    pmd = Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
    return int(pmd.read_text()) // 1024 if pmd.exists() else 2048


def _linux_release() -> tuple[int, ...]:
    return tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])


@pytest.mark.skipif(
    sys.platform != "linux" or _linux_release() < (5, 14),
    reason="MADV_POPULATE_WRITE needs Linux >= 5.14; elsewhere the writes fault pages in",
)
def test_fault_in_brings_in_the_asked_entries(tmp_path: Path) -> None:
    path = tmp_path / "f"
    with IndexFile.create(path, 4, _ENTRIES) as f:
        before = _mapped_kb(path)
        assert pages.fault_in(f, 1_000_000, 1_500_000)  # 10,000,000 bytes
        grown = _mapped_kb(path) - before
        assert 9_765 <= grown <= 9_765 + 2 * _large_page_kb()  # a large page each side
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
        threads = [
            threading.Thread(target=lambda: [pager.fault_until(s) for s in stops]) for _ in range(3)
        ]
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


def test_fault_next_claims_one_piece_until_none_is_left(tmp_path: Path) -> None:
    """What a thread does while it waits for the other: one piece per call, in order."""
    with IndexFile.create(tmp_path / "f", 4, _ENTRIES) as f:
        pager = pages.Pager(f, 10)
        stop = 10 + 2 * pages.PIECE + 5
        assert [pager.fault_next(stop) for _ in range(4)] == [True, True, True, False]
        pager.fault_until(stop)  # nothing more to claim
        assert not pager.fault_next(stop)
        assert pager.fault_next(stop + 1)  # a later stop: the next piece
