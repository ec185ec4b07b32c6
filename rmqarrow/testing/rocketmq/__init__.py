"""Real RocketMQ in the loop: a release's broker, run by tests and benchmarks.

:func:`resolve_release` fetches one release's jars with Maven into a cache (a JDK 17 and
``mvn`` on PATH; one line says which is missing), :func:`run_broker` starts its name server
and broker on free loopback ports and stops them by pid, :func:`send_messages` and
:func:`query_broker` talk to it through RocketMQ's own Java client.

    release = resolve_release("5.5.0")
    with run_broker(release, tmp_path) as broker:
        sent = send_messages(broker, [Message("Orders", "body", tags="A", keys=("o-1",))])
        answers = query_broker(broker, [KeyQuery("Orders", "o-1")])
        # broker.store is the store root rmqarrow reads
"""

from __future__ import annotations

from rmqarrow.testing.rocketmq._broker import DEFAULT_SETTINGS, Broker, run_broker
from rmqarrow.testing.rocketmq._client import (
    BrokerAnswer,
    KeyQuery,
    Message,
    Sent,
    Transaction,
    query_broker,
    send_line,
    send_messages,
)
from rmqarrow.testing.rocketmq._release import CACHE_ENV, Release, cache_root, resolve_release
from rmqarrow.testing.rocketmq._tiered import (
    tiered_index_local,
    tiered_index_segments,
    tiered_settings,
)

__all__ = [
    "CACHE_ENV",
    "DEFAULT_SETTINGS",
    "Broker",
    "BrokerAnswer",
    "KeyQuery",
    "Message",
    "Release",
    "Sent",
    "Transaction",
    "cache_root",
    "query_broker",
    "resolve_release",
    "run_broker",
    "send_line",
    "send_messages",
    "tiered_index_local",
    "tiered_index_segments",
    "tiered_settings",
]
