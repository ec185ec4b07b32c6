"""The index key hash over many keys at once, on the UTF-8 bytes of an Arrow array.

Equal key by key to :func:`rmqarrow.format.hashing.index_key_hash`.  With numba
installed (the ``fast`` extra) a compiled pass hashes each all-ASCII key as a vectorized
dot product with powers of 31 and decodes the others to UTF-16 units exactly
(:mod:`rmqarrow.kernels._numba`); without it a pure-numpy kernel gives identical
results: keys are decoded to UTF-16 units in bulk and hashed in cache-sized blocks with
Horner's rule one column at a time over the keys left-zero-padded to the block's longest
key (a leading zero unit does not change a Java hash).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from rmqarrow.errors import EngineUnavailableError, InvalidKeyError, InvalidValueError
from rmqarrow.format.hashing import check_key
from rmqarrow.kernels import _compiled as _kernels

__all__ = ["check_keys", "index_key_hashes", "kernel_name", "key_array"]

#: Keys per Horner block of the numpy kernel (keeps each column in cache).
_BLOCK_KEYS = 1 << 14


# -- input -----------------------------------------------------------------------------------


def key_array(keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> pa.Array:
    """``keys`` as one Arrow array of UTF-8 bytes (large_string, or large_binary when a
    Python key holds a lone surrogate, encoded as Java would see it); nulls refused."""
    checked = check_keys(keys)
    if isinstance(checked, pa.ChunkedArray):
        if checked.num_chunks == 1:
            return checked.chunk(0)
        return checked.combine_chunks() if checked.num_chunks else pa.array([], checked.type)
    return checked


def check_keys(keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> pa.Array | pa.ChunkedArray:
    """Validate ``keys`` (str only, no nulls); a chunked array stays chunked (no copy)."""
    if not isinstance(keys, pa.Array | pa.ChunkedArray):
        values = keys if isinstance(keys, list) else list(keys)
        for k in values:
            check_key(k)
        try:
            return pa.array(values, type=pa.large_string())
        except UnicodeEncodeError:
            return pa.array(
                [k.encode("utf-8", "surrogatepass") for k in values], type=pa.large_binary()
            )
    if pa.types.is_string_view(keys.type):
        keys = keys.cast(pa.large_string())
    if not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        raise InvalidKeyError(f"index keys must be an Arrow string array, got {keys.type}")
    if keys.null_count:
        raise InvalidKeyError(f"index keys hold {keys.null_count} nulls; a key must be a str")
    return keys


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int64 of n+1 relative to data, data uint8) without copying the data."""
    n = len(arr)
    _, offsets_buf, data_buf = arr.buffers()
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    width = 8 if large else 4
    offsets = np.frombuffer(
        offsets_buf,
        dtype=np.int64 if large else np.int32,
        count=n + 1,
        offset=arr.offset * width,
    ).astype(np.int64, copy=False)
    start, stop = (int(offsets[0]), int(offsets[-1])) if n else (0, 0)
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)[start:stop]
        if data_buf is not None and stop > start
        else np.empty(0, np.uint8)
    )
    return offsets - start, data


