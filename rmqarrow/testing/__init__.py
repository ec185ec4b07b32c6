"""Test data rmqarrow ships: random index stores (:mod:`.stores`) and a realistic message
stream (:mod:`.stream`), used by the test suite, the demo and the benchmarks; and a real
RocketMQ release's broker to test against (:mod:`.rocketmq`, imported on its own)."""

from __future__ import annotations

from rmqarrow.testing.stores import write_random_file, write_random_store
from rmqarrow.testing.stream import DEMO_START_MS, DemoMessage, demo_messages

__all__ = [
    "DEMO_START_MS",
    "DemoMessage",
    "demo_messages",
    "write_random_file",
    "write_random_store",
]
