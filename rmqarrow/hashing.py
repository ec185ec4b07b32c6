"""RocketMQ's index key hash: ``abs(String.hashCode())`` with ``Integer.MIN_VALUE`` -> 0.

Java hashes a string over its UTF-16 code units, ``h = 31*h + unit`` with int32
wraparound.  ``IndexFile.indexKeyHashMethod`` then takes ``Math.abs``, which leaves
``Integer.MIN_VALUE`` negative, and maps that negative result to 0 (the key
``"polygenelubricants"`` is such a key).  The scalar and the vectorized forms here are
exact for every Python ``str`` (non-BMP characters become surrogate pairs; lone
surrogates are their own code unit, as in Java).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .errors import InvalidKeyError

__all__ = ["index_key_hash", "index_key_hashes", "java_string_hash"]

_MASK32 = 0xFFFFFFFF
_BLOCK = 1 << 16


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidKeyError(f"an index key must be str, got {type(key).__name__}: {key!r:.80}")
    return key


def java_string_hash(key: str) -> int:
    """Java's ``String.hashCode()`` of ``key`` as a signed int32."""
    units = np.frombuffer(
        _check_key(key).encode("utf-16-be", "surrogatepass"), dtype=">u2"
    ).astype(np.uint32)
    if units.size == 0:
        return 0
    h = int(np.sum(units * _POWERS_OF_31(units.size)[::-1], dtype=np.uint32))
    return h - (1 << 32) if h >= 1 << 31 else h


def index_key_hash(key: str) -> int:
    """The slot hash RocketMQ's IndexFile stores for ``key`` (0 .. 2**31-1)."""
    h = java_string_hash(key)
    return 0 if h == -(1 << 31) else abs(h)


_powers_table = np.ones(1, dtype=np.uint32)


def _POWERS_OF_31(n: int) -> np.ndarray:  # noqa: N802 - reads as a table
    """``31**k mod 2**32`` for k in 0..n-1 (grown on demand, shared)."""
    global _powers_table
    if _powers_table.size < n:
        size = max(n, 2 * _powers_table.size)
        table = np.empty(size, dtype=np.uint32)
        table[0] = 1
        table[1:] = np.cumprod(np.full(size - 1, 31, dtype=np.uint32), dtype=np.uint32)
        _powers_table = table
    return _powers_table[:n]


def _as_string_array(keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> pa.Array:
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if not isinstance(keys, pa.Array):
        keys = list(keys)
        for k in keys:
            _check_key(k)
        keys = pa.array(keys, type=pa.large_string())
    if not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        raise InvalidKeyError(f"index keys must be an Arrow string array, got {keys.type}")
    if keys.null_count:
        raise InvalidKeyError(f"index keys hold {keys.null_count} nulls; a key must be a str")
    return keys.cast(pa.large_string())


def index_key_hashes(keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> np.ndarray:
    """Vectorized :func:`index_key_hash` over many keys, as an int32 array.

    ASCII keys are hashed in numpy blocks (weights ``31**k`` summed with ``reduceat``);
    keys with non-ASCII characters go through the exact scalar form.
    """
    arr = _as_string_array(keys)
    n = len(arr)
    out = np.empty(n, dtype=np.int32)
    for start in range(0, n, _BLOCK):
        block = arr.slice(start, min(_BLOCK, n - start))
        out[start : start + len(block)] = _hash_block(block)
    return out


def _hash_block(block: pa.Array) -> np.ndarray:
    n = len(block)
    _, offsets_buf, data_buf = block.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=n + 1, offset=block.offset * 8)
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]]
        if data_buf is not None
        else np.empty(0, np.uint8)
    )
    rel = offsets - offsets[0]
    lengths = np.diff(rel)
    h = np.zeros(n, dtype=np.uint32)
    ascii_keys = np.ones(n, dtype=bool)
    if data.size:
        high = np.flatnonzero(data >= 0x80)
        if high.size:
            owner = np.searchsorted(rel, high, side="right") - 1
            ascii_keys[np.unique(owner)] = False
        nonempty = lengths > 0
        starts = rel[:-1][nonempty]
        key_of_byte = np.repeat(np.arange(n)[nonempty], lengths[nonempty])
        exponent = (rel[1:][key_of_byte] - 1) - np.arange(data.size)
        with np.errstate(over="ignore"):
            weighted = data.astype(np.uint32) * _POWERS_OF_31(int(lengths.max()))[exponent]
        h[nonempty] = np.add.reduceat(weighted, starts, dtype=np.uint32)
    signed = h.view(np.int32)
    result = np.where(signed == np.int32(-(2**31)), np.int32(0), np.abs(signed))
    if not ascii_keys.all():
        for i in np.flatnonzero(~ascii_keys):
            result[i] = index_key_hash(block[int(i)].as_py())
    return result.astype(np.int32, copy=False)

