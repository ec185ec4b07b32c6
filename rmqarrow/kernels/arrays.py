"""Argument arrays of the bulk kernels: ints from numpy, Arrow or Python, checked once."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.java import JAVA_LONG_MAX, JAVA_LONG_MIN

__all__ = ["int64_values", "per_query"]


def int64_values(name: str, values: object, n: int | None = None) -> np.ndarray:
    """``values`` (numpy, Arrow or a sequence of ints) as int64, checked; ``n`` = length."""
    if isinstance(values, pa.ChunkedArray | pa.Array):
        if values.null_count:
            raise InvalidValueError(f"{name} holds {values.null_count} nulls; need int64 values")
        if not pa.types.is_integer(values.type):
            raise InvalidValueError(f"{name} must be integers, got Arrow {values.type}")
        arr = np.asarray(values.to_numpy(zero_copy_only=False))
    elif isinstance(values, np.ndarray):
        arr = values
    else:
        seq = list(values)  # type: ignore[call-overload]
        for v in seq:
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise InvalidValueError(f"{name} must hold ints, got {type(v).__name__}: {v!r}")
        big = [v for v in seq if not JAVA_LONG_MIN <= int(v) <= JAVA_LONG_MAX]
        if big:
            raise InvalidValueError(f"{name} must fit a Java long (int64), got {int(big[0])}")
        arr = np.asarray(seq, dtype=np.int64) if seq else np.empty(0, np.int64)
    if arr.ndim != 1:
        raise InvalidValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise InvalidValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > JAVA_LONG_MAX:
        raise InvalidValueError(f"{name} must fit a Java long (int64), got {int(arr.max())}")
    if n is not None and arr.size != n:
        raise InvalidValueError(f"{name} has {arr.size} values, expected {n} (one per key)")
    return arr.astype(np.int64, copy=False)


def per_query(name: str, value: object, n: int) -> np.ndarray:
    """A scalar repeated ``n`` times (a read-only view: no memory per query), or ``n``
    values: as int64, checked to fit a long."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        if not JAVA_LONG_MIN <= int(value) <= JAVA_LONG_MAX:
            raise InvalidValueError(f"{name} must fit a Java long (int64), got {value}")
        return np.broadcast_to(np.int64(value), (n,))
    return int64_values(name, value, n)
