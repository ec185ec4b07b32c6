"""Message records, and the index keys RocketMQ derives from each (``buildIndex``).

A record carries what ``IndexService.buildIndex`` reads from a ``DispatchRequest``: topic,
the KEYS property, the UNIQ_KEY property, the commit-log offset, the store timestamp and
the sys flag.  The keys put for it, in order: ``topic#UNIQ_KEY`` (when present), then
``topic#token`` for every non-empty token of KEYS split on single spaces (so leading,
trailing and double spaces yield no empty keys, and a repeated token is put twice).
Rollback records (transaction type 0xC in the sys flag) put nothing.  An empty UNIQ_KEY is
treated as absent: RocketMQ's property decoder never yields an empty value, while CSV and
Parquet sources often write "" for a missing one.

**Tag entries, a rule per release.**  RocketMQ 5.4.0 and later (``IndexService.buildIndex``
in their ``rocketmq-store`` jars; 5.4.0 and 5.5.0 read) also put ``topic#T#TAGS`` after the
keys, for every record that is not a rollback and whose TAGS property is present and
non-empty, whatever else it carries: no setting switches it off.  TAGS is taken whole
(``a||b`` is one key, not two); a prepared transactional message is indexed like any other;
a delayed message is indexed under the topic it was stored with (``SCHEDULE_TOPIC_XXXX``,
then its real topic when delivered), as its keys are.  A query with the index type ``T``
asks for ``topic#T#key``, any other type for ``topic#key``.  4.9.x to 5.3.x put no tag
entries.  :func:`indexes_tags` says which release does which, in one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqarrow.errors import InvalidKeyError, InvalidValueError

__all__ = [
    "DEFAULT_ROCKETMQ_VERSION",
    "KEY_SEPARATOR",
    "RECORD_COLUMNS",
    "TAG_INDEX_SINCE",
    "TAG_INDEX_TYPE",
    "TRANSACTION_ROLLBACK_TYPE",
    "MessageRecord",
    "check_index_type",
    "index_keys",
    "indexes_tags",
    "is_rollback",
    "query_index_key",
    "tag_index_key",
    "tag_query_note",
]

KEY_SEPARATOR = " "
TRANSACTION_TYPE_MASK = 0xC
TRANSACTION_ROLLBACK_TYPE = 0xC

#: The index type of tag entries, as the broker's ``buildKey(topic, tags, "T")`` writes it.
TAG_INDEX_TYPE = "T"
#: The first release whose index holds tag entries.
TAG_INDEX_SINCE = (5, 4)
#: Whose rules a build follows unless told: the releases before tag entries, so that a
#: build is what every 4.9.x to 5.3.x broker writes (give 5.4 or later for tag entries).
DEFAULT_ROCKETMQ_VERSION = "5.3"
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)*")

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
    tags: str | None = None  # the TAGS property, given only to follow 5.4+ rules


def indexes_tags(rocketmq_version: str) -> bool:
    """Does the release ``rocketmq_version`` (``"5.4"``, ``"5.5.0"``, ...) put tag entries?"""
    m = _VERSION.fullmatch(rocketmq_version.strip()) if isinstance(rocketmq_version, str) else None
    if m is None:
        raise InvalidValueError(
            f"RocketMQ version must read like 5.4 or 4.9.7, got {rocketmq_version!r}"
        )
    return (int(m.group(1)), int(m.group(2))) >= TAG_INDEX_SINCE


def tag_index_key(topic: str, tags: str) -> str:
    """The tag entry's full index key, ``topic#T#tags``."""
    return f"{topic}#{TAG_INDEX_TYPE}#{tags}"


def tag_query_note(index_key: str) -> str:
    """What an empty answer to a tag query (index type ``T``) may mean: the index files of
    releases before 5.4 hold no tag entry at all, and their keys are hashed, so whether a
    store holds any cannot be read from it."""
    since = ".".join(map(str, TAG_INDEX_SINCE))
    return (
        f"nothing for the tag key {index_key!r}; only RocketMQ {since} and later index tags "
        f"(TOPIC#{TAG_INDEX_TYPE}#TAGS): if a broker before {since} wrote this store, or it "
        f"was built for an older release (the default, {DEFAULT_ROCKETMQ_VERSION}), it holds "
        "none, so look the message up by its key or message id (index type K or U)"
    )


def check_index_type(index_type: str | None) -> str | None:
    """``index_type`` itself when it is a query's index type: ``K``, ``U``, ``T`` or none."""
    if index_type not in (None, "K", "U", TAG_INDEX_TYPE):
        raise InvalidValueError(
            f"index type must be K (keys), U (unique keys) or T (tags), got {index_type!r}"
        )
    return index_type


def query_index_key(topic: str, key: str, index_type: str | None = None) -> str:
    """The full index key a query of ``index_type`` (``T`` for tags; ``K``, ``U`` or none
    for keys and unique keys, which share ``topic#key``) looks up."""
    if check_index_type(index_type) == TAG_INDEX_TYPE:
        return tag_index_key(topic, key)
    return f"{topic}#{key}"


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
    if record.tags:
        out.append(tag_index_key(topic, record.tags))
    return out
