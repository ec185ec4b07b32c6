"""A bounded set of open index-file maps, least recently used closed first.

CPython's ``mmap`` keeps a duplicate descriptor of every file it maps, so a store of
thousands of files mapped at once needs thousands of descriptors (past the common
``ulimit -n 1024``) and as many address-space reservations.  An :class:`IndexFile` keeps
its header in memory and maps its bytes only while it is used; this pool holds at most
:func:`capacity` maps at once and lets go of the least recently used one when another
file needs mapping.  Letting go drops the pool's reference: the map (and its descriptor)
closes as soon as no caller holds a view of it, so a walk in progress is never cut short.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

from rmqarrow._limits import fd_soft_limit

__all__ = ["Releasable", "capacity", "forget", "set_capacity", "touch"]

#: At most this many maps however high the descriptor limit: enough for every walk and
#: build (they use one file at a time), small enough that memory stays flat.
DEFAULT_CAPACITY = 64


class Releasable(Protocol):
    def _release_map(self) -> None: ...


_lock = threading.RLock()
_open: OrderedDict[int, Releasable] = OrderedDict()
_capacity: int | None = None


def capacity() -> int:
    """Maps kept open at most: :data:`DEFAULT_CAPACITY`, or an eighth of the soft
    descriptor limit when that is lower (the rest is for Parquet, DuckDB, Python)."""
    global _capacity
    if _capacity is None:
        soft = fd_soft_limit()
        _capacity = DEFAULT_CAPACITY if soft is None else max(2, min(DEFAULT_CAPACITY, soft // 8))
    return _capacity


def set_capacity(n: int | None) -> None:
    """Set the bound (None: derive it again from the limit); closes maps over it."""
    global _capacity
    _capacity = None if n is None else max(1, int(n))
    _evict(capacity())


def touch(f: Releasable) -> None:
    """``f`` holds a map and was just used: keep it, and close the least recently used
    others past the bound."""
    with _lock:
        key = id(f)
        if key in _open:
            _open.move_to_end(key)
            return
        _open[key] = f
    _evict(capacity())


def forget(f: Releasable) -> None:
    """``f`` closed its map itself."""
    with _lock:
        _open.pop(id(f), None)


def _evict(bound: int) -> None:
    while True:
        with _lock:
            if len(_open) <= bound:
                return
            _key, victim = _open.popitem(last=False)
        victim._release_map()


def open_count() -> int:
    """Maps the pool holds now (tests and benchmarks)."""
    with _lock:
        return len(_open)
