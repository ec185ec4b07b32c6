"""Message records, and the index keys RocketMQ derives from each (``buildIndex``).

A record carries what ``IndexService.buildIndex`` reads from a ``DispatchRequest``: topic,
the KEYS property, the UNIQ_KEY property, the commit-log offset, the store timestamp and
the sys flag.  The keys put for it, in order: ``topic#UNIQ_KEY`` (when present), then
``topic#token`` for every non-empty token of KEYS split on single spaces (so leading,
trailing and double spaces yield no empty keys, and a repeated token is put twice).
Rollback records (transaction type 0xC in the sys flag) put nothing.  An empty UNIQ_KEY is
treated as absent: RocketMQ's property decoder never yields an empty value, while CSV and
Parquet sources often write "" for a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqarrow.errors import InvalidKeyError

__all__ = [
    "KEY_SEPARATOR",
    "RECORD_COLUMNS",
    "TRANSACTION_ROLLBACK_TYPE",
    "MessageRecord",
    "index_keys",
    "is_rollback",
]

KEY_SEPARATOR = " "
TRANSACTION_TYPE_MASK = 0xC
TRANSACTION_ROLLBACK_TYPE = 0xC

#: Columns of a table of message records (``rmqarrow build --from``).
RECORD_COLUMNS = ("topic", "keys", "uniq_key", "commit_log_offset", "store_timestamp", "sys_flag")


@dataclass(frozen=True)
class MessageRecord:
    """What the index needs of one CommitLog message."""

    topic: str
    keys: str | None
    uniq_key: str | None
    commit_log_offset: int
    store_timestamp: int
    sys_flag: int = 0


def is_rollback(sys_flag: int) -> bool:
    """``MessageSysFlag.getTransactionValue(flag) == TRANSACTION_ROLLBACK_TYPE``."""
    return sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE


def index_keys(record: MessageRecord) -> list[str]:
    """The full index keys ``buildIndex`` puts for ``record`` (ignoring rollback/guard)."""
    topic = record.topic
    if not isinstance(topic, str):
        raise InvalidKeyError(f"a record's topic must be str, got {type(topic).__name__}")
    out = []
    if record.uniq_key:
        out.append(f"{topic}#{record.uniq_key}")
    if record.keys:
        out.extend(f"{topic}#{k}" for k in record.keys.split(KEY_SEPARATOR) if k)
    return out
