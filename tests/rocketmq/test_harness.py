"""The harness itself: one line for what is missing, no process left behind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from rocketmq.workload import NEWEST, processes_naming

from rmqarrow.errors import EngineError, EngineUnavailableError, InvalidValueError
from rmqarrow.testing.rocketmq import (
    Broker,
    Message,
    Release,
    resolve_release,
    run_broker,
    send_messages,
)

pytestmark = pytest.mark.rocketmq


def test_missing_tools_are_named_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no java, javac, mvn
    with pytest.raises(EngineUnavailableError) as info:
        resolve_release(NEWEST, cache=tmp_path / "cache")
    text = str(info.value)
    assert "\n" not in text
    assert "java, javac, mvn" in text


def test_a_release_that_does_not_resolve_gives_mavens_reason(tmp_path: Path) -> None:
    with pytest.raises(EngineError) as info:
        resolve_release("0.0.1", cache=tmp_path)
    assert (
        "RocketMQ 0.0.1: Maven could not resolve org.apache.rocketmq:rocketmq-namesrv:0.0.1, "
        in str(info.value)
    )
    assert "rocketmq" in str(info.value).split(":", 1)[1]
    assert not (tmp_path / "0.0.1" / "lib").exists()  # no half cache


def test_a_broker_that_cannot_start_says_why_and_leaves_no_process(tmp_path: Path) -> None:
    release = resolve_release(NEWEST)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        workdir = tmp_path / "run"
        with (
            pytest.raises(EngineError, match=r"broker exited \(\d+\) before it booted"),
            run_broker(release, workdir, {"listenPort": str(port)}),
        ):
            pass
    assert processes_naming(workdir) == []
    assert (workdir / "namesrv.out").exists()  # the name server had started


def test_a_resolution_killed_midway_leaves_nothing_the_next_run_keeps() -> None:
    release = resolve_release(NEWEST)
    stale = release.home / ".lib-999999999"
    (stale / "half").mkdir(parents=True)
    again = resolve_release(NEWEST)
    assert not stale.exists()
    assert again.lib == release.lib
    assert any(again.lib.glob("rocketmq-client-*.jar"))
    assert (again.driver / "RmqDriver.class").exists()


def test_a_message_the_driver_cannot_send_is_refused_before_a_jvm_starts(tmp_path: Path) -> None:
    release = Release(NEWEST, tmp_path, tmp_path / "lib", tmp_path / "driver", 0.0)
    nowhere = Broker(release, tmp_path, 1, 1, {})  # nothing listens: nothing may be sent
    for bad, needle in [
        (Message("T", "b", transaction="maybe"), "transaction 'maybe'"),  # type: ignore[arg-type]
        (Message("T", "b", delay_level=19), "delay_level 19"),
        (Message("T", "b", delay_level=-1), "delay_level -1"),
        (Message("T", "b", transaction="commit", delay_level=1), "either transactional or delayed"),
        (Message("T", "b", keys=("a b",)), "key 'a b'"),
    ]:
        with pytest.raises(InvalidValueError, match=needle):
            send_messages(nowhere, [bad])
    assert not list(tmp_path.iterdir())  # no spec file written, no driver run
