"""The one table printer of the benchmarks (each ``bench_*.py`` and ``run.py`` use it)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["COLUMNS", "peak_rss_mb", "print_rows", "row", "set_ratios", "timed"]

#: Leading columns, in this order; any other keys a row has follow, first seen first.
COLUMNS = ("benchmark", "variant", "items", "seconds", "per_s", "vs_baseline", "peak_rss_mb")


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def print_rows(rows: Sequence[dict[str, Any]], out: TextIO | None = None) -> None:
    """An aligned table of benchmark rows: numbers right-aligned, text left-aligned."""
    out = out or sys.stdout
    columns = [c for c in COLUMNS if any(c in r for r in rows)]
    for r in rows:
        columns += [k for k in r if k not in columns]
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    numeric = [
        all(isinstance(r.get(c), int | float) or r.get(c) is None for r in rows) for c in columns
    ]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in cells:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(row, widths, numeric, strict=True)
        ]
        print("  ".join(parts).rstrip(), file=out)


def row(
    benchmark: str, variant: str, items: int, seconds: float, note: str = "", **extra: Any
) -> dict[str, Any]:
    """One result row; ``vs_baseline`` is filled in by :func:`set_ratios`."""
    return {
        "benchmark": benchmark,
        "variant": variant,
        "items": items,
        "seconds": seconds,
        "per_s": items / seconds if seconds > 0 else float("inf"),
        "vs_baseline": 1.0,
        **extra,
        "note": note,
    }


def set_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's rate over its benchmark's baseline row (the one whose note says so)."""
    for r in rows:
        base = next(b for b in rows if b["benchmark"] == r["benchmark"] and "baseline" in b["note"])
        r["vs_baseline"] = r["per_s"] / base["per_s"]
    return rows


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``fn()``'s wall seconds and its result."""
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def write_record(out: Path, rows: Sequence[dict[str, Any]], **extra: Any) -> None:
    """A dated run record: when, the load and the cores beside the rows (and ``extra``'s
    keys: the command, a summary), so a figure in the docs can be traced to the run that
    made it."""
    record = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load": os.getloadavg(),
        "cpus": os.cpu_count(),
        **extra,
        "rows": list(rows),
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
