"""RocketMQ's RocksDB message index (RIP-82): read offline, query, rebuild, check.

A broker with ``indexRocksDBEnable=true`` keeps its message index in a RocksDB database
(``<storeRoot>/rocksdbstore``).  :class:`RocksDBIndex` opens one read-only without
touching the broker's directory (see :mod:`rmqarrow.rocksdb._db`), answers
``queryOffset`` exactly as RocketMQ does, and writes a new one as ``buildIndex`` would.
Every rule reproduced is listed in :mod:`rmqarrow.rocksdb._rules`.  Needs the optional
extra ``rocksdb`` (``pip install 'rmqarrow[rocksdb]'``, the rocksdict binding).
"""

from __future__ import annotations

from rmqarrow.rocksdb._db import is_rocksdb_dir, resolve_db_dir
from rmqarrow.rocksdb._index import (
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_MAX_QUERY_DAYS,
    RocksDBIndex,
)
from rmqarrow.rocksdb._layout import hour_of
from rmqarrow.rocksdb._walk import QueryOffsetResult, RocksDBQuery, Search

__all__ = [
    "DEFAULT_MAX_MSGS_NUM_BATCH",
    "DEFAULT_MAX_QUERY_DAYS",
    "QueryOffsetResult",
    "RocksDBIndex",
    "RocksDBQuery",
    "Search",
    "hour_of",
    "is_rocksdb_dir",
    "resolve_db_dir",
]
