"""Text output shared by the command line and the reports: aligned tables and JSON.

Human tables by default, JSON for machines; every report in rmqarrow renders itself
through these, so the command line stays a thin leaf.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TextIO

__all__ = ["print_json", "print_kv", "print_table"]


def print_table(
    rows: Sequence[Sequence[Any]],
    columns: Sequence[str],
    out: TextIO | None = None,
    *,
    grouped: Collection[str] = (),
) -> None:
    """A plain aligned table; numbers right-aligned.

    Integers print plain (offsets, epoch-ms times and hashes must paste back into an
    option); only the columns named in ``grouped`` (counts) get thousands separators.
    """
    out = out or sys.stdout

    def cell(v: Any, group: bool) -> str:
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, int):
            return f"{v:,}" if group else str(v)
        if isinstance(v, float):
            return f"{v:,.3f}" if group else f"{v:.3f}"
        return "" if v is None else str(v)

    flags = [c in grouped for c in columns]
    text = [[cell(v, g) for v, g in zip(row, flags, strict=False)] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        and bool(rows)
        for i in range(len(columns))
    ]
    widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    print(line(list(columns)), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in text:
        print(line(r), file=out)


def print_kv(pairs: Mapping[str, Any], out: TextIO | None = None) -> None:
    """A two-column field/value table."""
    print_table([(k, v) for k, v in pairs.items()], ["field", "value"], out)


def _finite(obj: Any) -> Any:
    """``obj`` with NaN and infinities (a null read as a float, or a real one) as None:
    ``NaN`` is not JSON, and a consumer's parser would reject the whole answer."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def print_json(obj: Any, out: TextIO | None = None) -> None:
    json.dump(
        _finite(obj), out or sys.stdout, indent=2, ensure_ascii=False, default=str, allow_nan=False
    )
    (out or sys.stdout).write("\n")
