"""rmqarrow: Apache RocketMQ's IndexFile in Python, byte-exact, bridged to Arrow."""

from __future__ import annotations

from ._layout import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, Geometry
from .checkpoint import StoreCheckpoint
from .errors import (
    CommitLogError,
    CorruptIndexError,
    DatasetError,
    EngineUnavailableError,
    GeometryError,
    InvalidKeyError,
    InvalidValueError,
    OutputExistsError,
    ReadOnlyIndexError,
    RmqArrowError,
    StoreNotFoundError,
)
from .hashing import index_key_hash, index_key_hashes, java_string_hash
from .indexfile import IndexFile
from .queries import Query
from .records import MessageRecord
from .service import IndexService, QueryOffsetResult, answer_queries, open_store

__all__ = [
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "CommitLogError",
    "CorruptIndexError",
    "DatasetError",
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
    "StoreCheckpoint",
    "StoreNotFoundError",
    "answer_queries",
    "index_key_hash",
    "index_key_hashes",
    "java_string_hash",
    "open_store",
]

__version__ = "0.1.0"
