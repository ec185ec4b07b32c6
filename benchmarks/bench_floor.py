"""The bulk build against its floor, like for like: both on the same kind of memory.

The floor is what the anchor harness measures: the file's bytes copied into a fresh
memory map (page faults included).  On a virtual machine its cost depends on the memory
the kernel hands out: memory freed moments ago is still backed by the host, memory that
has sat free a few seconds may have been taken back (free page reporting) and costs a
host fault on first touch.  So each round frees three times the file's size first and then
measures the floor and a fresh file's ``create`` + ``put_keys`` (the same keys each time)
twice: at once, and after the freed memory has settled ``--settle`` seconds.  The
``build_over_floor`` column is build time / floor time (``vs_baseline``, as everywhere,
is the build's rate over the floor's: its inverse).

    python benchmarks/bench_floor.py [--full] [--rounds 5] [--settle 6] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import make_keys, make_offsets, make_timestamps
from _report import print_rows, row, set_ratios

from rmqarrow import Geometry, IndexFile

QUICK = Geometry(500_000, 2_000_000)
FULL = Geometry()  # 5,000,000 slots x 20,000,000 positions: 420 MB


def _free_memory(size: int, settle: float) -> None:
    """Touch and free ``3 * size`` bytes, then wait ``settle`` seconds."""
    scratch = np.ones(3 * size, dtype=np.uint8)
    del scratch
    time.sleep(settle)


def _floor(path: Path, src: np.ndarray) -> float:
    t = time.perf_counter()
    mm = np.memmap(path, dtype=np.uint8, mode="w+", shape=src.shape)
    mm[:] = src
    seconds = time.perf_counter() - t
    del mm
    path.unlink()
    return seconds


def _build(
    path: Path, geometry: Geometry, keys: Any, offsets: np.ndarray, stamps: np.ndarray
) -> float:
    t = time.perf_counter()  # create too: on tmpfs it allocates every page up front
    with IndexFile.create(path, geometry.hash_slot_num, geometry.index_num) as f:
        f.put_keys(keys, offsets, stamps)
        seconds = time.perf_counter() - t
    path.unlink()
    return seconds


def measure(geometry: Geometry, workdir: Path, rounds: int, settle: float) -> list[dict[str, Any]]:
    n = geometry.index_num - 1
    keys, offsets, stamps = make_keys(n), make_offsets(n), make_timestamps(n)
    src = np.random.default_rng(7).integers(0, 256, geometry.file_size, dtype=np.uint8)
    floor_path, build_path = workdir / "floor.mmap", workdir / "build.idx"
    _build(build_path, geometry, keys, offsets, stamps)  # compile, warm the caches
    times: dict[tuple[str, float], list[float]] = {}
    for _ in range(rounds):
        for wait in (0.0, settle):
            _free_memory(src.size, wait)
            times.setdefault(("floor", wait), []).append(_floor(floor_path, src))
            _free_memory(src.size, wait)
            times.setdefault(("build", wait), []).append(
                _build(build_path, geometry, keys, offsets, stamps)
            )
    rows = []
    for wait in (0.0, settle):
        memory = "just freed" if wait == 0 else f"settled {wait:g} s"
        for name, note in (
            ("floor", "baseline: bytes into a fresh memory map"),
            ("build", "create + put_keys"),
        ):
            runs = times[(name, wait)]
            rows.append(
                row(
                    f"floor, memory {memory}",
                    name,
                    n,
                    float(np.median(runs)),
                    note,
                    runs=[round(s, 3) for s in sorted(runs)],
                )
            )
    set_ratios(rows)
    for r in rows:
        r["build_over_floor"] = 1 / r["vs_baseline"]
    return rows


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    """For ``benchmarks/run.py``: one round (memory just freed, and settled 6 s)."""
    return measure(FULL if full else QUICK, workdir, rounds=1, settle=6.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="RocketMQ's default geometry")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (medians are printed)")
    parser.add_argument(
        "--settle",
        type=float,
        default=6.0,
        help="seconds freed memory sits before the settled measurements",
    )
    parser.add_argument("--workdir", type=Path, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    if args.settle <= 0 or args.rounds < 1:
        parser.error("--settle must be above 0 and --rounds at least 1")
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        rows = measure(FULL if args.full else QUICK, Path(tmp), args.rounds, args.settle)
    print_rows(rows)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
