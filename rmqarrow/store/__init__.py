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

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.rocksdb.store import (
        RocksDBDatasetCheck,
        RocksDBDatasetInfo,
        RocksDBDatasetStore,
        RocksDBInfo,
        RocksDBStats,
        RocksDBStore,
        RocksDBVerify,
    )
    from rmqarrow.store._base import Store
    from rmqarrow.store._build import build
    from rmqarrow.store._capabilities import Capability, capabilities
    from rmqarrow.store._dataset import (
        DatasetCheck,
        DatasetInfo,
        DatasetStore,
    )
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
    from rmqarrow.store._stats import StatsReport
    from rmqarrow.tiered.store import (
        TieredDatasetInfo,
        TieredDatasetStore,
        TieredInfo,
        TieredStore,
    )

__all__ = [
    "Capability",
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
    "RocksDBDatasetCheck",
    "RocksDBDatasetInfo",
    "RocksDBDatasetStore",
    "RocksDBInfo",
    "RocksDBLookup",
    "RocksDBManifest",
    "RocksDBStats",
    "RocksDBStore",
    "RocksDBVerify",
    "StatsReport",
    "Store",
    "StoreCheck",
    "StoreInfo",
    "TieredDatasetInfo",
    "TieredDatasetStore",
    "TieredInfo",
    "TieredLookup",
    "TieredManifest",
    "TieredStore",
    "build",
    "capabilities",
    "open_store",
]

# the command line imports this package as it starts; what it names loads when first used
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "ImportedIndexFiles": "_results",
        "ImportedTieredFiles": "_results",
        "IndexManifest": "_results",
        "Lookup": "_results",
        "OffsetLookup": "_results",
        "ResolvedHits": "_results",
        "RocksDBLookup": "_results",
        "RocksDBManifest": "_results",
        "TieredLookup": "_results",
        "TieredManifest": "_results",
        "Capability": "_capabilities",
        "DatasetCheck": "_dataset",
        "DatasetInfo": "_dataset",
        "DatasetStore": "_dataset",
        "IndexStore": "_index",
        "RocksDBDatasetCheck": "rmqarrow.rocksdb.store",
        "RocksDBDatasetInfo": "rmqarrow.rocksdb.store",
        "RocksDBDatasetStore": "rmqarrow.rocksdb.store",
        "RocksDBInfo": "rmqarrow.rocksdb.store",
        "RocksDBStats": "rmqarrow.rocksdb.store",
        "RocksDBStore": "rmqarrow.rocksdb.store",
        "RocksDBVerify": "rmqarrow.rocksdb.store",
        "StatsReport": "_stats",
        "Store": "_base",
        "StoreCheck": "_index",
        "StoreInfo": "_index",
        "TieredDatasetInfo": "rmqarrow.tiered.store",
        "TieredDatasetStore": "rmqarrow.tiered.store",
        "TieredInfo": "rmqarrow.tiered.store",
        "TieredStore": "rmqarrow.tiered.store",
        "build": "_build",
        "capabilities": "_capabilities",
        "open_store": "_open",
    },
)
