"""What each format x source x engine can do, derived from the registry and the verbs
each store class declares (nothing here is written per format)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rmqarrow._formats import format_plugins, load
from rmqarrow._vocab import Engine, Source, Verb

__all__ = ["Capability", "capabilities"]


@dataclass(frozen=True)
class Capability:
    """One row of the matrix: a format read from one source, by which store class, the
    kinds of path it opens, its verbs and the engines answering its queries."""

    format: str
    source: Source
    kinds: tuple[str, ...]
    store: str
    verbs: frozenset[Verb]
    engines: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": str(self.format),
            "source": str(self.source),
            "kinds": [str(k) for k in self.kinds],
            "store": self.store,
            "verbs": [str(v) for v in Verb if v in self.verbs],
            "engines": list(self.engines),
        }


def capabilities() -> list[Capability]:
    """Every registered format's rows: one per source and store class, the built-in
    formats first.  A dataset is read by the SQL engines; the native lookup reads the
    format's own files."""
    rows = []
    for plugin in format_plugins():
        for source, stores in ((Source.NATIVE, plugin.native), (Source.DATASET, plugin.dataset)):
            by_class: dict[str, list[str]] = {}
            for kind, path in stores.items():
                by_class.setdefault(path, []).append(kind)
            for path, kinds in by_class.items():
                cls = load(path)
                engines = tuple(
                    str(e)
                    for e in plugin.engines
                    if not (source is Source.DATASET and e == Engine.NATIVE)
                )
                rows.append(
                    Capability(
                        plugin.name,
                        source,
                        tuple(kinds),
                        cls.__name__,
                        frozenset(cls.verbs),
                        engines if Verb.QUERY in cls.verbs else (),
                    )
                )
    return rows
