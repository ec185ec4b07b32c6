"""Test data rmqarrow ships: random index stores (:mod:`.stores`), a realistic message
stream (:mod:`.stream`), used by the test suite, the demo and the benchmarks; a process
that writes a store as a running broker does (:mod:`.broker_like`); and a real RocketMQ
release's broker to test against (:mod:`.rocketmq`, imported on its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes
from rmqarrow.testing.stores import write_random_file, write_random_store
from rmqarrow.testing.stream import DEMO_START_MS, DemoMessage, demo_messages

if TYPE_CHECKING:
    from rmqarrow.testing.broker_like import (
        BrokerLike,
        BrokerLikeOptions,
        BrokerLikeProcess,
        start_broker_like,
    )

# Loaded when first used: ``python -m rmqarrow.testing.broker_like`` runs that module as
# __main__, and runpy warns when importing the package already imported it.
__getattr__, _ = lazy_attributes(
    __name__,
    {
        name: "broker_like"
        for name in ("BrokerLike", "BrokerLikeOptions", "BrokerLikeProcess", "start_broker_like")
    },
)

__all__ = [
    "DEMO_START_MS",
    "BrokerLike",
    "BrokerLikeOptions",
    "BrokerLikeProcess",
    "DemoMessage",
    "demo_messages",
    "start_broker_like",
    "write_random_file",
    "write_random_store",
]
