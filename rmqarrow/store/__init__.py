"""The front door: :func:`open` any path rmqarrow reads and use one surface for all.

``rmqarrow.open(path)`` recognises index files, a broker store root, an exported dataset,
tiered files and RocketMQ's RocksDB message index (RIP-82), and returns a :class:`Store`
whose methods are the same for every kind that supports them: ``query``, ``query_many``,
``lookup`` (a result type per format), ``scan``, ``to_duckdb``, ``to_spark``, ``export``,
``check``, ``info``, ``stats`` (what a kind cannot do raises
:class:`~rmqarrow.errors.UnsupportedOperationError`).  :func:`build` writes a store from
records or a CommitLog, crash-safe.
"""

from __future__ import annotations

from rmqarrow.store._base import Store
from rmqarrow.store._build import build
from rmqarrow.store._dataset import DatasetCheck, DatasetInfo, DatasetStore, TieredDatasetStore
from rmqarrow.store._index import IndexStore, StoreCheck, StoreInfo
from rmqarrow.store._open import open_store
from rmqarrow.store._results import (
    ImportedIndexFiles,
    ImportedTieredFiles,
    IndexManifest,
    Lookup,
    OffsetLookup,
    ResolvedHits,
    RocksDBLookup,
    RocksDBManifest,
    TieredLookup,
    TieredManifest,
)
from rmqarrow.store._rocksdb import RocksDBDatasetStore, RocksDBStore, RocksDBVerify
from rmqarrow.store._stats import StatsReport
from rmqarrow.store._tiered import TieredStore

__all__ = [
    "DatasetCheck",
    "DatasetInfo",
    "DatasetStore",
    "ImportedIndexFiles",
    "ImportedTieredFiles",
    "IndexManifest",
    "IndexStore",
    "Lookup",
    "OffsetLookup",
    "ResolvedHits",
    "RocksDBDatasetStore",
    "RocksDBLookup",
    "RocksDBManifest",
    "RocksDBStore",
    "RocksDBVerify",
    "StatsReport",
    "Store",
    "StoreCheck",
    "StoreInfo",
    "TieredDatasetStore",
    "TieredLookup",
    "TieredManifest",
    "TieredStore",
    "build",
    "open_store",
]
