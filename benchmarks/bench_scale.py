"""Cost against store size: the CLI commands on a store of 1 file and of 6, side by side.

    python benchmarks/bench_scale.py                 # quick: small geometry, seconds
    python benchmarks/bench_scale.py --full          # 6 full default files, ~2.4 GB
    python benchmarks/bench_scale.py --full --files 1,6 --workdir /tmp/scale --keep

Two stores are written with :func:`rmqarrow.testing.stores.write_random_file` (random
hashes, rising times and offsets, consecutive files): one of 1 file and one of N (6).  Each
command then runs as its own ``rmqarrow`` process (so its peak RSS is its own, read from
``wait4``), on each store in turn:

- ``info``; ``query`` with the native engine and with ``--engine duckdb`` on the *native*
  store (one key); ``stats`` on the native store (above 8 Mi entries it exports the store
  to a temporary dataset first);
- ``export`` to a dataset, ``query --engine duckdb`` and ``stats`` over that dataset;
- ``verify --dataset --engines native,duckdb --sample 1000``.

Rows give seconds and peak RSS per command and store size, and ``vs_baseline``: the N-file
time over the 1-file time (flat cost: ~1; linear: ~N).  The load is printed.  The stores
are written by a separate process: Linux starts a child's peak RSS at its parent's (the
child shares the parent's memory until it execs), so this process stays small.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import print_rows

from rmqarrow.format.layout import Geometry, map_regions
from rmqarrow.testing.stores import write_random_file

MIB = 1024 * 1024
#: A key whose slot exists in every file (any key does: one slot per file is read).
KEY = "TopicTest#order-1"
QUICK_GEOMETRY = Geometry(50_000, 200_000)
FULL_GEOMETRY = Geometry(5_000_000, 20_000_000)


def make_store(root: Path, files: int, geometry: Geometry, seed: int = 11) -> Path:
    """A store of ``files`` full files, consecutive in time and offset (kept if present)."""
    done = root / ".complete"
    if done.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    begin, offset = 1_700_000_000_000, 0
    for i in range(files):
        path = root / f"{20240101000000000 + i * 1000}"
        write_random_file(
            path,
            geometry,
            geometry.index_num - 1,
            seed=seed + i,
            begin_timestamp=begin,
            begin_phy_offset=offset,
        )
        m = map_regions(path, geometry, writable=False)
        try:
            h = m.header[0]
            begin, offset = int(h["end_timestamp"]) + 1000, int(h["end_phy_offset"]) + 1000
        finally:
            m.close()
    done.write_text("ok")
    return root


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB, exit status) of one command, in its own process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        print(f"  {' '.join(cmd)}: exit {proc.returncode}\n{err[-800:]}", file=sys.stderr)
    return seconds, usage.ru_maxrss / 1024, proc.returncode


def commands(store: Path, dataset: Path, geometry: Geometry) -> list[tuple[str, list[str]]]:
    cli = [str(Path(sys.executable).parent / "rmqarrow")]
    geo = ["--hash-slot-num", str(geometry.hash_slot_num), "--index-num", str(geometry.index_num)]
    return [
        ("info", [*cli, "info", str(store), *geo]),
        ("query native", [*cli, "query", str(store), "--key", KEY, *geo]),
        (
            "query duckdb (native store)",
            [*cli, "query", str(store), "--key", KEY, "--engine", "duckdb", *geo],
        ),
        ("stats (native store)", [*cli, "stats", str(store), *geo]),
        ("export", [*cli, "export", str(store), str(dataset), "--overwrite", *geo]),
        (
            "query duckdb (dataset)",
            [*cli, "query", str(dataset), "--key", KEY, "--engine", "duckdb"],
        ),
        ("stats (dataset)", [*cli, "stats", str(dataset)]),
        (
            "verify 1000 (dataset)",
            [
                *cli,
                "verify",
                str(store),
                "--dataset",
                str(dataset),
                "--engines",
                "native,duckdb",
                "--sample",
                "1000",
                *geo,
            ],
        ),
    ]


def run(
    full: bool, workdir: Path, counts: tuple[int, ...] = (1, 6), skip: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """Rows: each command on each store size (see the module doc)."""
    geometry = FULL_GEOMETRY if full else QUICK_GEOMETRY
    results: dict[tuple[str, int], tuple[float, float, int]] = {}
    with multiprocessing.get_context("spawn").Pool(1) as writer:
        stores = {
            n: writer.apply(make_store, (workdir / f"store-{n}", n, geometry)) for n in counts
        }
    for n in counts:
        store = stores[n]
        dataset = workdir / f"dataset-{n}"
        for name, cmd in commands(store, dataset, geometry):
            if name in skip:
                continue
            results[name, n] = timed(cmd)
            s, rss, rc = results[name, n]
            print(
                f"  {n} file(s) {name}: {s:.2f} s, {rss:.0f} MiB, exit {rc}; load "
                f"{os.getloadavg()[0]:.1f}",
                file=sys.stderr,
                flush=True,
            )
        shutil.rmtree(dataset, ignore_errors=True)
    rows: list[dict[str, Any]] = []
    base_n = counts[0]
    for (name, n), (s, rss, rc) in results.items():
        base = results[name, base_n][0]
        rows.append(
            {
                "benchmark": "scale",
                "variant": f"{name}, {n} file(s)",
                "items": n,
                "seconds": round(s, 3),
                "per_s": round(n / s, 3),
                "vs_baseline": round(s / base, 3) if base else None,
                "peak_rss_mb": round(rss, 1),
                "note": f"exit {rc}; load {os.getloadavg()[0]:.1f}; "
                f"{'default' if full else 'quick'} geometry",
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="RocketMQ's default geometry")
    parser.add_argument("--files", default="1,6", help="store sizes in files (1,6)")
    parser.add_argument("--workdir", type=Path, help="where stores go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the stores in --workdir")
    parser.add_argument("--skip", default="", help="commands to leave out (comma-separated)")
    args = parser.parse_args(argv)
    counts = tuple(int(c) for c in args.files.split(","))
    skip = frozenset(s.strip() for s in args.skip.split(",") if s.strip())
    print(f"load {os.getloadavg()}", file=sys.stderr)
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            print_rows(run(args.full, Path(tmp), counts, skip))
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    try:
        print_rows(run(args.full, args.workdir, counts, skip))
    finally:
        if not args.keep:
            for n in counts:
                shutil.rmtree(args.workdir / f"store-{n}", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
