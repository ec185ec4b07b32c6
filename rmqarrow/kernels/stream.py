"""Whole-file passes that hold one chunk of the map at a time, whatever the file size.

:func:`entry_chunks` splits entries ``1..n`` into chunks; after the caller is done with a
chunk its pages are dropped from this process (``MADV_DONTNEED`` on a read-only map: they
stay in the page cache, so the next pass reads them from memory, not disk).  A pass that
touched every page of a 420 MB file would otherwise hold it all as resident memory until
the file is closed.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator

from rmqarrow.format.layout import MappedIndex

__all__ = ["CHUNK", "entry_chunks", "release_entries"]

#: Entries per chunk (80 MiB of the map).
CHUNK = 1 << 22


def entry_chunks(m: MappedIndex, n: int, chunk: int = CHUNK) -> Iterator[tuple[int, int]]:
    """``(a, b)`` ranges covering entries ``1..n``; each chunk's pages are released when
    the caller asks for the next one (or stops)."""
    for a in range(1, n + 1, chunk):
        b = min(a + chunk, n + 1)
        try:
            yield a, b
        finally:
            release_entries(m, a, b)


def release_entries(m: MappedIndex, a: int, b: int) -> None:
    """Drop the pages of entries ``a..b-1`` from this process (a read-only map only: a
    written map keeps its pages)."""
    base, page = m.geometry.entries_offset, mmap.PAGESIZE
    lo = (base + a * 20) // page * page
    hi = (base + b * 20) // page * page
    if hi > lo and not m.writable and not m.mm.closed:
        m.mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
