"""RocketMQ's RocksDB message index (RIP-82): read offline, query, rebuild, check.

A broker with ``indexRocksDBEnable=true`` keeps its message index in a RocksDB database
(``<storeRoot>/rocksdbstore``).  :class:`RocksDBIndex` opens one read-only without
touching the broker's directory (see :mod:`rmqarrow.rocksdb._db`), answers
``queryOffset`` exactly as RocketMQ does, and writes a new one as ``buildIndex`` would.
Every rule reproduced is listed in :mod:`rmqarrow.rocksdb._rules`.  Needs the optional
extra ``rocksdb`` (``pip install 'rmqarrow[rocksdb]'``, the rocksdict binding).

The rest of its stack is in this folder too, a module per concern, each imported only when
asked for: :mod:`~rmqarrow.rocksdb.arrow` (the records as Arrow tables),
:mod:`~rmqarrow.rocksdb.parquet` (its dataset), :mod:`~rmqarrow.rocksdb.duckdb` and
:mod:`~rmqarrow.rocksdb.spark` (its engines), :mod:`~rmqarrow.rocksdb.store` (the stores
:func:`rmqarrow.open` returns for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
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

# names load when first used: importing the package (as the command line does) is cheap
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "BOOKKEEPING_KEYS": "_layout",
        "DEFAULT_MAX_MSGS_NUM_BATCH": "_index",
        "DEFAULT_MAX_QUERY_DAYS": "_index",
        "DecodedKey": "_records",
        "Message": "_tsv",
        "QueryOffsetResult": "_walk",
        "RocksDBBuild": "_build",
        "RocksDBCheck": "_check",
        "RocksDBFinding": "_check",
        "RocksDBIndex": "_index",
        "RocksDBQuery": "_walk",
        "Search": "_walk",
        "answer_batched": "_walk",
        "answer_queries": "_index",
        "bookkeeping_getter": "_sql",
        "build_from_commitlog": "_build",
        "check_rocksdb": "_check",
        "decode_key": "_records",
        "format_answer": "_tsv",
        "hour_of": "_layout",
        "is_rocksdb_dir": "_db",
        "read_deletions": "_tsv",
        "read_expected": "_tsv",
        "read_messages": "_tsv",
        "read_queries": "_tsv",
        "resolve_db_dir": "_db",
        "search_sql": "_sql",
        "searches_table": "_sql",
        "split_hits": "_sql",
    },
)
