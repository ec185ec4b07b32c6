"""Exact-key answers: read each index hit back from the CommitLog and drop false positives.

The index stores only ``abs(hashCode)`` of ``topic#key``, so a lookup also returns
messages whose key merely collides.  RocketMQ's admin client (``MQAdminImpl.queryMessage``)
therefore checks every message the broker sends back:

- by key (``INDEX_KEY_TYPE``): the message's KEYS property must be present, one of its
  tokens (Java ``keys.split(" ")``) must equal the key, and its topic must equal the topic;
- by unique key (``INDEX_UNIQUE_TYPE``): the message id (UNIQ_KEY, or the offset message id
  when there is none) must equal the key; the topic is not compared;
- by tags (index type ``T``, 5.4.0 and later, whose entries are ``topic#T#tags``): the
  message's whole TAGS property must equal the key, and its topic the topic.

The index holds both kinds under ``topic#key``, so :func:`resolve` by default keeps a
message when its topic equals ``topic`` and its UNIQ_KEY equals ``key`` or a KEYS token
does (``mode="any"``); ``mode="key"`` and ``mode="uniq"`` apply the admin client's two
rules exactly, and ``mode="tags"`` the third.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from rmqarrow.commitlog.reader import CommitLogReader
from rmqarrow.commitlog.record import Record
from rmqarrow.errors import CommitLogError, InvalidValueError
from rmqarrow.format.records import TAG_INDEX_TYPE, check_index_type

__all__ = [
    "ResolveMode",
    "ResolveResult",
    "format_message",
    "java_split_keys",
    "matches",
    "mode_for",
    "resolve",
]

ResolveMode = Literal["any", "key", "uniq", "tags"]


def java_split_keys(keys: str) -> list[str]:
    """Java ``keys.split(" ")``: empty tokens kept, trailing empty tokens removed."""
    parts = keys.split(" ")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def mode_for(index_type: str | None) -> ResolveMode:
    """The check RocketMQ's admin client applies to a query of ``index_type``: ``tags``
    for ``T``, ``key`` for ``K`` (the message's keys), ``uniq`` for ``U``; with no type,
    ``any`` (keys and unique keys share the index key ``topic#key``)."""
    modes: dict[str | None, ResolveMode] = {TAG_INDEX_TYPE: "tags", "K": "key", "U": "uniq"}
    return modes.get(check_index_type(index_type), "any")


def matches(record: Record, topic: str, key: str, mode: ResolveMode = "any") -> bool:
    """Does ``record`` really carry ``key`` in ``topic`` (see the module doc for the modes)?"""
    if mode == "uniq":
        uniq = record.uniq_key
        return (uniq if uniq is not None else record.msg_id) == key
    if record.topic != topic:
        return False
    if mode == "tags":
        return record.tags == key
    keys = record.keys
    if mode == "key":
        return keys is not None and key in java_split_keys(keys)
    if mode != "any":
        raise InvalidValueError(f"mode must be 'any', 'key', 'uniq' or 'tags', got {mode!r}")
    return record.uniq_key == key or key in record.key_list


@dataclass(frozen=True)
class ResolveResult:
    """Hits split into real matches and hash false positives (both in hit order)."""

    messages: list[Record]
    dropped_offsets: list[int] = field(default_factory=list)
    unreadable: list[tuple[int, str]] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        """How many hits were hash false positives."""
        return len(self.dropped_offsets)

    @property
    def phy_offsets(self) -> list[int]:
        """Physical offsets of the kept messages."""
        return [m.physical_offset for m in self.messages]


def resolve(
    commitlog_dir: str | os.PathLike[str],
    topic: str,
    key: str,
    phy_offsets: list[int],
    *,
    mode: ResolveMode = "any",
    strict: bool = False,
) -> ResolveResult:
    """Read each hit at ``phy_offsets`` and keep only the messages that match exactly.

    A hit that is not a readable message record (damage, or an offset outside the log) is
    listed in ``unreadable`` with the reason, or raises :class:`CommitLogError` when
    ``strict``.
    """
    reader = CommitLogReader(commitlog_dir)
    kept: list[Record] = []
    dropped: list[int] = []
    unreadable: list[tuple[int, str]] = []
    for off in phy_offsets:
        try:
            record = reader.read_record(off)
        except CommitLogError as exc:
            if strict:
                raise
            unreadable.append((off, str(exc)))
            continue
        if matches(record, topic, key, mode):
            kept.append(record)
        else:
            dropped.append(off)
    return ResolveResult(kept, dropped, unreadable)


_TRANSACTION = {0x0: "none", 0x4: "prepared", 0x8: "commit", 0xC: "rollback"}


def _preview(body: bytes, limit: int) -> str:
    head = body[:limit]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return head.hex(" ") + (" ..." if len(body) > limit else "")
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text + (" ..." if len(body) > limit else "")


def format_message(record: Record, body_preview: int = 200) -> str:
    """A human view of one message: headers, properties, and the start of the body."""
    lines = [
        f"physical offset   {record.physical_offset} ({record.path.name})",
        f"msg id            {record.msg_id}",
        f"topic             {record.topic}",
        f"queue             {record.queue_id} offset {record.queue_offset}",
        f"size              {record.total_size} bytes, V{record.version}",
        f"sys flag          {record.sys_flag} (transaction {_TRANSACTION[record.transaction_type]}"
        + (f", {record.compression} body" if record.compression else "")
        + ")",
        f"born              {record.born_timestamp} from {record.born_host}",
        f"stored            {record.store_timestamp} at {record.store_host}",
        f"reconsume times   {record.reconsume_times}",
        f"flag              {record.flag}",
    ]
    if record.prepared_transaction_offset:
        lines.append(f"prepared offset   {record.prepared_transaction_offset}")
    lines.append("properties")
    for name, value in record.properties.items():
        lines.append(f"  {name} = {value!r}" if not value.isprintable() else f"  {name} = {value}")
    try:
        body = record.read_body(inflate_body=True, limit=body_preview + 1)
        if record.compression:
            lines.append(f"body              {record.body_length} bytes, {record.compression}")
        else:
            lines.append(f"body              {record.body_length} bytes")
        if body:
            lines.append("  " + _preview(body, body_preview))
    except Exception as exc:  # a body that cannot be read must not hide the headers
        lines.append(f"body              {record.body_length} bytes, not readable: {exc}")
    return "\n".join(lines)
