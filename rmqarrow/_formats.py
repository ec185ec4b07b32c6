"""The format registry: each index format is one entry naming, by import path, what
serves it (the store class of each kind of path holding it, the engine function of each
query engine, and how to recognise its files), so that adding a format is its own folder
plus one :func:`register_format` call, and what each format x source x engine can do is
derived here, not switched on elsewhere.

Entries name code as ``"module:attribute"`` text and are imported only when used: this
module sits at the bottom of the tree and imports nothing of rmqarrow's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from rmqarrow._vocab import Engine, Format, Kind, Source
from rmqarrow.errors import UsageError

__all__ = [
    "FormatPlugin",
    "format_plugins",
    "load",
    "plugin_for_kind",
    "plugin_named",
    "register_format",
    "sniff",
    "unregister_format",
]


@dataclass(frozen=True)
class FormatPlugin:
    """One index format: what reads it, by import path (``"module:attribute"``).

    ``native`` and ``dataset`` map each kind of path (:class:`~rmqarrow.Kind`, or a
    kind the format's ``detector`` names) to the store class opening it: the format's
    own files, and a dataset rmqarrow exported of them.  ``engines`` maps each query
    engine to the function answering a list of the format's queries over a source
    (:mod:`rmqarrow.engines` states the contract).  ``detector``, for a format
    :func:`rmqarrow.format.detect.detect` does not know, is a function of a path giving
    ``(kind, detail)`` when the path holds the format, else None.  ``queries`` is the
    function taking the queries a caller gives (the format's query type, or the tuples
    taken at the edge) to the format's query type, checked; without it the engines get
    the list as given.  ``options`` names the keyword options its engines take besides
    ``master`` (Spark's): :func:`rmqarrow.engines.answer_with_engine` hands those on and
    refuses any other."""

    name: str
    description: str
    native: Mapping[str, str]
    dataset: Mapping[str, str] = field(default_factory=dict)
    engines: Mapping[str, str] = field(default_factory=dict)
    detector: str | None = None
    queries: str | None = None
    options: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.name or not self.name.isidentifier():
            raise UsageError(f"a format's name must be an identifier, got {self.name!r}")
        odd = sorted(o for o in self.options if not o.isidentifier() or o == "master")
        if odd:
            raise UsageError(
                f"format '{self.name}': options must be keyword names other than master, "
                f"got {', '.join(map(repr, odd))}"
            )
        both = set(self.native) & set(self.dataset)
        if both:
            raise UsageError(
                f"format '{self.name}': kinds {', '.join(sorted(both))} are both native and dataset"
            )
        named = (*self.native.values(), *self.dataset.values(), *self.engines.values())
        for path in (*named, *(p for p in (self.detector, self.queries) if p is not None)):
            _split(path)

    @property
    def kinds(self) -> dict[str, Source]:
        """Each kind of path holding this format, and which source it is."""
        return {
            **dict.fromkeys(self.native, Source.NATIVE),
            **dict.fromkeys(self.dataset, Source.DATASET),
        }

    def store_path(self, kind: str) -> str:
        """The import path of the store class opening ``kind``."""
        return {**self.native, **self.dataset}[kind]


def _split(path: str) -> tuple[str, str]:
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise UsageError(f"expected 'module:attribute', got {path!r}")
    return module, attr


def load(path: str) -> Any:
    """The attribute ``"module:attribute"`` names, imported now."""
    module, attr = _split(path)
    return getattr(import_module(module), attr)


_ENGINE_MODULES = {
    Format.INDEX: (
        "rmqarrow.index.service",
        "rmqarrow.converters.duckdb.sql",
        "rmqarrow.converters.spark.sql",
    ),
    Format.TIERED: (
        "rmqarrow.tiered",
        "rmqarrow.tiered.duckdb",
        "rmqarrow.tiered.spark",
    ),
    Format.ROCKSDB: (
        "rmqarrow.rocksdb",
        "rmqarrow.rocksdb.duckdb",
        "rmqarrow.rocksdb.spark",
    ),
}


def _engines(fmt: Format) -> dict[str, str]:
    return {
        engine: f"{module}:answer_queries"
        for engine, module in zip(Engine, _ENGINE_MODULES[fmt], strict=True)
    }


_BUILTIN = (
    FormatPlugin(
        Format.INDEX,
        "RocketMQ's IndexFile (a broker's store/index)",
        native=dict.fromkeys(
            (Kind.INDEX_FILE, Kind.INDEX_DIR, Kind.BROKER_ROOT), "rmqarrow.store._index:IndexStore"
        ),
        dataset={Kind.DATASET: "rmqarrow.store._dataset:DatasetStore"},
        engines=_engines(Format.INDEX),
        queries="rmqarrow.format.queries:as_queries",
        # snapshot: the headers a native store is pinned at (the engines that read one)
        options=frozenset({"geometry", "snapshot"}),
    ),
    FormatPlugin(
        Format.TIERED,
        "RIP-65's tiered IndexStoreFile",
        native={Kind.TIERED: "rmqarrow.tiered.store:TieredStore"},
        dataset={Kind.TIERED_DATASET: "rmqarrow.tiered.store:TieredDatasetStore"},
        engines=_engines(Format.TIERED),
        queries="rmqarrow.tiered:as_tiered_queries",
        # exact: every match, without RocketMQ's caps
        options=frozenset({"geometry", "exact"}),
    ),
    FormatPlugin(
        Format.ROCKSDB,
        "RIP-82's RocksDB message index",
        native={Kind.ROCKSDB: "rmqarrow.rocksdb.store:RocksDBStore"},
        dataset={Kind.ROCKSDB_DATASET: "rmqarrow.rocksdb.store:RocksDBDatasetStore"},
        engines=_engines(Format.ROCKSDB),
        # the broker's maxMsgsNumBatch and maxRocksDBIndexQueryDays, and the clock's now
        options=frozenset({"max_msgs_num_batch", "max_query_days", "now"}),
    ),
)

_lock = threading.Lock()
_plugins: dict[str, FormatPlugin] = {p.name: p for p in _BUILTIN}


def register_format(plugin: FormatPlugin) -> None:
    """Add ``plugin`` to the formats :func:`rmqarrow.open`, the engines and the command
    line read; a name or a kind another format holds is refused."""
    if not isinstance(plugin, FormatPlugin):
        raise UsageError(f"expected a FormatPlugin, got {type(plugin).__name__}")
    with _lock:
        if plugin.name in _plugins:
            raise UsageError(f"a format named '{plugin.name}' is already registered")
        taken = {k: p.name for p in _plugins.values() for k in p.kinds}
        clash = sorted(k for k in plugin.kinds if k in taken)
        if clash:
            raise UsageError(
                f"format '{plugin.name}': kind '{clash[0]}' is already format "
                f"'{taken[clash[0]]}''s; name its kinds apart"
            )
        _plugins[plugin.name] = plugin


def unregister_format(name: str) -> None:
    """Remove a format :func:`register_format` added (the built-in ones stay)."""
    with _lock:
        if any(p.name == name for p in _BUILTIN):
            raise UsageError(f"{name!r} is a built-in format; it cannot be removed")
        _plugins.pop(name, None)


def format_plugins() -> tuple[FormatPlugin, ...]:
    """Every registered format, the built-in ones first."""
    with _lock:
        return tuple(_plugins.values())


def plugin_named(name: str) -> FormatPlugin:
    """The format called ``name``; an unknown one is refused naming the known ones."""
    with _lock:
        plugin = _plugins.get(name)
        known = ", ".join(_plugins)
    if plugin is None:
        raise UsageError(f"unknown index format {name!r}; choose from {known}")
    return plugin


def plugin_for_kind(kind: str) -> FormatPlugin | None:
    """The format a path of ``kind`` holds (None: a kind no format reads)."""
    for plugin in format_plugins():
        if kind in plugin.kinds:
            return plugin
    return None


def known_kinds() -> Iterator[str]:
    """The kinds registered formats add to :class:`~rmqarrow.Kind`."""
    builtin = set(Kind)
    for plugin in format_plugins():
        yield from (k for k in plugin.kinds if k not in builtin)


def sniff(path: Path) -> tuple[str, str] | None:
    """``(kind, detail)`` of the first registered format whose detector recognises
    ``path`` (None: none does)."""
    for plugin in format_plugins():
        if plugin.detector is None:
            continue
        detector: Callable[[Path], tuple[str, str] | None] = load(plugin.detector)
        found = detector(path)
        if found is not None:
            return found
    return None
