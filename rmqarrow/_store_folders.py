"""The folders of a RocketMQ broker's store root, named once.

Format detection (:mod:`rmqarrow.format.detect`, :mod:`rmqarrow.tiered.layout.naming`)
finds a store's parts by these names and the broker guard (:mod:`rmqarrow._broker`) tells
which store a written path belongs to by them; both import them from here, the base layer.
"""

from __future__ import annotations

__all__ = [
    "COMMITLOG_DIR_NAME",
    "CONSUMEQUEUE_DIR_NAME",
    "INDEX_DIR_NAME",
    "ROCKSDB_DIR_NAMES",
    "STORE_FOLDERS",
    "TIERED_LOCAL_DIR_NAME",
]

INDEX_DIR_NAME = "index"
COMMITLOG_DIR_NAME = "commitlog"
CONSUMEQUEUE_DIR_NAME = "consumequeue"
#: RIP-65's local tiered index files under the store root
TIERED_LOCAL_DIR_NAME = "tiered_index_file"
#: The RocksDB index folder under a broker store root (an earlier revision: the second).
ROCKSDB_DIR_NAMES = ("rocksdbstore", "RocksDBMessageStore")
#: every folder of a store root whose entries rmqarrow's writers may write
STORE_FOLDERS = frozenset(
    {
        INDEX_DIR_NAME,
        COMMITLOG_DIR_NAME,
        CONSUMEQUEUE_DIR_NAME,
        TIERED_LOCAL_DIR_NAME,
        *ROCKSDB_DIR_NAMES,
    }
)
