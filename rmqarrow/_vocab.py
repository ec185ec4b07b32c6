"""The vocabulary every layer shares: what a path is, which index format it holds, which
engine answers and which writer exports.  Each is a :class:`~enum.StrEnum`, so a member
is its own text (``Engine.DUCKDB == "duckdb"``): the names users type, print and find in
JSON stay the same, and the type checker knows the closed set."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DATASET_KINDS", "INDEX_KINDS", "Engine", "Format", "Kind", "Source", "Verb", "Writer"]


class Format(StrEnum):
    """An index format RocketMQ writes."""

    #: RocketMQ's ``IndexFile`` (the broker's ``store/index``)
    INDEX = "index"
    #: RIP-65's tiered ``IndexStoreFile``
    TIERED = "tiered"
    #: RIP-82's RocksDB message index
    ROCKSDB = "rocksdb"


class Engine(StrEnum):
    """Who answers a query: the native reference, or SQL over DuckDB or Spark."""

    NATIVE = "native"
    DUCKDB = "duckdb"
    SPARK = "spark"


class Source(StrEnum):
    """Where a format's entries are read from: its own files, or a dataset rmqarrow
    exported of them (which the SQL engines read; the native lookup reads the files)."""

    NATIVE = "native"
    DATASET = "dataset"


class Writer(StrEnum):
    """Who writes an exported dataset: this process, or a Spark job."""

    LOCAL = "local"
    SPARK = "spark"


class Kind(StrEnum):
    """What a path holds, as :func:`rmqarrow.format.detect.detect` tells it."""

    INDEX_FILE = "index_file"
    INDEX_DIR = "index_dir"
    BROKER_ROOT = "broker_root"
    COMMITLOG_DIR = "commitlog_dir"
    DATASET = "dataset"
    TIERED = "tiered"
    TIERED_DATASET = "tiered_dataset"
    ROCKSDB = "rocksdb"
    ROCKSDB_DATASET = "rocksdb_dataset"
    EMPTY_DIR = "empty_dir"
    OTHER_FILE = "other_file"
    OTHER_DIR = "other_dir"
    MISSING = "missing"


#: The kinds that are RocketMQ's own IndexFiles (one, a directory, a broker root's).
INDEX_KINDS = frozenset({Kind.INDEX_FILE, Kind.INDEX_DIR, Kind.BROKER_ROOT})
#: The kinds that are datasets rmqarrow exported (of each index format).
DATASET_KINDS = (Kind.DATASET, Kind.TIERED_DATASET, Kind.ROCKSDB_DATASET)


class Verb(StrEnum):
    """What an opened store can be asked (a method of :class:`rmqarrow.Store` each): every
    store has every method, and declares which ones its kind answers."""

    QUERY = "query"
    QUERY_MANY = "query_many"
    SCAN = "scan"
    TO_DUCKDB = "to_duckdb"
    TO_SPARK = "to_spark"
    SQL = "sql"
    EXPORT = "export"
    SYNC = "sync"
    FOLLOW = "follow"
    IMPORT_FILES = "import_files"
    CHECK = "check"
    INFO = "info"
    STATS = "stats"
    VERIFY = "verify"
    VERSIONS = "versions"
    CONVERT_TO_DELTA = "convert_to_delta"
    VACUUM = "vacuum"
