"""Text output shared by the command line and the reports: aligned tables and JSON.

Human tables by default, JSON for machines; every report in rmqarrow renders itself
through these, so the command line stays a thin leaf.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Collection, Mapping, Sequence
from enum import Enum
from typing import Any, TextIO

__all__ = ["json_line", "json_text", "print_json", "print_kv", "print_table", "table_lines"]


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
    lines, _ = table_lines(rows, columns, grouped=grouped)
    for text in lines:
        print(text, file=out or sys.stdout)


def table_lines(
    rows: Sequence[Sequence[Any]],
    columns: Sequence[str],
    *,
    grouped: Collection[str] = (),
    widths: Sequence[int] = (),
    header: bool = True,
) -> tuple[list[str], list[int]]:
    """The lines of :func:`print_table` and the column widths used: each at least the
    given ``widths`` (so a table printed block by block stays aligned while its values
    fit the first block's); without ``header``, the rows only."""

    def cell(v: Any, group: bool) -> str:
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, int):
            return f"{v:,}" if group else str(v)
        if isinstance(v, float):
            return f"{v:,.3f}" if group else f"{v:.3f}"
        # A vocabulary value, a list or a mapping reads as its words, not as Python's
        # repr: the table is for an operator, who never typed ``['a', 'b']``.
        if isinstance(v, Enum):
            return cell(v.value, group)
        if isinstance(v, list | tuple):
            return ", ".join(cell(x, group) for x in v)
        if isinstance(v, Mapping):
            return ", ".join(f"{k}={cell(x, group)}" for k, x in v.items())
        return "" if v is None else str(v)

    flags = [c in grouped for c in columns]
    text = [[cell(v, g) for v, g in zip(row, flags, strict=False)] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        and bool(rows)
        for i in range(len(columns))
    ]
    least = list(widths) + [0] * (len(columns) - len(widths))
    found = [max([len(c), least[i]] + [len(r[i]) for r in text]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, found, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    lines = [line(list(columns)), "  ".join("-" * w for w in found)] if header else []
    return lines + [line(r) for r in text], found


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
    (out or sys.stdout).write(json_text(obj) + "\n")


def json_line(obj: Any) -> str:
    """``obj`` as one line of JSON Lines (compact, no newline inside)."""
    return json.dumps(
        _finite(obj), ensure_ascii=False, default=str, allow_nan=False, separators=(",", ":")
    )


def json_text(obj: Any) -> str:
    """``obj`` as :func:`print_json` writes it (without the final newline)."""
    return json.dumps(_finite(obj), indent=2, ensure_ascii=False, default=str, allow_nan=False)
