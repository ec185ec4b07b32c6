"""The defaults of RocketMQ's broker configuration (``MessageStoreConfig``) that bound an
index query, once for every index format."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_MSGS_NUM_BATCH", "DEFAULT_MAX_QUERY_DAYS"]

#: ``MessageStoreConfig.maxMsgsNumBatch``'s default: the most offsets one query returns
DEFAULT_MAX_MSGS_NUM_BATCH = 64
#: ``maxRocksDBIndexQueryDays``: its Java default could not be read; rocketmq-rust uses 7
DEFAULT_MAX_QUERY_DAYS = 7
