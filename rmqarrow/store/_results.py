"""What the key lookup, the export and the import return, one type per index format: a
caller (the command line's renderers) tells them apart by type, never by asking the store
which kind it is."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from rmqarrow.converters.manifests import AnyManifest, as_manifest
from rmqarrow.converters.manifests import RocksDBManifest as TypedRocksDBManifest
from rmqarrow.errors import UsageError
from rmqarrow.format.broker_config import DEFAULT_MAX_QUERY_DAYS
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query

if TYPE_CHECKING:
    from rmqarrow.commitlog.resolution import ResolveResult
    from rmqarrow.rocksdb import QueryOffsetResult, RocksDBQuery
    from rmqarrow.tiered import TieredAnswer, TieredQuery

__all__ = [
    "ImportedIndexFiles",
    "ImportedTieredFiles",
    "IndexManifest",
    "Lookup",
    "LookupRequest",
    "OffsetLookup",
    "ResolvedHits",
    "RocksDBLookup",
    "RocksDBManifest",
    "TieredLookup",
    "TieredManifest",
    "refuse",
]


def refuse(parameter: str, why: str) -> NoReturn:
    """A parameter this kind of store cannot use, refused naming it (``last_key=``)."""
    raise UsageError(f"{parameter}= {why}")


@dataclass(frozen=True)
class LookupRequest:
    """The parameters of :meth:`~rmqarrow.store.Store.lookup`, the same for every kind;
    each kind refuses the ones it cannot use."""

    key: str | None = None
    topic: str | None = None
    queries: str | os.PathLike[str] | None = None
    escaped: bool = False
    begin: int = 0
    end: int = JAVA_LONG_MAX
    max_num: int = 64
    index_type: str | None = None
    last_key: str | None = None
    exact: bool = False
    engine: str | None = None
    master: str | None = None
    explain: bool = False
    resolve: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        if (self.key is None) == (self.queries is None):
            raise UsageError("give key= (one lookup) or queries= (a file of them), not both")


@dataclass(frozen=True)
class ResolvedHits:
    """A lookup's hits read back from the CommitLog: ``hits`` offsets the index gave,
    ``distinct`` of them read once each, and what matched exactly."""

    query: Query
    hits: int
    distinct: int
    result: ResolveResult


@dataclass(frozen=True)
class OffsetLookup:
    """RocketMQ's IndexFiles (or their dataset) answered: commit-log offsets per query."""

    queries: list[Query]
    answers: list[list[int]]
    #: the queries came from a file (answered as a batch), not one key
    batch: bool
    #: an explanation was asked for (lines in ``explained``)
    explain: bool = False
    explained: list[str] = field(default_factory=list)
    resolved: ResolvedHits | None = None


@dataclass(frozen=True)
class TieredLookup:
    """Tiered index files (or their dataset) answered: items, or RocketMQ's read error,
    per query."""

    queries: list[TieredQuery]
    answers: list[TieredAnswer]
    batch: bool
    exact: bool
    #: next to an exact answer of the native engine: what RocketMQ's own lookup gives
    rocketmq: TieredAnswer | None = None
    #: what RocketMQ answers once the file is uploaded, when that differs
    note: str | None = None
    #: one file's begin timestamp, which decodes its items' store times
    begin_timestamp: int | None = None


@dataclass(frozen=True)
class RocksDBLookup:
    """The RocksDB message index (or its dataset) answered: RocketMQ's ``queryOffset``
    result (None for its null) per query."""

    queries: list[RocksDBQuery]
    answers: list[QueryOffsetResult | None]
    batch: bool
    explain: bool = False
    explained: list[str] = field(default_factory=list)
    #: the broker's maxRocksDBIndexQueryDays the queries ran under: a query without a
    #: time range searches that many days back from now
    max_query_days: int = DEFAULT_MAX_QUERY_DAYS


Lookup = OffsetLookup | TieredLookup | RocksDBLookup


class _WrittenManifest(dict[str, Any]):
    """A manifest an export wrote, as the JSON object it is (old callers index it), and
    typed (:mod:`rmqarrow.converters.manifests`) for reading."""

    @property
    def typed(self) -> AnyManifest:
        """The same manifest as its format's record: every key checked, fields typed."""
        return as_manifest(self)

    def table_rows(self) -> dict[str, int]:
        """Rows per table, in the manifest's order."""
        return {name: entry.rows for name, entry in self.typed.tables.items()}


class IndexManifest(_WrittenManifest):
    """The manifest of a dataset of index files, as :meth:`IndexStore.export` wrote it."""


class TieredManifest(_WrittenManifest):
    """The manifest of a dataset of tiered files, as :meth:`TieredStore.export` wrote it."""


class RocksDBManifest(_WrittenManifest):
    """The manifest of a dataset of a RocksDB index, as :meth:`RocksDBStore.export`
    wrote it."""

    def bookkeeping(self) -> dict[str, Any]:
        """The index's bookkeeping records the export copied, name -> value."""
        typed = self.typed
        assert isinstance(typed, TypedRocksDBManifest)  # the export of a RocksDB index
        return dict(typed.bookkeeping or {})


class ImportedIndexFiles(list[Path]):
    """The index files :meth:`DatasetStore.import_files` wrote."""


class ImportedTieredFiles(list[Path]):
    """The tiered files :meth:`TieredDatasetStore.import_files` wrote."""
