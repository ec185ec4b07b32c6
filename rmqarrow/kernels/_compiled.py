"""Which kernels run here: the compiled ones (numba, the ``fast`` extra) or pure numpy.

:func:`compiled` returns :mod:`rmqarrow.kernels._numba`, or None when numba is not
installed (or ``RMQARROW_NO_NUMBA`` is set); callers then use their numpy forms, which
give identical results.  The first use of a compiled kernel compiles it (cached on disk).
"""

from __future__ import annotations

from types import ModuleType

from rmqarrow._optional import compiled_kernels, reset_compiled

__all__ = ["compiled", "kernel_name", "reset"]

_MODULE = "rmqarrow.kernels._numba"


def compiled() -> ModuleType | None:
    """The compiled-kernel module, or None when numba is unavailable."""
    return compiled_kernels(_MODULE)


def kernel_name() -> str:
    """``"numba"`` or ``"numpy"``: the kernels the bulk engine uses in this process."""
    return "numpy" if compiled() is None else "numba"


def reset() -> None:
    """Look the compiled kernels up again on next use (tests)."""
    reset_compiled()
