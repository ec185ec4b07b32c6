"""rmqarrow: Apache RocketMQ's IndexFile in Python, byte-exact, bridged to Arrow."""

from __future__ import annotations

from ._layout import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, Geometry
from .errors import (
    CommitLogError,
    CorruptIndexError,
    DatasetError,
    EngineUnavailableError,
    GeometryError,
    InvalidKeyError,
    OutputExistsError,
    ReadOnlyIndexError,
    RmqArrowError,
    StoreNotFoundError,
)
from .hashing import index_key_hash, index_key_hashes, java_string_hash
from .queries import Query

__all__ = [
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "CommitLogError",
    "CorruptIndexError",
    "DatasetError",
    "EngineUnavailableError",
    "Geometry",
    "GeometryError",
    "InvalidKeyError",
    "OutputExistsError",
    "Query",
    "ReadOnlyIndexError",
    "RmqArrowError",
    "StoreNotFoundError",
    "index_key_hash",
    "index_key_hashes",
    "java_string_hash",
]

__version__ = "0.1.0"
