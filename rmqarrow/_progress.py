"""A small progress bar on stderr for long jobs (no dependency).

It draws only when stderr is a terminal (or ``force=True``), at most ten times a second,
so piping a command's output stays clean.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rmqarrow._closing import Closing

__all__ = ["Progress"]


class Progress(Closing):
    """``with Progress(total, "building") as p: p.advance(n)``."""

    def __init__(
        self,
        total: int | None,
        label: str,
        unit: str = "",
        *,
        force: bool = False,
        stream: TextIO | None = None,
    ) -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self._start = time.monotonic()
        self._last = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._last >= 0.1:
            self._last = now
            self._draw(now)

    def _draw(self, now: float, final: bool = False) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            head = f"{self.label} [{bar:<30}] {frac:6.1%} {self.done:,}/{self.total:,}"
        else:
            head = f"{self.label} {self.done:,}"
        tail = f" {self.unit}" if self.unit else ""
        self.stream.write(f"\r{head}{tail} {rate:,.0f}/s {elapsed:.1f}s" + ("\n" if final else ""))
        self.stream.flush()

    def close(self) -> None:
        """Draw the final line (when enabled)."""
        if self.enabled:
            self._draw(time.monotonic(), final=True)
