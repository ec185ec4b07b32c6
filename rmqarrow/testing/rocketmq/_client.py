"""Messages sent and keys asked through RocketMQ's own Java client (:file:`RmqDriver.java`).

Each call runs the driver once in a JVM with the release's class path: a spec file in,
one JSON line per message or query out.  The broker's answer to a key query is the list of
CommitLog offsets of the messages RocketMQ's client returns (``MQAdminImpl``'s
``queryMessage``, ``queryMessageByUniqKey``, or ``queryMessage`` with index type ``T``:
the broker's index hits, read back and kept by the client only where the message really carries the
key, unique key or tags).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rmqarrow.errors import EngineError, InvalidValueError
from rmqarrow.testing.rocketmq._broker import Broker

__all__ = [
    "BrokerAnswer",
    "KeyQuery",
    "Message",
    "Sent",
    "Transaction",
    "query_broker",
    "send_messages",
]

#: RocketMQ's separator of several keys in one message's KEYS property
KEY_SEPARATOR = " "
#: the store times a query spans when none is given: everything
ALL_TIME = (0, 2**62)
#: the highest delay level of a broker's default ``messageDelayLevel`` (1 s ... 2 h)
MAX_DELAY_LEVEL = 18


#: how a transactional message's local transaction ends
Transaction = Literal["commit", "rollback"]


@dataclass(frozen=True)
class Message:
    """One message to send: ``keys`` become KEYS joined by spaces; empty tags send none.

    ``transaction`` sends it as a transactional message through a ``TransactionMQProducer``:
    the broker stores it prepared (a half message in ``RMQ_SYS_TRANS_HALF_TOPIC``), then the
    producer's local transaction ends with ``COMMIT_MESSAGE`` (``"commit"``: the broker writes
    it anew to its topic) or ``ROLLBACK_MESSAGE`` (``"rollback"``: it never reaches its
    topic).  ``delay_level`` > 0 sends it delayed by that level of the broker's
    ``messageDelayLevel`` (1 is 1 s by default): stored first in ``SCHEDULE_TOPIC_XXXX``,
    written anew to its topic when due.
    """

    topic: str
    body: str
    tags: str = ""
    keys: tuple[str, ...] = ()
    transaction: Transaction | None = None
    delay_level: int = 0


@dataclass(frozen=True)
class Sent:
    """What the broker said about a sent message."""

    message: Message
    status: str
    msg_id: str  #: the client's unique key (``UNIQ_KEY``)
    offset_msg_id: str
    #: the CommitLog offset of what the send stored, from ``offset_msg_id``: for a
    #: transactional or delayed message, its prepared or scheduled copy
    phy_offset: int
    queue_id: int
    queue_offset: int
    #: the CommitLog offset of the message in its own topic: ``phy_offset`` for an ordinary
    #: send; the copy the broker wrote on commit or when the delay was over (the send waits
    #: for it); None for a rolled-back message
    delivered_offset: int | None = None


@dataclass(frozen=True)
class KeyQuery:
    """A key (``kind="key"``), unique-key (``"uniq"``) or tags (``"tag"``: the index
    entries ``topic#T#tags`` of 5.4.0 and later; ``key`` is the tags) query of one topic."""

    topic: str
    key: str
    kind: Literal["key", "uniq", "tag"] = "key"
    max_num: int = 64
    begin: int = ALL_TIME[0]
    end: int = ALL_TIME[1]


@dataclass(frozen=True)
class BrokerAnswer:
    query: KeyQuery
    offsets: tuple[int, ...]  #: CommitLog offsets, in the order the client returned them
    error: str | None  #: the client's exception (it raises when nothing is found)
    #: each message's queue id, in the same order (a tiered store's offsets are per queue)
    queue_ids: tuple[int, ...] = ()


def _field(value: str, what: str) -> str:
    if any(c in value for c in "\t\r\n"):
        raise InvalidValueError(f"{what} {value!r}: tabs and line breaks cannot be sent")
    return value


def _run(broker: Broker, verb: str, lines: Iterable[str], tag: str) -> list[dict[str, object]]:
    spec = broker.workdir / f"driver-{tag}.tsv"
    out = broker.workdir / f"driver-{tag}.jsonl"
    spec.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    done = subprocess.run(
        [*broker.java(), "RmqDriver", verb, broker.namesrv_addr, str(spec), str(out)],
        capture_output=True,
        text=True,
        env=broker.env(),
        cwd=broker.workdir,
        check=False,
    )
    if done.returncode != 0:
        tail = [ln for ln in (done.stdout + done.stderr).splitlines() if "|-INFO in " not in ln]
        raise EngineError(
            f"RmqDriver {verb} failed ({done.returncode}) against RocketMQ "
            f"{broker.release.version}:\n" + "\n".join(tail[-15:])
        )
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def send_line(m: Message) -> str:
    """The driver's input line for ``m`` (checked first: a bad message is refused here,
    before any JVM starts).  A caller that feeds the driver a pipe line by line paces the
    sends itself."""
    for k in m.keys:
        if not k or KEY_SEPARATOR in k:
            raise InvalidValueError(f"key {k!r}: a key is non-empty and has no space")
    if m.transaction not in (None, "commit", "rollback"):
        raise InvalidValueError(
            f"transaction {m.transaction!r}: expected 'commit', 'rollback' or None"
        )
    if not 0 <= m.delay_level <= MAX_DELAY_LEVEL:
        raise InvalidValueError(
            f"delay_level {m.delay_level}: expected 0 (none) to {MAX_DELAY_LEVEL}"
        )
    if m.transaction is not None and m.delay_level:
        raise InvalidValueError(
            f"transaction {m.transaction!r} with delay_level {m.delay_level}: send a message "
            "either transactional or delayed (what a broker does with both is not tested)"
        )
    return "\t".join(
        (
            _field(m.topic, "topic"),
            _field(m.tags, "tags"),
            _field(KEY_SEPARATOR.join(m.keys), "keys"),
            _field(m.body, "body"),
            m.transaction or "",
            str(m.delay_level),
        )
    )


def send_messages(broker: Broker, messages: Sequence[Message], *, tag: str = "send") -> list[Sent]:
    """Send ``messages`` one by one (synchronously), in order; what the broker answered.

    Returns once every committed or delayed message is in its own topic (found by its
    unique key; a delay of level 1 takes about a second).
    """
    lines = [send_line(m) for m in messages]
    rows = _run(broker, "send", lines, tag)
    return [
        Sent(
            m,
            str(r["status"]),
            str(r["msg_id"]),
            str(r["offset_msg_id"]),
            int(r["phy_offset"]),  # type: ignore[call-overload]
            int(r["queue_id"]),  # type: ignore[call-overload]
            int(r["queue_offset"]),  # type: ignore[call-overload]
            None if r["delivered_offset"] is None else int(r["delivered_offset"]),  # type: ignore[call-overload]
        )
        for m, r in zip(messages, rows, strict=True)
    ]


def _numbers(q: KeyQuery) -> list[str]:
    return [str(q.max_num), str(q.begin), str(q.end)]


def query_broker(
    broker: Broker, queries: Sequence[KeyQuery], *, tag: str = "query"
) -> list[BrokerAnswer]:
    """Ask the running broker each query through RocketMQ's client, in order."""
    lines = [
        "\t".join([q.kind, _field(q.topic, "topic"), _field(q.key, "key"), *_numbers(q)])
        for q in queries
    ]
    rows = _run(broker, "query", lines, tag)
    return [
        BrokerAnswer(
            q,
            tuple(int(o) for o in r["offsets"]),  # type: ignore[attr-defined]
            None if r["error"] is None else str(r["error"]),
            tuple(int(n) for n in r["queue_ids"]),  # type: ignore[attr-defined]
        )
        for q, r in zip(queries, rows, strict=True)
    ]
