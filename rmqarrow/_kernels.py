"""Which kernels run here: the compiled ones (numba, the ``fast`` extra) or pure numpy.

:func:`compiled` imports :mod:`rmqarrow._numba_kernels` once and returns it, or None when
numba is not installed (or ``RMQARROW_NO_NUMBA`` is set); callers then use their numpy
forms, which give identical results.  The first use of a compiled kernel compiles it
(cached on disk afterwards).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["compiled", "kernel_name", "reset"]

_module: ModuleType | bool | None = False  # False: not looked up yet


def compiled() -> ModuleType | None:
    """The compiled-kernel module, or None when numba is unavailable."""
    global _module
    if _module is False:
        if os.environ.get("RMQARROW_NO_NUMBA"):
            _module = None
        else:
            try:
                _module = importlib.import_module(f"{__package__}._numba_kernels")
            except ImportError:
                _module = None
    return _module  # type: ignore[return-value]


def kernel_name() -> str:
    """``"numba"`` or ``"numpy"``: the kernels the bulk engine uses in this process."""
    return "numpy" if compiled() is None else "numba"


def reset() -> None:
    """Look the compiled kernels up again on next use (tests)."""
    global _module
    _module = False
