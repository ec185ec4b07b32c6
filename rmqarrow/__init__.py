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
loads nothing but the errors; each name loads its module when first used (numpy and
pyarrow; never DuckDB, pyspark or numba until an engine is asked for).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._formats import FormatPlugin, format_plugins, register_format, unregister_format
from rmqarrow._lazy import lazy_attributes
from rmqarrow._version import __version__
from rmqarrow._vocab import Engine, Format, Kind, Source, Verb, Writer
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

if TYPE_CHECKING:
    from rmqarrow.format.checkpoint import StoreCheckpoint
    from rmqarrow.format.hashing import index_key_hash, java_string_hash
    from rmqarrow.format.layout import (
        DEFAULT_HASH_SLOT_NUM,
        DEFAULT_INDEX_NUM,
        Geometry,
        GeometryHint,
        as_hint,
    )
    from rmqarrow.format.queries import Query, QueryOffsetResult
    from rmqarrow.format.records import MessageRecord
    from rmqarrow.index.indexfile import IndexFile
    from rmqarrow.index.service import IndexService, answer_queries
    from rmqarrow.kernels.hashing import index_key_hashes
    from rmqarrow.store import Store, build
    from rmqarrow.store import open_store as open

# The API is imported when first used (PEP 562): ``import rmqarrow`` is then quick, and
# the command line, which imports this package first, handles Ctrl-C from its first
# instant instead of in the middle of importing numpy and pyarrow.
_getattr, _ = lazy_attributes(
    __name__,
    {
        "StoreCheckpoint": "format.checkpoint",
        "index_key_hash": "format.hashing",
        "java_string_hash": "format.hashing",
        "DEFAULT_HASH_SLOT_NUM": "format.layout",
        "DEFAULT_INDEX_NUM": "format.layout",
        "Geometry": "format.layout",
        "GeometryHint": "format.layout",
        "as_hint": "format.layout",
        "Query": "format.queries",
        "MessageRecord": "format.records",
        "IndexFile": "index.indexfile",
        "IndexService": "index.service",
        "QueryOffsetResult": "format.queries",
        "answer_queries": "index.service",
        "index_key_hashes": "kernels.hashing",
        "Store": "store",
        "build": "store",
    },
)


def __getattr__(name: str) -> object:
    if name == "open":  # the front door is the store package's open_store
        from rmqarrow.store import open_store

        return open_store
    return _getattr(name)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "ClosedIndexError",
    "CommitLogError",
    "CorruptIndexError",
    "DatasetError",
    "Engine",
    "EngineError",
    "EngineUnavailableError",
    "Format",
    "FormatPlugin",
    "Geometry",
    "GeometryError",
    "GeometryHint",
    "IndexFile",
    "IndexService",
    "InvalidKeyError",
    "InvalidValueError",
    "Kind",
    "MessageRecord",
    "OutputExistsError",
    "Query",
    "QueryOffsetResult",
    "ReadOnlyIndexError",
    "RmqArrowError",
    "Source",
    "Store",
    "StoreCheckpoint",
    "StoreNotFoundError",
    "UnsupportedOperationError",
    "UsageError",
    "Verb",
    "Writer",
    "__version__",
    "answer_queries",
    "as_hint",
    "build",
    "format_plugins",
    "index_key_hash",
    "index_key_hashes",
    "java_string_hash",
    "open",
    "register_format",
    "unregister_format",
]
