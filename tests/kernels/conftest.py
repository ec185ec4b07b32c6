"""Helpers shared by the bulk-engine tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from golden_data import GoldenSet

from rmqarrow import IndexFile

BulkWriter = Callable[[GoldenSet, Path], list[Path]]


def bulk_like_java(golden: GoldenSet, out: Path) -> list[Path]:
    """The golden replay with put_keys: put what fits, roll seeded, put the rest."""
    puts = golden.puts
    keys = pa.array([p.key for p in puts], pa.string())
    offsets = np.array([p.phy_offset for p in puts], dtype=np.int64)
    stamps = np.array([p.store_timestamp for p in puts], dtype=np.int64)
    paths: list[Path] = []
    f: IndexFile | None = None
    done = 0
    while done < len(puts) or f is None:
        seed = (f.end_phy_offset, f.end_timestamp) if f else (0, 0)
        if f is not None:
            f.close()
        paths.append(out / f"{len(paths):05d}")
        f = IndexFile.create(paths[-1], golden.hash_slot_num, golden.index_num, *seed)
        done += f.put_keys(keys.slice(done), offsets[done:], stamps[done:])
    f.close()
    return paths


@pytest.fixture
def bulk_writer() -> BulkWriter:
    """:func:`bulk_like_java`: a golden set's puts replayed with ``put_keys``."""
    return bulk_like_java
