"""The compiled key-hash kernel (numba, the ``fast`` extra).

:func:`java_hashes` makes one pass over UTF-8 bytes, decoding each key to UTF-16 code
units on the fly (a non-BMP character becomes a surrogate pair, a surrogate encoded with
``surrogatepass`` its own unit) and folding them with Java's ``h = 31*h + unit``.
Measured at the default geometry, the pure-numpy hash (about 3 M keys/s) alone would
exceed the whole build budget of 12 M keys/s; this kernel runs at about 25 M keys/s.
(A compiled put loop was tried too and measured no faster than the numpy chaining in
:mod:`rmqarrow.kernels.put`, so there is none.)

Importing this module raises ImportError without numba; :mod:`rmqarrow.kernels._compiled` then
reports no compiled kernels and the callers use their pure-numpy forms, which give
identical results (the tests run both).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["java_hashes"]


_U = np.uint64


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _kernel(offsets: np.ndarray, data: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    # uint64 arithmetic wraps mod 2**64, so its low 32 bits are Java's int arithmetic:
    # no masking inside the loops (and no signed operand, which would make numba use
    # floats).  While the next eight bytes are ASCII they are folded at once:
    # h*31^8 + sum(u_j * 31^(7-j)); the rest is decoded from UTF-8 unit by unit.
    mask6 = _U(0x3F)
    for i in range(offsets.size - 1):
        k = offsets[i]
        stop = offsets[i + 1]
        h = _U(0)
        while k + 8 <= stop:
            u0 = _U(data[k])
            u1 = _U(data[k + 1])
            u2 = _U(data[k + 2])
            u3 = _U(data[k + 3])
            u4 = _U(data[k + 4])
            u5 = _U(data[k + 5])
            u6 = _U(data[k + 6])
            u7 = _U(data[k + 7])
            if (u0 | u1 | u2 | u3 | u4 | u5 | u6 | u7) >= _U(0x80):
                break
            h = (
                h * _U(852891037441)
                + u0 * _U(27512614111)
                + u1 * _U(887503681)
                + u2 * _U(28629151)
                + u3 * _U(923521)
                + u4 * _U(29791)
                + u5 * _U(961)
                + u6 * _U(31)
                + u7
            )
            k += 8
        while k < stop:
            b0 = _U(data[k])
            if b0 < _U(0x80):
                h = h * _U(31) + b0
                k += 1
            elif b0 < _U(0xE0):
                h = h * _U(31) + (((b0 & _U(0x1F)) << _U(6)) | (_U(data[k + 1]) & mask6))
                k += 2
            elif b0 < _U(0xF0):
                cp = (
                    ((b0 & _U(0x0F)) << _U(12))
                    | ((_U(data[k + 1]) & mask6) << _U(6))
                    | (_U(data[k + 2]) & mask6)
                )
                h = h * _U(31) + cp
                k += 3
            else:
                cp = (
                    ((b0 & _U(0x07)) << _U(18))
                    | ((_U(data[k + 1]) & mask6) << _U(12))
                    | ((_U(data[k + 2]) & mask6) << _U(6))
                    | (_U(data[k + 3]) & mask6)
                )
                v = cp - _U(0x10000)
                h = h * _U(31) + (_U(0xD800) + (v >> _U(10)))
                h = h * _U(31) + (_U(0xDC00) + (v & _U(0x3FF)))
                k += 4
        out[i] = h & _U(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _ascii_kernel(  # pragma: no cover
    offsets: np.ndarray, data: np.ndarray, out: np.ndarray
) -> None:
    # Every byte is ASCII (one unit each): fold the key's first len % 8 units one by
    # one, then eight at a time with no checks.
    for i in range(offsets.size - 1):
        k = offsets[i]
        stop = offsets[i + 1]
        h = _U(0)
        for j in range(k, k + ((stop - k) & 7)):
            h = h * _U(31) + _U(data[j])
        k += (stop - k) & 7
        while k < stop:
            h = (
                h * _U(852891037441)
                + _U(data[k]) * _U(27512614111)
                + _U(data[k + 1]) * _U(887503681)
                + _U(data[k + 2]) * _U(28629151)
                + _U(data[k + 3]) * _U(923521)
                + _U(data[k + 4]) * _U(29791)
                + _U(data[k + 5]) * _U(961)
                + _U(data[k + 6]) * _U(31)
                + _U(data[k + 7])
            )
            k += 8
        out[i] = h & _U(0xFFFFFFFF)


def java_hashes(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Java ``String.hashCode`` (as uint32) of each key ``data[offsets[i]:offsets[i+1]]``."""
    out = np.empty(offsets.size - 1, dtype=np.uint32)
    if out.size:
        offsets = offsets.astype(np.int64, copy=False)
        if data.size == 0 or int(data.max()) < 0x80:  # one SIMD pass picks the kernel
            _ascii_kernel(offsets, data, out)
        else:
            _kernel(offsets, data, out)
    return out

