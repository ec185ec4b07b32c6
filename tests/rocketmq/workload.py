"""The workload every release gets, and one release's run: broker, messages, answers.

Imported by the tests as ``rocketmq.workload`` (``tests`` is on the test path).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rmqarrow.testing.rocketmq import (
    Broker,
    BrokerAnswer,
    KeyQuery,
    Message,
    Sent,
    query_broker,
    resolve_release,
    run_broker,
    send_messages,
)

#: the newest release whose jars resolve from Maven Central here (5.5.1's client, namesrv,
#: tools, srvutil, filter and auth jars are not served; see docs/releases.md)
NEWEST = "5.5.0"

TOPICS = ("Orders", "Payments", "Audit_log")
#: keys beyond ASCII: Cyrillic, CJK, and one outside the BMP (a UTF-16 surrogate pair,
#: which Java's String.hashCode sees as two chars)
WIDE_KEYS = ("ключ-7", "键-42", "clé-é", "key-\U0001f511")
#: a key on every "Orders" message: more than a query may return (RocketMQ's
#: maxMsgsNumBatch, 64)
HOT_KEY = "hot"


def workload(batch: int, n: int) -> list[Message]:
    """``n`` messages of ``batch``: several topics, tags (or none), one to three keys."""
    out = []
    for i in range(n):
        g = batch * 1000 + i
        topic = TOPICS[i % len(TOPICS)]
        keys = [f"order-{g % 97}"]
        if i % 3 == 0:
            keys.append(f"user-{g % 13}")
        if i % 5 == 0:
            keys.append(WIDE_KEYS[g % len(WIDE_KEYS)])
        if topic == "Orders":
            keys.append(HOT_KEY)
        tags = ("", "TagA", "TagB", "TagA||TagB")[i % 4]
        body = f"message {g} " + "x" * (200 + (g * 37) % 1800)
        out.append(Message(topic, body, tags=tags, keys=tuple(dict.fromkeys(keys))))
    return out


@dataclass
class Run:
    """One release's broker and what was sent to it and asked of it."""

    broker: Broker
    sent: list[Sent]
    #: wall-clock ms between the two batches (a time range boundary)
    split_ms: int
    answers: list[BrokerAnswer] = field(default_factory=list)

    @property
    def store(self) -> Path:
        return self.broker.store


def key_queries(run: Run) -> list[KeyQuery]:
    """Every (topic, key) once with the default cap, the hot key capped lower and split
    in time, and every unique key."""
    pairs = sorted({(s.message.topic, k) for s in run.sent for k in s.message.keys})
    queries = [KeyQuery(t, k) for t, k in pairs]
    queries.append(KeyQuery("Orders", HOT_KEY, max_num=10))
    for t, k in [("Orders", HOT_KEY), *pairs[:: max(1, len(pairs) // 25)]]:
        queries.append(KeyQuery(t, k, begin=run.split_ms))
        queries.append(KeyQuery(t, k, end=run.split_ms))
    queries.extend(KeyQuery(s.message.topic, s.msg_id, kind="uniq") for s in run.sent)
    return queries


def start_run(version: str, workdir: Path) -> Iterator[Run]:
    release = resolve_release(version)
    with run_broker(release, workdir) as broker:
        sent = send_messages(broker, workload(0, 180), tag="batch0")
        # the index keeps store times in whole seconds from its file's first message
        time.sleep(2.2)
        split_ms = int(time.time() * 1000)
        time.sleep(1.2)
        sent += send_messages(broker, workload(1, 120), tag="batch1")
        assert {s.status for s in sent} == {"SEND_OK"}
        run = Run(broker, sent, split_ms)
        run.answers = query_broker(broker, key_queries(run))
        yield run
