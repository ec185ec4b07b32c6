"""RocketMQ's index key hash, one key at a time: ``abs(String.hashCode())``, MIN -> 0.

Java hashes a string over its UTF-16 code units, ``h = 31*h + unit`` with int32
wraparound.  ``IndexFile.indexKeyHashMethod`` then takes ``Math.abs``, which leaves
``Integer.MIN_VALUE`` negative, and maps that negative result to 0 (the key
``"polygenelubricants"`` is such a key).  Exact for every Python ``str``: non-BMP
characters become surrogate pairs; lone surrogates are their own code unit, as in Java.
The vectorized form over Arrow arrays is :mod:`rmqarrow.kernels.hashing`.
"""

from __future__ import annotations

import numpy as np

from rmqarrow.errors import InvalidKeyError
from rmqarrow.format.java import JAVA_INT_MIN

__all__ = ["check_key", "index_key_hash", "java_string_hash"]


def check_key(key: object) -> str:
    """``key`` itself when it is a ``str``; :class:`InvalidKeyError` otherwise."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"an index key must be str, got {type(key).__name__}: {key!r:.80}")
    return key


def java_string_hash(key: str) -> int:
    """Java's ``String.hashCode()`` of ``key`` as a signed int32."""
    units = np.frombuffer(
        check_key(key).encode("utf-16-be", "surrogatepass"), dtype=">u2"
    ).astype(np.uint32)
    if units.size == 0:
        return 0
    h = int(np.sum(units * _powers_of_31(units.size)[::-1], dtype=np.uint32))
    return h - (1 << 32) if h >= 1 << 31 else h


def index_key_hash(key: str) -> int:
    """The slot hash RocketMQ's IndexFile stores for ``key`` (0 .. 2**31-1)."""
    h = java_string_hash(key)
    return 0 if h == JAVA_INT_MIN else abs(h)


_powers_table = np.ones(1, dtype=np.uint32)


def _powers_of_31(n: int) -> np.ndarray:
    """``31**k mod 2**32`` for k in 0..n-1 (grown on demand, shared)."""
    global _powers_table
    if _powers_table.size < n:
        size = max(n, 2 * _powers_table.size)
        table = np.empty(size, dtype=np.uint32)
        table[0] = 1
        table[1:] = np.cumprod(np.full(size - 1, 31, dtype=np.uint32), dtype=np.uint32)
        _powers_table = table
    return _powers_table[:n]
