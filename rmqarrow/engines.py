"""The engine registry: every way rmqarrow answers a key query, keyed by format and engine.

Three index formats (``index``: RocketMQ's ``IndexFile``; ``tiered``: the RIP-65
``IndexStoreFile``; ``rocksdb``: the RIP-82 RocksDB message index) and three engines each:
``native`` is the reference (the chained lookup over the files, the RocksDB walk),
``duckdb`` and ``spark`` answer the same queries in SQL over the files or an exported
dataset.  Each engine is one function following the format's contract
(:class:`IndexEngine`, :class:`TieredEngine`, :class:`RocksDBEngine`), and gives one answer
shape per format: a list of commit-log offsets per query for ``index``, a list of items (or
the read error RocketMQ would raise) per query for ``tiered``, RocketMQ's
``QueryOffsetResult`` (or None for its null) per query for ``rocksdb``.  Engines are
imported only when used, so naming one costs nothing until it runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rmqarrow._formats import format_plugins, load, plugin_named
from rmqarrow._vocab import Engine, Format
from rmqarrow.errors import EngineUnavailableError, UsageError
from rmqarrow.format.queries import Query

if TYPE_CHECKING:
    from rmqarrow.format.layout import Geometry, GeometryHint
    from rmqarrow.rocksdb import QueryOffsetResult, RocksDBQuery
    from rmqarrow.tiered import TieredAnswer, TieredQuery

__all__ = [
    "ENGINES",
    "FORMATS",
    "SNAPSHOT_ENGINES",
    "Engine",
    "Format",
    "IndexEngine",
    "RocksDBEngine",
    "TieredEngine",
    "answer_with_engine",
    "get_engine",
    "parse_engines",
]

FORMATS = tuple(Format)
ENGINES = tuple(Engine)


#: (format, engine) pairs that answer as of pinned headers (``snapshot=``)
SNAPSHOT_ENGINES = (("index", "duckdb"),)


class IndexEngine(Protocol):
    """The contract of an ``index`` engine: the native answer to every query, offsets in
    RocketMQ's order (newest file first, newest entry first), without the batch cap."""

    def __call__(
        self,
        source: Path,
        queries: list[Query],
        /,
        *,
        geometry: Geometry | GeometryHint | None = ...,
    ) -> list[list[int]]: ...


class TieredEngine(Protocol):
    """The contract of a ``tiered`` engine: per query the items RocketMQ returns (or, with
    ``exact``, every match), or the :class:`~rmqarrow.errors.TieredReadError` it raises."""

    def __call__(
        self,
        source: Path,
        queries: list[TieredQuery],
        /,
        *,
        exact: bool = ...,
        geometry: Geometry | GeometryHint | None = ...,
    ) -> list[TieredAnswer]: ...


class RocksDBEngine(Protocol):
    """The contract of a ``rocksdb`` engine: per query RocketMQ's ``queryOffset`` answer
    (None where it returns null; ``phy_offsets`` None for its null list), offsets in its
    order, under the broker's ``maxMsgsNumBatch`` and ``maxRocksDBIndexQueryDays``."""

    def __call__(
        self,
        source: Path,
        queries: list[RocksDBQuery],
        /,
        *,
        max_msgs_num_batch: int = ...,
        max_query_days: int = ...,
        now: int | None = ...,
    ) -> list[QueryOffsetResult | None]: ...


def parse_engines(spec: str, option: str = "engines") -> list[str]:
    """``"native,duckdb"`` -> ``["native", "duckdb"]``; unknown or no names are refused."""
    names = [e.strip() for e in spec.split(",") if e.strip()]
    unknown = [e for e in names if e not in ENGINES]
    if unknown or not names:
        raise UsageError(
            f"{option}={spec}: unknown {', '.join(unknown) or 'empty list'}; "
            f"choose from {', '.join(ENGINES)}"
        )
    return list(dict.fromkeys(names))


