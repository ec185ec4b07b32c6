"""Incremental export against a full export, side by side in one run.

A store of 6 full files (``--full``: RocketMQ's default geometry, 5,000,000 x 20,000,000,
420 MB a file; quick: 100,000 x 400,000) is exported while its newest file holds all
but the last ``GROW`` entries (1,000,000; quick: 20,000): the header's count is set back,
which is how a live broker's file looks between two puts (entries past the count are
invisible to export).  Then the newest file "grows" (its header put back) and, in one
run:

- ``full export (baseline)``: :func:`export_store` of the grown store into a new dataset;
- ``incremental``: :func:`sync_store` of the first dataset (the new entries, the newest
  file's slots and the files table written, one manifest switch).

Items are the entries the dataset holds afterwards (the same for both); ``peak_rss_mb``
is the process's peak RSS during the step (reset before it), ``peak_delta_mb`` that minus
the RSS before it.  The target: incremental at most 1/10 of the full export's time and
memory.  Run alone: ``python benchmarks/bench_incremental.py [--full] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _data import full_files_store, reset_peak, rss_mb, set_index_count
from _report import print_rows
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import sync_store

from rmqarrow import Geometry

FILES = 6


def _measured(fn: Callable[[], Any]) -> tuple[float, float, float, Any]:
    gc.collect()
    reset_peak()
    before = rss_mb()[0]
    t = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t
    peak = rss_mb()[1]
    return seconds, peak, peak - before, result


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    g = Geometry(5_000_000, 20_000_000) if full else Geometry(100_000, 400_000)
    grow = 1_000_000 if full else 20_000
    store = full_files_store(workdir, g, FILES)
    newest = sorted(store.iterdir())[-1]
    inc, whole = workdir / "ds-incremental", workdir / "ds-full"
    for d in (inc, whole):
        shutil.rmtree(d, ignore_errors=True)
    count = set_index_count(newest, g.index_num - grow)  # the newest file before it grew
    try:
        export_store(store, inc, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    finally:
        set_index_count(newest, count)
    t_inc, peak_inc, delta_inc, result = _measured(
        lambda: sync_store(store, inc, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    )
    assert result.grown == [newest.name] and result.entries == grow, result
    t_full, peak_full, delta_full, manifest = _measured(
        lambda: export_store(store, whole, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    )
    entries = int(manifest["tables"]["entries"]["rows"])
    from rmqarrow.converters.parquet.manifest import read_manifest

    assert read_manifest(inc)["tables"]["entries"]["rows"] == entries
    load = os.getloadavg()[0]
    rows = []
    for variant, seconds, peak, delta, note in (
        ("full export (baseline)", t_full, peak_full, delta_full, "baseline"),
        (
            f"incremental (+{grow:,} entries)",
            t_inc,
            peak_inc,
            delta_inc,
            f"time {t_inc / t_full:.3f} x, memory {delta_inc / max(delta_full, 1e-9):.3f} x "
            "the full export's",
        ),
    ):
        rows.append(
            {
                "benchmark": f"incremental export, {FILES} files {g.hash_slot_num}x{g.index_num}",
                "variant": variant,
                "items": entries,
                "seconds": round(seconds, 4),
                "per_s": round(entries / seconds),
                "vs_baseline": round(t_full / seconds, 2),
                "peak_rss_mb": round(peak, 1),
                "peak_delta_mb": round(delta, 1),
                "note": f"{note}; load {load:.1f}",
            }
        )
    shutil.rmtree(inc, ignore_errors=True)
    shutil.rmtree(whole, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="RocketMQ's default geometry")
    parser.add_argument("--quick", action="store_true", help="small files (the default)")
    parser.add_argument("--workdir", type=Path, help="where to put generated data (kept)")
    args = parser.parse_args()
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        print_rows(run(args.full, args.workdir))
        return
    with tempfile.TemporaryDirectory() as tmp:
        print_rows(run(args.full, Path(tmp)))


if __name__ == "__main__":
    main()
