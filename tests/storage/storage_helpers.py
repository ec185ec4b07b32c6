"""Helpers of the storage tests: the real CLI in a subprocess, small record inputs."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from rmqarrow.format.records import MessageRecord

#: A small geometry: files of 1,384 bytes, 63 entries each, so builds roll many files.
SLOTS, INDEX = 16, 64
GEO = ["--hash-slot-num", str(SLOTS), "--index-num", str(INDEX)]
T0 = 1_700_000_000_000


def records(n: int, start: int = 0) -> list[MessageRecord]:
    """``n`` records, two keys each (a unique key and one of 7 shared ones: long chains)."""
    return [
        MessageRecord("T", f"k{i % 7}", f"u{i}", 1000 + 100 * i, T0 + 1500 * i)
        for i in range(start, start + n)
    ]


def write_csv(path: Path, recs: list[MessageRecord]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["topic", "keys", "uniq_key", "commit_log_offset", "store_timestamp", "sys_flag"]
        )
        for r in recs:
            w.writerow(
                [r.topic, r.keys, r.uniq_key, r.commit_log_offset, r.store_timestamp, r.sys_flag]
            )
    return path


def cli(
    *args: object, crash: str | None = None, numba: bool = True, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``rmqarrow ARGS`` in a fresh interpreter; ``crash`` names a crash point
    (:mod:`rmqarrow._crash`) where the process SIGKILLs itself."""
    env = dict(os.environ)
    env.pop("RMQARROW_CRASH_AT", None)
    env.pop("RMQARROW_NO_NUMBA", None)
    if crash is not None:
        env["RMQARROW_CRASH_AT"] = crash
    if not numba:
        env["RMQARROW_NO_NUMBA"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "rmqarrow", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def hidden(directory: Path) -> list[str]:
    """Hidden entries of a directory (staging leftovers)."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The CLI's error: exactly one line on stderr, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]
