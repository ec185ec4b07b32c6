"""The values the tiered index API hands out: items, put results, file states."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.hashing import check_query_key

from ._rules import stored_time

__all__ = ["AppendResult", "FileStatus", "IndexItem", "TieredQuery", "as_tiered_queries"]


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


def as_tiered_queries(queries: Iterable[object]) -> list[TieredQuery]:
    """The queries given as :class:`TieredQuery` (the one query type of the format inside
    the library), tuples ``(topic, key, max_count, begin, end)`` taken at the edge; any
    other shape refused naming the query, as is a topic or key that is not text every
    engine reads alike (:func:`~rmqarrow.format.hashing.check_query_key`)."""
    out = []
    for i, q in enumerate(queries):
        if isinstance(q, TieredQuery):
            out.append(q)
        elif isinstance(q, tuple | list) and len(q) == len(TieredQuery._fields):
            out.append(TieredQuery(*q))
        else:
            raise InvalidValueError(
                f"query {i}: a tiered query is a TieredQuery or (topic, key, max_count, "
                f"begin, end), got {q!r}"
            )
        check_query_key(out[-1].topic, "topic")
        check_query_key(out[-1].key)
    return out
