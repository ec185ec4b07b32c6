"""Progress of long jobs, reported to a callback: the library counts, the caller renders.

A library function that may run for a while takes ``progress: ProgressCallback | None``
and counts its work with :class:`Progress`; the callback receives a
:class:`ProgressUpdate` at most ten times a second and once more when the job ends.  The
command line renders updates as a bar on a terminal; a Python caller may log them, feed a
notebook widget, or pass nothing.  Threads may count into one :class:`Progress`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rmqarrow._closing import Closing

__all__ = ["Progress", "ProgressCallback", "ProgressUpdate"]


@dataclass(frozen=True)
class ProgressUpdate:
    """How far a job is: ``done`` of ``total`` (None when unknown) ``unit`` so far."""

    label: str
    done: int
    total: int | None
    unit: str
    seconds: float
    finished: bool = False


ProgressCallback = Callable[[ProgressUpdate], None]


class Progress(Closing):
    """``with Progress(total, "building", "records", callback=cb) as p: p.advance(n)``."""

    def __init__(
        self,
        total: int | None,
        label: str,
        unit: str = "",
        *,
        callback: ProgressCallback | None = None,
        interval: float = 0.1,
    ) -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.done = 0
        self._callback = callback
        self._interval = interval
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._last = 0.0
        self._finished = False

    def _update(self, now: float, finished: bool) -> ProgressUpdate:
        return ProgressUpdate(
            self.label, self.done, self.total, self.unit, now - self._start, finished
        )

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if self._callback is None:
                return
            now = time.monotonic()
            if now - self._last < self._interval:
                return
            self._last = now
            update = self._update(now, False)
        self._callback(update)

    def close(self) -> None:
        """Report the final count once."""
        with self._lock:
            if self._finished or self._callback is None:
                self._finished = True
                return
            self._finished = True
            update = self._update(time.monotonic(), True)
        self._callback(update)
