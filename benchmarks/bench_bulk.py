"""Bulk engine benchmark: sequential put_key vs bulk put_keys vs a memory copy; lookups.

Build: a fresh file filled from a pyarrow string array of distinct ~45-character keys,
end to end (file creation, hashing, chaining, writing, close).  Baselines measured in the
same run: a memory copy of the file's bytes (``build`` rows' ``vs_baseline``), and the
one-at-a-time ``put_key`` (on a sample, extrapolated: said in the note).
Lookup: ``select_phy_offsets_many`` over a batch of stored keys (1 M with ``--full``) vs
the per-key ``select_phy_offsets`` (on a sample, extrapolated), its baseline.
Peak memory: the rise of the process's peak RSS over its RSS just before the step, with
the input keys already in memory; it includes the file's mapped pages.

    python benchmarks/bench_bulk.py [--full] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import make_keys, make_offsets, make_timestamps, reset_peak, rss_mb
from _report import print_rows

from rmqarrow import Geometry, IndexFile
from rmqarrow.kernels.hashing import index_key_hashes, kernel_name

QUICK = Geometry(50_000, 200_000)
FULL = Geometry()  # 5,000,000 slots x 20,000,000 positions


def _row(bench: str, variant: str, items: int, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "benchmark": bench,
        "variant": variant,
        "items": items,
        "seconds": round(seconds, 4),
        "per_s": round(items / seconds) if seconds else None,
        **extra,
    }


def _ratios(rows: list[dict[str, Any]], baseline: str) -> None:
    base = next(r for r in rows if r["variant"] == baseline)
    for r in rows:
        r["vs_baseline"] = round(base["seconds"] / r["seconds"], 3) if r["seconds"] else None


def bench_build(geometry: Geometry, workdir: Path, sample: int) -> list[dict[str, Any]]:
    n = geometry.index_num - 1
    size_mb = geometry.file_size / 2**20
    keys = make_keys(n)
    offsets, stamps = make_offsets(n), make_timestamps(n)
    rows = []

    # baseline: copy the file's bytes in memory (both buffers touched first)
    src = np.ones(geometry.file_size, dtype=np.uint8)
    dst = np.zeros_like(src)
    t = time.perf_counter()
    np.copyto(dst, src)
    dt = time.perf_counter() - t
    rows.append(
        _row(
            "build",
            "memory copy of the file bytes",
            n,
            dt,
            mb_per_s=round(size_mb / dt),
            note=f"{size_mb:.0f} MB, buffers pre-touched",
        )
    )
    del dst

    # the same copy into a new mapped file: the page faults every new file costs
    path = workdir / "copy"
    path.unlink(missing_ok=True)
    t = time.perf_counter()
    with open(path, "xb") as fh:
        fh.truncate(geometry.file_size)
    with open(path, "r+b") as fh, mmap.mmap(fh.fileno(), geometry.file_size) as mm:
        view = np.frombuffer(mm, dtype=np.uint8)
        np.copyto(view, src)
        dt = time.perf_counter() - t
        del view
    path.unlink()
    rows.append(
        _row(
            "build",
            "copy into a new mapped file",
            n,
            dt,
            mb_per_s=round(size_mb / dt),
            note="create + page faults + copy",
        )
    )
    del src

    # sequential put_key on a sample, extrapolated
    path = workdir / "seq"
    path.unlink(missing_ok=True)
    with IndexFile.create(path, geometry.hash_slot_num, geometry.index_num) as f:
        sample_keys = keys.slice(0, sample).to_pylist()
        off, ts = offsets[:sample].tolist(), stamps[:sample].tolist()
        t = time.perf_counter()
        for k, o, s in zip(sample_keys, off, ts, strict=True):
            f.put_key(k, o, s)
        dt = (time.perf_counter() - t) * n / sample
    path.unlink()
    rows.append(
        _row(
            "build",
            "sequential put_key",
            n,
            dt,
            mb_per_s=round(size_mb / dt),
            note=f"measured on {sample:,} keys, extrapolated",
        )
    )

    # hashing alone, both kernels (information)
    index_key_hashes(keys.slice(0, 1000))  # compile / warm the kernel
    t = time.perf_counter()
    index_key_hashes(keys)
    dt = time.perf_counter() - t
    rows.append(_row("build", f"hash only ({kernel_name()} kernel)", n, dt))
    part = min(n, 2_000_000)
    t = time.perf_counter()
    index_key_hashes(keys.slice(0, part), kernel="numpy")
    dt = (time.perf_counter() - t) * n / part
    rows.append(
        _row(
            "build",
            "hash only (numpy fallback kernel)",
            n,
            dt,
            note=f"measured on {part:,} keys, extrapolated" if part < n else "",
        )
    )

    # bulk build, end to end
    gc.collect()
    path = workdir / "bulk"
    path.unlink(missing_ok=True)
    before, _ = rss_mb()
    reset_peak()
    t, c, m = time.perf_counter(), time.process_time(), time.thread_time()
    f = IndexFile.create(path, geometry.hash_slot_num, geometry.index_num)
    put = f.put_keys(keys, offsets, stamps)
    dt, cpu, main_cpu = time.perf_counter() - t, time.process_time() - c, time.thread_time() - m
    path_s = max(main_cpu, cpu - main_cpu)  # the busier thread: wall time on 2 free cores
    t = time.perf_counter()
    f.close()  # msync: the file's bytes to disk
    flush = time.perf_counter() - t
    _, peak = rss_mb()
    assert put == n
    rows.append(
        _row(
            "build",
            "bulk put_keys (from pyarrow strings)",
            n,
            dt,
            mb_per_s=round(size_mb / dt),
            peak_rss_mb=round(peak - before),
            cpu_s=round(cpu, 3),
            critical_path_s=round(path_s, 3),
            note=f"create + hash + write; close/msync {flush:.2f} s more; "
            f"threads' CPU {main_cpu:.2f} + {cpu - main_cpu:.2f} s: "
            f"{n / path_s / 1e6:.1f} M keys/s with 2 free cores; "
            f"peak RSS rise {(peak - before) / size_mb:.2f}x the file",
        )
    )
    _ratios(rows, "memory copy of the file bytes")
    path.unlink()
    return rows


def bench_lookup(
    geometry: Geometry, workdir: Path, queries: int, sample: int
) -> list[dict[str, Any]]:
    from _data import index_file

    n = geometry.index_num - 1
    path = index_file(workdir, geometry)
    rng = np.random.default_rng(3)
    picks = rng.integers(0, n, queries)
    keys = make_keys(n).take(picks)
    rows = []
    with IndexFile.open(path, geometry.hash_slot_num, geometry.index_num) as f:
        ks = keys.slice(0, sample).to_pylist()
        t = time.perf_counter()
        for k in ks:
            f.select_phy_offsets(k, 64)
        dt = (time.perf_counter() - t) * queries / sample
        rows.append(
            _row(
                "lookup",
                "per-key select_phy_offsets",
                queries,
                dt,
                note=f"measured on {sample:,} keys, extrapolated",
            )
        )
        f.select_phy_offsets_many(keys.slice(0, 100), 64)  # warm
        gc.collect()
        before, _ = rss_mb()
        reset_peak()
        t, c, m = time.perf_counter(), time.process_time(), time.thread_time()
        table = f.select_phy_offsets_many(keys, 64)
        dt, cpu = time.perf_counter() - t, time.process_time() - c
        main_cpu = time.thread_time() - m
        path_s = main_cpu + (cpu - main_cpu) / 2  # hash/table, then two walkers in parallel
        _, peak = rss_mb()
        rows.append(
            _row(
                "lookup",
                "bulk select_phy_offsets_many",
                queries,
                dt,
                peak_rss_mb=round(peak - before),
                cpu_s=round(cpu, 3),
                critical_path_s=round(path_s, 3),
                note=f"{table.num_rows:,} offsets found; main thread CPU "
                f"{main_cpu:.2f} s, walk threads {cpu - main_cpu:.2f} s: "
                f"{queries / path_s / 1e6:.1f} M keys/s with 2 free cores",
            )
        )
    _ratios(rows, "per-key select_phy_offsets")
    return rows


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    geometry = FULL if full else QUICK
    workdir.mkdir(parents=True, exist_ok=True)
    rows = bench_build(geometry, workdir, sample=200_000 if full else 20_000)
    rows += bench_lookup(
        geometry, workdir, queries=1_000_000 if full else 100_000, sample=20_000 if full else 5_000
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for r in rows:
        r.setdefault("note", "")
        r["load_avg"] = round(load, 2)
        r["geometry"] = f"{geometry.hash_slot_num}x{geometry.index_num}"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="default geometry, 19,999,999 keys")
    parser.add_argument("--workdir", type=Path, help="where files go (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_bulk-") as tmp:
        workdir = args.workdir or Path(tmp)
        rows = run(args.full, workdir)
    print_rows(rows)
    print(f"\n1-minute load average at the end: {rows[-1]['load_avg']} (2 cores)")
    out = args.json or Path("bench_bulk.json")
    out.write_text(json.dumps(rows, indent=2))
    print(f"\nrows written to {out}")


if __name__ == "__main__":
    main()
