"""Cost against the number of files: every command on stores of 100, 1,000 and 10,000 files.

    python benchmarks/bench_files.py                 # 100, 1,000 and 10,000 files
    python benchmarks/bench_files.py --quick         # 100 and 1,000 (what ``make bench`` runs)
    python benchmarks/bench_files.py --files 100,2000 --workdir /tmp/files

A tiny geometry (8 slots x 32 entries: 712-byte files of 31 entries) makes many files out
of few records, so what grows is the number of files, not the data in each.  For each
count N, a records CSV of N * 31 / 2 messages (a unique key and one of 50 shared keys
each) is written, then each command runs as its own ``rmqarrow`` process:

- ``build`` the store from the records (N files);
- ``info``, ``check``; ``query`` of a shared key with the native engine and with
  ``--engine duckdb`` on the native store (the walk visits every file);
- ``export`` to a dataset (3 N Parquet parts); ``query --engine duckdb``, ``sql`` and
  ``stats`` over it; ``verify --dataset --engines native,duckdb``.

Rows give seconds, peak RSS (from ``wait4``), the most descriptors the process held at
once (``/proc/PID/fd``, sampled every few milliseconds) and milliseconds per file; and
``vs_baseline``: the time over the smallest count's (linear in files: N / N0; the
per-file column then stays flat).  Descriptors and RSS should not grow with N.  The load
average is printed with each row.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _report import print_rows

SLOTS, INDEX = 8, 32
GEO = ["--hash-slot-num", str(SLOTS), "--index-num", str(INDEX)]
#: A file holds INDEX - 1 = 31 entries; every record puts two keys (UNIQ_KEY and KEYS).
KEYS_PER_RECORD = 2
T0 = 1_700_000_000_000
FULL_COUNTS = (100, 1_000, 10_000)
QUICK_COUNTS = (100, 1_000)


def write_records(path: Path, files: int) -> Path:
    """Records that fill ``files`` files of the tiny geometry."""
    n = files * (INDEX - 1) // KEYS_PER_RECORD
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["topic", "keys", "uniq_key", "commit_log_offset", "store_timestamp", "sys_flag"]
        )
        for i in range(n):
            w.writerow(["T", f"k{i % 50}", f"u{i}", 1000 + 100 * i, T0 + 10 * i, 0])
    return path


class _FdSampler(threading.Thread):
    """The most entries ``/proc/PID/fd`` had while the process ran."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        where = f"/proc/{self.pid}/fd"
        while not self.done.is_set():
            try:
                self.peak = max(self.peak, len(os.listdir(where)))
            except OSError:  # gone, or not Linux
                return
            self.done.wait(0.003)


def timed(cmd: list[str]) -> tuple[float, float, int, int]:
    """(seconds, peak RSS in MiB, most open descriptors, exit status) of one command."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = _FdSampler(proc.pid)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    sampler.done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        print(f"  {' '.join(cmd)}: exit {proc.returncode}\n{err[-800:]}", file=sys.stderr)
    return seconds, usage.ru_maxrss / 1024, sampler.peak, proc.returncode


def commands(records: Path, store: Path, dataset: Path) -> list[tuple[str, list[str]]]:
    cli = [sys.executable, "-m", "rmqarrow"]
    key = ["--topic", "T", "--key", "k7", "--max-num", "64"]
    return [
        ("build", [*cli, "build", str(store), "--from", str(records), *GEO]),
        ("info", [*cli, "info", str(store), *GEO]),
        ("check", [*cli, "check", str(store), *GEO]),
        ("query native", [*cli, "query", str(store), *key, *GEO]),
        ("query duckdb (store)", [*cli, "query", str(store), *key, "--engine", "duckdb", *GEO]),
        ("export", [*cli, "export", str(store), str(dataset), *GEO]),
        ("query duckdb (dataset)", [*cli, "query", str(dataset), *key, "--engine", "duckdb"]),
        (
            "sql (dataset)",
            [*cli, "sql", str(dataset), "SELECT count(*), count(DISTINCT file_name) FROM entries"],
        ),
        ("stats (dataset)", [*cli, "stats", str(dataset)]),
        (
            "verify --dataset",
            [
                *cli,
                "verify",
                str(store),
                "--dataset",
                str(dataset),
                "--engines",
                "native,duckdb",
                "--sample",
                "200",
                *GEO,
            ],
        ),
    ]


def run(full: bool, workdir: Path, counts: tuple[int, ...] | None = None) -> list[dict[str, Any]]:
    """Rows: each command at each file count (see the module doc).  ``make bench`` (not
    ``full``) runs the quick counts."""
    counts = counts or (FULL_COUNTS if full else QUICK_COUNTS)
    results: dict[tuple[str, int], tuple[float, float, int, int]] = {}
    for n in counts:
        records = write_records(workdir / f"records-{n}.csv", n)
        store, dataset = workdir / f"store-{n}", workdir / f"dataset-{n}"
        for name, cmd in commands(records, store, dataset):
            results[name, n] = r = timed(cmd)
            print(
                f"  {n:>6} files {name}: {r[0]:.2f} s, {r[1]:.0f} MiB, {r[2]} fds, "
                f"exit {r[3]}; load {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
                flush=True,
            )
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(dataset, ignore_errors=True)
        records.unlink()
    rows: list[dict[str, Any]] = []
    base_n = counts[0]
    for name, _cmd in commands(Path(), Path(), Path()):
        for n in counts:
            s, rss, fds, rc = results[name, n]
            base = results[name, base_n][0]
            rows.append(
                {
                    "benchmark": "files",
                    "variant": f"{name}, {n:,} files",
                    "items": n,
                    "seconds": round(s, 3),
                    "per_s": round(n / s, 1),
                    "vs_baseline": round(s / base, 2) if base else None,
                    "peak_rss_mb": round(rss, 1),
                    "max_fds": fds,
                    "ms_per_file": round(1000 * s / n, 3),
                    "note": f"exit {rc}; load {os.getloadavg()[0]:.1f}",
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"only {', '.join(map(str, QUICK_COUNTS))} files"
    )
    parser.add_argument("--files", help="file counts, comma-separated (100,1000,10000)")
    parser.add_argument("--workdir", type=Path, help="where stores go (default: a temp dir)")
    args = parser.parse_args(argv)
    counts = (
        tuple(int(c) for c in args.files.split(","))
        if args.files
        else QUICK_COUNTS
        if args.quick
        else FULL_COUNTS
    )
    print(f"load {os.getloadavg()}", file=sys.stderr)
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            print_rows(run(True, Path(tmp), counts))
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    print_rows(run(True, args.workdir, counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
