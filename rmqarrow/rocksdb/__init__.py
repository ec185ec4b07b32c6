"""RocketMQ's RocksDB message index (RIP-82): read offline, query, rebuild, check.

A broker with ``indexRocksDBEnable=true`` keeps its message index in a RocksDB database
(``<storeRoot>/rocksdbstore``).  :class:`RocksDBIndex` opens one read-only without
touching the broker's directory (see :mod:`rmqarrow.rocksdb._db`), answers
``queryOffset`` exactly as RocketMQ does, and writes a new one as ``buildIndex`` would.
Every rule reproduced is listed in :mod:`rmqarrow.rocksdb._rules`.  Needs the optional
extra ``rocksdb`` (``pip install 'rmqarrow[rocksdb]'``, the rocksdict binding).
"""

from __future__ import annotations

from rmqarrow.rocksdb._build import RocksDBBuild, build_from_commitlog
from rmqarrow.rocksdb._check import RocksDBCheck, RocksDBFinding, check_rocksdb
from rmqarrow.rocksdb._db import is_rocksdb_dir, resolve_db_dir
from rmqarrow.rocksdb._index import (
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_MAX_QUERY_DAYS,
    RocksDBIndex,
    answer_queries,
)
from rmqarrow.rocksdb._layout import BOOKKEEPING_KEYS, hour_of
from rmqarrow.rocksdb._records import DecodedKey, decode_key
from rmqarrow.rocksdb._sql import bookkeeping_getter, search_sql, searches_table, split_hits
from rmqarrow.rocksdb._tsv import (
    Message,
    format_answer,
    read_deletions,
    read_expected,
    read_messages,
    read_queries,
)
from rmqarrow.rocksdb._walk import QueryOffsetResult, RocksDBQuery, Search, answer_batched

__all__ = [
    "BOOKKEEPING_KEYS",
    "DEFAULT_MAX_MSGS_NUM_BATCH",
    "DEFAULT_MAX_QUERY_DAYS",
    "DecodedKey",
    "Message",
    "QueryOffsetResult",
    "RocksDBBuild",
    "RocksDBCheck",
    "RocksDBFinding",
    "RocksDBIndex",
    "RocksDBQuery",
    "Search",
    "answer_batched",
    "answer_queries",
    "bookkeeping_getter",
    "build_from_commitlog",
    "check_rocksdb",
    "decode_key",
    "format_answer",
    "hour_of",
    "is_rocksdb_dir",
    "read_deletions",
    "read_expected",
    "read_messages",
    "read_queries",
    "resolve_db_dir",
    "search_sql",
    "searches_table",
    "split_hits",
]