def get_engine(fmt: str, engine: str) -> Callable[..., list[Any]]:
    """The engine function for ``(fmt, engine)``, imported now.

    An unknown name is a :class:`UsageError`; an engine whose package is not installed
    (pyspark for ``spark``) an :class:`EngineUnavailableError` naming the extra to install.
    """
    plugin = plugin_named(fmt)
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    if engine not in plugin.engines:
        raise UsageError(
            f"the {fmt} format has no {engine} engine; choose from {', '.join(plugin.engines)}"
        )
    module_name, _, attr = plugin.engines[engine].partition(":")
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.startswith("rmqarrow"):
            raise
        raise EngineUnavailableError(
            f"the {engine} engine needs {exc.name} (pip install 'rmqarrow[{engine}]'"
            + (" and Java 17)" if engine == "spark" else ")")
        ) from None
    fn: Callable[..., list[Any]] = getattr(module, attr)
    return fn


def answer_with_engine(
    engine: str,
    target: str | os.PathLike[str],
    queries: Sequence[Any],
    *,
    fmt: str = "index",
    dataset: str | os.PathLike[str] | None = None,
    master: str | None = None,
    **options: Any,
) -> list[Any]:
    """Answer ``queries`` with one engine over the files ``target`` (or ``dataset``).

    ``index`` queries are :class:`~rmqarrow.Query` or ``(key, max_num[, begin[, end]])``
    tuples (checked: :func:`rmqarrow.format.queries.as_queries`); ``tiered`` queries are
    :class:`~rmqarrow.tiered.TieredQuery` or ``(topic, key, max_count, begin, end)``
    tuples (:func:`~rmqarrow.tiered.as_tiered_queries`); ``rocksdb`` queries are
    :class:`~rmqarrow.rocksdb.RocksDBQuery`.  Every engine must give the native answer.

    ``options`` go to the engine as they are, each one the format declares
    (:attr:`~rmqarrow.FormatPlugin.options`; one given as None is left out):
    ``geometry`` for the index and tiered formats (what is known of the files' geometry,
    a :class:`~rmqarrow.GeometryHint` or a complete :class:`~rmqarrow.Geometry`),
    ``exact`` for the tiered one (every match), ``max_msgs_num_batch``,
    ``max_query_days`` and ``now`` for the RocksDB one.  ``snapshot`` (the headers of a
    native store pinned by file name, :meth:`rmqarrow.IndexFile.pin`) makes the engine
    answer as of it, so that answers compare over one snapshot of a store a broker
    writes: the ``duckdb`` engine over a native store reads it; the others read the
    store as it is when they read it.
    """
    if engine == "native" and dataset is not None:
        raise UsageError("a dataset is for the duckdb and spark engines; native reads the files")
    plugin = plugin_named(fmt)
    given = {name: value for name, value in options.items() if value is not None}
    foreign = sorted(set(given) - plugin.options)
    if foreign:
        owners = [
            f"{name}= is the {', '.join(p.name for p in format_plugins() if name in p.options)}"
            f" format's"
            for name in foreign
            if any(name in p.options for p in format_plugins())
        ]
        raise UsageError(
            f"{', '.join(f'{n}=' for n in foreign)}: not an option of the {fmt} format's "
            f"engines, which take {', '.join(f'{o}=' for o in sorted(plugin.options)) or 'none'}"
            + (f" ({'; '.join(owners)})" if owners else "")
        )
    if "snapshot" in given and ((fmt, engine) not in SNAPSHOT_ENGINES or dataset is not None):
        raise UsageError(
            f"the {engine} engine does not read a pinned snapshot; "
            f"{', '.join(e for _, e in SNAPSHOT_ENGINES)} over a native store does"
        )
    answer = get_engine(fmt, engine)
    if engine == "spark":
        given["master"] = master
    source = Path(dataset if dataset is not None else target)
    checked: list[Any] = list(queries) if plugin.queries is None else load(plugin.queries)(queries)
    return answer(source, checked, **given)
