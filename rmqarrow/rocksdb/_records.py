"""One key of the ``default`` family decoded: an index record, bookkeeping, or damage.

Keys are not uniquely parseable when a topic, key or id holds ``@`` (nothing is escaped):
the decoder reads the first part as the topic, the second as the type, the last as the
message id (``K``/``T``) and everything between as the key or tag.  Queries never use
these fields: they compare the raw key bytes (``key_tail``), as RocketMQ does.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqarrow.rocksdb._layout import (
    BOOKKEEPING_KEYS,
    HOUR_MS,
    INDEX_TYPES,
    KEY_SPLIT,
    LONG,
    TYPE_UNIQUE,
    be_long,
)

__all__ = ["DecodedKey", "decode_key"]

_MIN_RECORD = 2 * LONG.size + len("@t@U@u@")


@dataclass(frozen=True)
class DecodedKey:
    """A record key's parts; ``problem`` says why it does not parse (None: it does)."""

    hour: int | None
    topic: str | None
    index_type: str | None
    key: str | None
    uniq_key: str | None
    offset: int | None
    key_tail: bytes
    problem: str | None


def decode_key(k: bytes) -> DecodedKey:
    """The parts of an index record key (bookkeeping keys are not records: check first)."""
    if k in BOOKKEEPING_KEYS:
        return DecodedKey(None, None, None, None, None, None, k, "a bookkeeping key")
    if len(k) < _MIN_RECORD:
        hour = be_long(k) if len(k) >= LONG.size else None
        return DecodedKey(
            hour,
            None,
            None,
            None,
            None,
            None,
            k[LONG.size :],
            f"{len(k)} bytes, shorter than the shortest record ({_MIN_RECORD})",
        )
    hour, offset, tail = be_long(k), be_long(k[-LONG.size :]), k[LONG.size :]
    try:
        middle = k[LONG.size : -LONG.size].decode("utf-8")
    except UnicodeDecodeError:
        return DecodedKey(
            hour, None, None, None, None, offset, tail, "the middle of the key is not UTF-8"
        )
    if not (middle.startswith(KEY_SPLIT) and middle.endswith(KEY_SPLIT)):
        return DecodedKey(
            hour,
            None,
            None,
            None,
            None,
            offset,
            tail,
            "the middle of the key does not start and end with '@'",
        )
    parts = middle[1:-1].split(KEY_SPLIT)
    topic, index_type = parts[0], parts[1] if len(parts) > 1 else None
    problem = None
    key = uniq = None
    if index_type not in INDEX_TYPES:
        problem = f"type {index_type!r} is none of K, T, U"
    elif index_type == TYPE_UNIQUE:
        uniq = KEY_SPLIT.join(parts[2:])
        if len(parts) < 3:
            problem = "a U record without a message id"
    elif len(parts) < 4:
        problem = f"a {index_type} record without key and message id"
    else:
        key, uniq = KEY_SPLIT.join(parts[2:-1]), parts[-1]
    if problem is None and (hour <= 0 or hour % HOUR_MS):
        problem = f"hour {hour} is not a positive whole hour"
    if problem is None and not topic:
        problem = "empty topic"
    return DecodedKey(hour, topic or None, index_type, key, uniq, offset, tail, problem)
