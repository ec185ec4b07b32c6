"""Faulting a writable file's pages in ahead of the bulk put's writes.

A new file's pages cost most where the memory behind them is slow to hand out: on a
virtual machine whose host takes freed memory back (free page reporting), faulting in a
full file's 420 MB took 0.35-0.42 CPU-s instead of 0.07 in runs minutes apart, with the
same faults and page sizes.  So the work is not left to the writes (one fault per page),
nor to one thread: :class:`Pager` hands out pieces of the range to whichever thread is
free, each faulted in with one ``madvise(MADV_POPULATE_WRITE)`` call (Linux >= 5.14;
elsewhere the writes fault the pages in as before).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import sys
import threading
from collections.abc import Callable

from rmqarrow.format.layout import INDEX_SIZE, OpenIndex

__all__ = ["Pager", "fault_in"]

#: Linux's ``madvise(MADV_POPULATE_WRITE)``: fault a range in for writing, in one call.
_MADV_POPULATE_WRITE = 23
#: Entries a thread faults in per claim (2 MiB, a few ms where the memory is slow to hand
#: out): a thread that faults while it waits for the other one is late by at most a
#: piece when the other is done, and the calls still cost nothing.
PIECE = (2 << 20) // INDEX_SIZE


@functools.cache
def _libc_madvise() -> Callable[[int, int, int], int] | None:
    """libc's ``madvise`` through ctypes, which lets go of the GIL for the call (the
    :mod:`mmap` method holds it, stalling the other thread's Python between kernels)."""
    if not sys.platform.startswith("linux"):  # the advice number is Linux's
        return None
    try:
        func = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError, TypeError):
        return None
    func.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    func.restype = ctypes.c_int
    return func


def fault_in(f: OpenIndex, a: int, b: int) -> bool:
    """Fault in entries ``a .. b-1`` for writing (``a < 0``: the header and slot table);
    False when the system would not.

    A hint only: where the call is missing or refused, the writes fault the pages in.
    """
    g = f.regions.geometry
    start = 0 if a < 0 else (g.entries_offset + a * INDEX_SIZE) & ~(mmap.PAGESIZE - 1)
    stop = min(g.entries_offset if a < 0 else g.entries_offset + b * INDEX_SIZE, g.file_size)
    if stop <= start:
        return True
    madvise = _libc_madvise()
    header = f.regions.header
    if madvise is None or f.regions.mm.closed or header.size == 0:  # closed: no map
        return False
    base = header.ctypes.data  # the map's first byte
    return madvise(base + start, stop - start, _MADV_POPULATE_WRITE) == 0


class Pager:
    """Faults in entries from ``start`` on, a piece at a time, for any thread that asks.

    :meth:`fault_next` faults in the next unclaimed piece below ``stop``;
    :meth:`fault_until` returns once every piece below ``stop`` is claimed.  A piece
    another thread claimed may still be in progress (a write there simply waits for it).
    """

    def __init__(self, f: OpenIndex, start: int) -> None:
        self._file = f
        self._next = start
        self._lock = threading.Lock()

    def fault_next(self, stop: int) -> bool:
        """Fault in the next piece below ``stop``; False when every one is claimed."""
        with self._lock:
            a = self._next
            if a >= stop:
                return False
            self._next = b = min(a + PIECE, stop)
        fault_in(self._file, a, b)
        return True

    def fault_until(self, stop: int) -> None:
        while self.fault_next(stop):
            pass
