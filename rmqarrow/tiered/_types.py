"""The values the tiered index API hands out: items, put results, file states."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from ._rules import stored_time

__all__ = ["AppendResult", "FileStatus", "IndexItem", "TieredQuery"]


class AppendResult(enum.Enum):
    """What ``putKey`` returns (RocketMQ's ``AppendResult`` values that it can return)."""

    SUCCESS = "SUCCESS"
    FILE_FULL = "FILE_FULL"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class FileStatus(enum.Enum):
    """RocketMQ's ``IndexStatusEnum``: the life of one index file."""

    UNSEALED = "UNSEALED"
    SEALED = "SEALED"
    UPLOAD = "UPLOAD"
    SHUTDOWN = "SHUTDOWN"


@dataclass(frozen=True, slots=True)
class IndexItem:
    """One index item as a query returns it (RocketMQ's ``IndexItem``).

    ``next_index`` is the item's ``next`` field on the local file (the older item of the same
    slot, 0 at the chain's end) and always 0 on the compacted file.
    """

    hash_code: int
    topic_id: int
    queue_id: int
    offset: int
    size: int
    time_diff: int
    next_index: int

    def store_time(self, begin_timestamp: int) -> int:
        """The time queries compare: whole seconds after ``begin_timestamp`` (wrapping)."""
        return stored_time(self.time_diff, begin_timestamp)


class TieredQuery(NamedTuple):
    """One lookup: ``queryAsync(topic, key, maxCount, begin, end)`` (times in ms)."""

    topic: str
    key: str
    max_count: int
    begin: int
    end: int
