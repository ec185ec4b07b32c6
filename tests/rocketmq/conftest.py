"""A real RocketMQ release's broker, written to by RocketMQ's own client, read by rmqarrow.

The release's jars are resolved by Maven into the harness's cache the first time (a
JDK 17 and ``mvn`` are needed: a missing one fails the tests with one line, it does not
skip them).  Each release runs once per module: the ``live`` fixture starts its broker,
sends the workload in two batches with a pause between them (so a time range can split
them), asks the broker every query, and keeps the broker running for the tests that read
the live store; ``stopped`` stops it cleanly (SIGTERM) for those that read it after.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rocketmq.workload import NEWEST, Run, processes_naming, start_run


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The newest release's broker, running, with the workload sent and asked."""
    yield from start_run(NEWEST, tmp_path_factory.mktemp(f"rocketmq-{NEWEST}"), tags=True)


@pytest.fixture(scope="module")
def stopped(live: Run) -> Run:
    """The same broker after a clean shutdown (SIGTERM; its store flushed and closed)."""
    live.broker.stop()
    assert not (live.store / "abort").exists(), "the broker did not shut down cleanly"
    assert processes_naming(live.broker.workdir) == []
    return live
