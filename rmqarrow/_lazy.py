"""Lazy package attributes (PEP 562): a package names its API without importing it.

``rmqarrow.converters`` and its engine packages list what they offer in ``__all__`` but
import a module only when one of its names is first used, so importing a package never
loads pyarrow.parquet, DuckDB or pyspark before they are needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from importlib.util import find_spec
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps each public name to
    the submodule (relative to ``package``, or absolute ``rmqarrow.…``) that defines it."""

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            # a subpackage reads as an attribute, as once imported (``rmqarrow.store``
            # right after ``import rmqarrow``), still loaded only when asked for
            if not name.startswith("_") and find_spec(f"{package}.{name}") is not None:
                return import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # a name a package re-exports from elsewhere in rmqarrow is given absolute
        where = module if module.startswith("rmqarrow.") else f"{package}.{module}"
        return getattr(import_module(where), name)

    def dir_() -> list[str]:
        return sorted(names)

    return getattr_, dir_
