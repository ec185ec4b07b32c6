"""rmqarrow: Apache RocketMQ's IndexFile in Python, byte-exact, bridged to Arrow.

The layers, each a folder, import only downward::

    errors, _optional, _text, _progress      base
    format/      byte layout, RocketMQ rules, Java arithmetic, scalar hash, names, records
    kernels/     vectorized hash, bulk put, the one scalar walk, many-key lookup
    index/       IndexFile, IndexService, salvage, batch build
    commitlog/   CommitLog reader, writer, resolve, compression
    testing/     synthetic stores and message streams (tests, demo, benchmarks)
    converters/  Arrow and Parquet, then the DuckDB and Spark engines
    engines      the engine registry (format x engine), loaded lazily
    verify/      every engine checked against the native lookup
    store/       the front door: rmqarrow.open(path) and rmqarrow.build(...)
    demo/        the end-to-end demo
    cli/         the command line: a leaf nothing imports

``rmqarrow.open(path)`` is the one front door (:mod:`rmqarrow.store`).  ``import rmqarrow``
loads numpy and pyarrow only: never DuckDB, pyspark or numba.
"""

from __future__ import annotations

from rmqarrow._version import __version__
from rmqarrow.errors import (
    ClosedIndexError,
    CommitLogError,
    CorruptIndexError,
    DatasetError,
    EngineError,
    EngineUnavailableError,
    GeometryError,
    InvalidKeyError,
    InvalidValueError,
    OutputExistsError,
    ReadOnlyIndexError,
    RmqArrowError,
    StoreNotFoundError,
    UnsupportedOperationError,
    UsageError,
)
from rmqarrow.format.checkpoint import StoreCheckpoint
from rmqarrow.format.hashing import index_key_hash, java_string_hash
from rmqarrow.format.layout import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, Geometry
from rmqarrow.format.queries import Query
from rmqarrow.format.records import MessageRecord
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService, QueryOffsetResult, answer_queries
from rmqarrow.kernels.hashing import index_key_hashes
from rmqarrow.store import Store, build
from rmqarrow.store import open_store as open

__all__ = [
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "ClosedIndexError",
    "CommitLogError",
    "CorruptIndexError",
    "DatasetError",
    "EngineError",
    "EngineUnavailableError",
    "Geometry",
    "GeometryError",
    "IndexFile",
    "IndexService",
    "InvalidKeyError",
    "InvalidValueError",
    "MessageRecord",
    "OutputExistsError",
    "Query",
    "QueryOffsetResult",
    "ReadOnlyIndexError",
    "RmqArrowError",
    "Store",
    "StoreCheckpoint",
    "StoreNotFoundError",
    "UnsupportedOperationError",
    "UsageError",
    "__version__",
    "answer_queries",
    "build",
    "index_key_hash",
    "index_key_hashes",
    "java_string_hash",
    "open",
]
