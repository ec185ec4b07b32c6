"""The engine registry: every way rmqarrow answers a key query, reached by name.

``native`` is the reference (the chained lookup over the index files); ``duckdb`` and
``spark`` answer the same queries in SQL over a native store or an exported dataset.
Engines are imported only when used, so naming one costs nothing until it runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path

from rmqarrow.errors import UsageError
from rmqarrow.format.queries import Query

__all__ = ["ENGINES", "answer_with_engine", "parse_engines"]

#: name -> module holding ``answer_queries(target, queries, **options)``
_MODULES = {
    "native": "rmqarrow.index.service",
    "duckdb": "rmqarrow.converters.duckdb.sql",
    "spark": "rmqarrow.converters.spark.sql",
}
ENGINES = tuple(_MODULES)


def parse_engines(spec: str, option: str = "--engines") -> list[str]:
    """``"native,duckdb"`` -> ``["native", "duckdb"]``; unknown or no names are refused."""
    names = [e.strip() for e in spec.split(",") if e.strip()]
    unknown = [e for e in names if e not in ENGINES]
    if unknown or not names:
        raise UsageError(
            f"{option}: unknown {unknown or 'empty list'}; choose from {', '.join(ENGINES)}"
        )
    return list(dict.fromkeys(names))


def answer_with_engine(
    engine: str,
    target: str | os.PathLike[str],
    queries: Sequence[Query],
    *,
    dataset: str | os.PathLike[str] | None = None,
    master: str | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> list[list[int]]:
    """Answer ``queries`` with one engine over a native store (or ``dataset``).

    Every engine must give the native answer: offsets in native order per query.
    """
    if engine not in _MODULES:
        raise UsageError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    if engine == "native" and dataset is not None:
        raise UsageError("a dataset is for the duckdb and spark engines; native reads the store")
    source = Path(dataset if dataset is not None else target)
    answer: Callable[..., list[list[int]]] = import_module(_MODULES[engine]).answer_queries
    options: dict[str, object] = {"hash_slot_num": hash_slot_num, "index_num": index_num}
    if engine == "spark":
        options["master"] = master
    return answer(source, list(queries), **options)
