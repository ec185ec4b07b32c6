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

__all__ = ["check_key", "check_query_key", "index_key_hash", "java_string_hash"]


def check_key(key: object) -> str:
    """``key`` itself when it is a ``str``; :class:`InvalidKeyError` otherwise."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"an index key must be str, got {type(key).__name__}: {key!r:.80}")
    return key


def check_query_key(key: object, what: str = "key") -> str:
    """A key to look up: a ``str`` with no byte that is not UTF-8 (:class:`InvalidKeyError`).

    Such a byte reaches Python as a lone surrogate U+DC80..U+DCFF (``surrogateescape``:
    the command line, file names, ``os.fsdecode``).  No index key can hold it: a broker
    gets KEYS and UNIQ_KEY as UTF-8 property text and decodes them with ``new
    String(bytes, UTF_8)``, where a byte that is not UTF-8 becomes U+FFFD, and a Java
    client (``mqadmin queryMsgByKey``) decodes its argv the same way.  Hashing the escape
    would answer nothing, silently; so every engine refuses it, naming the byte.
    """
    key = check_key(key)
    if key.isascii():
        return key
    for i, ch in enumerate(key):
        if "\udc80" <= ch <= "\udcff":
            raise InvalidKeyError(
                f"{what} {_raw(key)!r:.120} holds the byte 0x{ord(ch) - 0xDC00:02X} at byte "
                f"{len(_raw(key[:i]))}, which is not UTF-8: a broker keeps keys as UTF-8 "
                "text, so no index key holds it (RocketMQ would read it as U+FFFD); give "
                "the key as UTF-8 text"
            )
    return key


def _raw(text: str) -> bytes:
    """The bytes ``text`` came from (escapes back to bytes; other surrogates as Java's)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def java_string_hash(key: str) -> int:
    """Java's ``String.hashCode()`` of ``key`` as a signed int32."""
    units = np.frombuffer(check_key(key).encode("utf-16-be", "surrogatepass"), dtype=">u2").astype(
        np.uint32
    )
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
