"""The one way rmqarrow imports an optional package: lazily, with the fix in the error.

Optional packages (pyspark, numba, matplotlib, lz4, zstandard) are imported only when a
feature needs them, through :func:`require` (an :class:`EngineUnavailableError` naming
the extra to install when missing) or :func:`compiled_kernels` (the numba-compiled form
of a kernel module, or None: callers then run their numpy form, which gives identical
results).  ``RMQARROW_NO_NUMBA=1`` turns compiled kernels off.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

from rmqarrow._memory import describe_limit, library_note
from rmqarrow.errors import EngineUnavailableError

__all__ = ["compiled_kernels", "numba_enabled", "require", "reset_compiled"]

#: package -> the extra of ``rmqarrow`` that installs it
EXTRAS = {
    "pyspark": "spark",
    "numba": "fast",
    "matplotlib": "plot",
    "lz4": "compression",
    "zstandard": "compression",
    "rocksdict": "rocksdb",
}

_compiled: dict[str, ModuleType | None] = {}


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`EngineUnavailableError` saying how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        fix = f"pip install 'rmqarrow[{extra}]'" if extra else f"pip install {top}"
        raise EngineUnavailableError(
            f"{purpose} needs {top}, which is not importable ({exc}); install it with: {fix}"
        ) from None


def numba_enabled() -> bool:
    """False when ``RMQARROW_NO_NUMBA`` is set to anything but empty or ``0``."""
    return os.environ.get("RMQARROW_NO_NUMBA", "") in ("", "0")


def compiled_kernels(module: str) -> ModuleType | None:
    """The numba kernel module ``module`` (imported once), or None without numba."""
    if module not in _compiled:
        found: ModuleType | None = None
        if numba_enabled():
            try:
                found = importlib.import_module(module)
            except ImportError:
                found = None
            except (OSError, MemoryError) as exc:
                # llvmlite cannot map its library under a tight ulimit -v: it says "could
                # not find/load shared object file"; the numpy kernels give the same answers
                logging.getLogger(__name__).info(
                    "numba could not load (%s) under %s: using the numpy kernels (same answers)",
                    library_note(exc),
                    describe_limit(),
                )
                found = None
        _compiled[module] = found
    return _compiled[module]


def reset_compiled() -> None:
    """Look compiled kernels up again on next use (tests switch numba on and off)."""
    _compiled.clear()