def _raw_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets of n+1, absolute into data; the whole data buffer): no copy, no arithmetic.

    For the compiled kernel, which may read a few bytes past a key inside the buffer.
    """
    n = len(arr)
    _, offsets_buf, data_buf = arr.buffers()
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    offsets = np.frombuffer(
        offsets_buf,
        dtype=np.int64 if large else np.int32,
        count=n + 1,
        offset=arr.offset * (8 if large else 4),
    )
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    )
    return offsets, data


# -- kernels -------------------------------------------------------------------------------


def kernel_name() -> str:
    """``"numba"`` or ``"numpy"``: the kernel :func:`index_key_hashes` uses here."""
    return _kernels.kernel_name()


#: Keys below which :func:`index_key_hashes` stays on one thread whatever ``threads`` says.
PARALLEL_FROM = 1 << 17


def index_key_hashes(
    keys: pa.Array | pa.ChunkedArray | Sequence[str],
    *,
    kernel: str | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Vectorized :func:`index_key_hash` over many keys, as an int32 array.

    ``kernel`` forces ``"numba"`` or ``"numpy"`` (tests compare them); by default the
    compiled kernel is used when numba is importable.  ``threads`` > 1 hashes that many
    slices at once with the compiled kernel (callers with the cores to spare: the bulk
    lookup; the bulk build hashes beside its writer already).
    """
    if isinstance(keys, pa.ChunkedArray) and keys.num_chunks > 1:
        return np.concatenate(
            [index_key_hashes(c, kernel=kernel, threads=threads) for c in keys.chunks]
            or [np.empty(0, np.int32)]
        )
    arr = key_array(keys)
    module = _kernels.compiled() if kernel in (None, "numba") else None
    if kernel == "numba" and module is None:
        raise EngineUnavailableError("the numba kernel needs numba: pip install rmqarrow[fast]")
    if kernel not in (None, "numba", "numpy"):
        raise InvalidValueError(f"kernel must be 'numba' or 'numpy', got {kernel!r}")
    if module is not None and threads > 1 and len(arr) >= PARALLEL_FROM:
        step = -(-len(arr) // threads)
        with ThreadPoolExecutor(threads, thread_name_prefix="rmqarrow-hash") as pool:
            parts = pool.map(
                lambda a: module.index_hashes(*_raw_buffers(arr.slice(a, step))),
                range(0, len(arr), step),
            )
            return np.concatenate(list(parts))
    if module is not None and len(arr):
        hashes: np.ndarray = module.index_hashes(*_raw_buffers(arr))
        return hashes
    return _abs_hash(_java_hashes_numpy(*_buffers(arr)))


def _abs_hash(h: np.ndarray) -> np.ndarray:
    """``indexKeyHashMethod``: abs of the int32 hash, ``Integer.MIN_VALUE`` -> 0."""
    signed = h.view(np.int32)
    out = np.abs(signed)  # abs(MIN) stays MIN in int32 ...
    out[out < 0] = 0  # ... and RocketMQ maps it to 0
    return out


def _java_hashes_numpy(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Java ``String.hashCode`` (as uint32) of each key, pure numpy."""
    n = offsets.size - 1
    out = np.zeros(n, dtype=np.uint32)
    if n == 0 or data.size == 0:
        return out
    if bool((data >= 0x80).any()):
        units, offsets = _utf16_units(offsets, data)
    else:
        units = data
    lengths = np.diff(offsets)
    padded_units = np.concatenate([units, np.zeros(1, units.dtype)])
    for start in range(0, n, _BLOCK_KEYS):
        stop = min(start + _BLOCK_KEYS, n)
        out[start:stop] = _horner_block(
            padded_units, offsets[start : stop + 1], int(lengths[start:stop].max())
        )
    return out


def _horner_block(units: np.ndarray, offsets: np.ndarray, width: int) -> np.ndarray:
    """Hash keys ``units[offsets[i]:offsets[i+1]]`` as if left-zero-padded to ``width``.

    Column ``j`` of the padded layout is gathered for all keys at once (a key shorter than
    ``width - j`` reads the zero unit at ``units[-1]``), then folded with Horner's rule.
    """
    starts, ends = offsets[:-1], offsets[1:]
    h = np.zeros(starts.size, dtype=np.uint32)
    zero = units.size - 1
    idx = ends - width
    for _ in range(width):
        col = units[np.where(idx >= starts, idx, zero)]
        h *= np.uint32(31)
        h += col
        idx += 1
    return h


def _utf16_units(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode UTF-8 bytes to UTF-16 code units (uint32) and their per-key offsets.

    Accepts what ``str.encode("utf-8", "surrogatepass")`` writes, so a lone surrogate
    becomes its own unit as in Java.
    """
    d = np.concatenate([data, np.zeros(3, np.uint8)]).astype(np.uint32)
    lead = np.flatnonzero((data & 0xC0) != 0x80)
    b0, b1, b2, b3 = d[lead], d[lead + 1] & 0x3F, d[lead + 2] & 0x3F, d[lead + 3] & 0x3F
    cp = np.where(
        b0 < 0x80,
        b0,
        np.where(
            b0 < 0xE0,
            ((b0 & 0x1F) << 6) | b1,
            np.where(
                b0 < 0xF0,
                ((b0 & 0x0F) << 12) | (b1 << 6) | b2,
                ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3,
            ),
        ),
    )
    pair = cp >= 0x10000
    width = 1 + pair.astype(np.int64)
    ends = np.cumsum(width)
    units = np.empty(int(ends[-1]) if ends.size else 0, dtype=np.uint32)
    at = ends - width
    v = cp - 0x10000
    units[at] = np.where(pair, 0xD800 + (v >> 10), cp)
    units[at[pair] + 1] = 0xDC00 + (v[pair] & 0x3FF)
    # units before each key's start byte = new offsets
    lead_before = np.searchsorted(lead, offsets, side="left")
    cum = np.concatenate([[0], ends])
    return units, cum[lead_before].astype(np.int64)
