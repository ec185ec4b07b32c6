"""The newest release killed with SIGKILL while a client sends: what is on disk, what the
broker still answers after its restart, and what ``build --from-commitlog`` restores.

One run: a first batch is sent and acknowledged, a second is being sent when the broker
gets SIGKILL (the client's acknowledgements up to then are kept from its output).  Before
the restart rmqarrow reads the store (``check``, ``query``, the salvage load, a rebuild),
and a copy of it is taken; then the broker restarts on the original store (RocketMQ's
abnormal recovery) and is asked for every acknowledged message by its unique key.  The
counts are in docs/releases.md.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_run import run
from rocketmq.workload import ENTRIES, NEWEST, SLOTS, processes_naming, rebuild, workload

from rmqarrow.errors import EngineError
from rmqarrow.index.service import IndexService
from rmqarrow.testing.rocketmq import (
    KeyQuery,
    Sent,
    query_broker,
    resolve_release,
    run_broker,
    send_messages,
)

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

#: acknowledgements of the second batch to wait for before the SIGKILL
ACKED_BEFORE_KILL = 150


#: the newest release that resolves, and the oldest line operators still run
CRASHED = (NEWEST, "4.9.7")


@dataclass
class Crash:
    version: str
    store: Path  # the original store, after the restart
    copy: Path  # the store as the crash left it
    acked: list[tuple[str, str, int]]  # (topic, unique key, phy offset) the client was told
    broker_after_restart: list[tuple[int, ...]] = field(default_factory=list)


def _acks(path: Path) -> list[dict[str, object]]:
    """What the driver printed for each acknowledged send (its output survives the kill)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:  # a line cut by the crash
            continue
        rows.append(r)
    return rows


@pytest.fixture(scope="module", params=CRASHED, ids=lambda v: f"rocketmq-{v}")
def crash(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Crash]:
    version = str(request.param)
    release = resolve_release(version)
    workdir = tmp_path_factory.mktemp(f"rocketmq-{version}-crash")
    first = workload(0, 120)
    second = workload(1, 2000)
    with run_broker(release, workdir) as broker:
        sent: list[Sent] = send_messages(broker, first, tag="before")
        failure: list[BaseException] = []

        def more() -> None:
            try:
                send_messages(broker, second, tag="during")
            except EngineError as exc:  # the broker died under it: expected
                failure.append(exc)

        sender = threading.Thread(target=more, daemon=True)
        sender.start()
        out = broker.workdir / "driver-during.jsonl"
        deadline = time.monotonic() + 120
        while len(_acks(out)) < ACKED_BEFORE_KILL and time.monotonic() < deadline:
            time.sleep(0.05)
        broker.kill()
        sender.join(240)
        assert not sender.is_alive(), "the client did not give up after the broker died"
        assert failure, "the second batch finished before the SIGKILL: nothing was mid-write"
        acked = [(s.message.topic, s.msg_id, s.phy_offset) for s in sent]
        for m, r in zip(second, _acks(out), strict=False):
            acked.append((m.topic, str(r["msg_id"]), int(r["phy_offset"])))
        store = broker.store
        assert (store / "abort").exists(), "SIGKILL leaves the abort file"
    copy = workdir / "copy"
    shutil.copytree(store, copy)
    yield_value = Crash(version, store, copy, acked)
    # the restart on the original store: RocketMQ's abnormal recovery
    with run_broker(release, workdir) as restarted:
        # the new name server learns the recovered topics' routes from the broker's
        # registration, a few seconds after it boots
        probe = [KeyQuery(*acked[0][:2], kind="uniq")]
        deadline = time.monotonic() + 90
        while "route info" in (query_broker(restarted, probe, tag="probe")[0].error or ""):
            assert time.monotonic() < deadline, "the restarted broker's routes never came"
            time.sleep(1)
        answers = query_broker(
            restarted, [KeyQuery(t, u, kind="uniq") for t, u, _ in acked], tag="after"
        )
        yield_value.broker_after_restart = [a.offsets for a in answers]
    assert processes_naming(workdir) == []
    yield yield_value


def _ours(capsys: pytest.CaptureFixture[str], store: Path, c: Crash, tmp: Path) -> list[bool]:
    """For each acknowledged message: does rmqarrow's query of its unique key find it?"""
    tsv = tmp / "q.tsv"
    tsv.write_text("".join(f"{t}#{u}\t64\n" for t, u, _ in c.acked), encoding="utf-8")
    status, out, err = run(capsys, "query", str(store), "--queries", str(tsv), "--json")
    assert status == 0, err
    rows = json.loads(out)["answers"]
    for r in rows:  # never an offset the client was not told of
        assert set(r["phy_offsets"]) <= {p for _, _, p in c.acked} | _unacked(c), r
    return [p in r["phy_offsets"] for r, (_, _, p) in zip(rows, c.acked, strict=True)]


def _unacked(c: Crash) -> set[int]:
    """Offsets of messages written but not acknowledged (sent as the broker died)."""
    from rmqarrow.commitlog import iter_records

    acked = {p for _, _, p in c.acked}
    return {r.physical_offset for r in iter_records(c.copy / "commitlog")} - acked


def test_the_crash_was_mid_write(crash: Crash) -> None:
    """The second batch was cut: some of it acknowledged, the rest never sent."""
    assert 120 + ACKED_BEFORE_KILL <= len(crash.acked) < 120 + 2000


def test_check_reads_the_crashed_store(crash: Crash, capsys: pytest.CaptureFixture[str]) -> None:
    """``check`` on the store as the crash left it: every index file is whole and its
    chains sound, and the CommitLog ends where the crash stopped the writes (its next
    file, created ahead and never written, is no damage: RocketMQ's recovery ends there
    too)."""
    status, out, err = run(capsys, "check", str(crash.copy), "--json")
    assert status == 0, out + err
    files = json.loads(out)["files"]
    assert len(files) >= 2
    assert {f["status"] for f in files} == {"ok"}, files
    assert all(not any(v for k, v in f["chains"].items() if k != "examples") for f in files)


def test_query_before_the_restart(
    crash: Crash, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """rmqarrow answers from the crashed store: every hit is a message that was written,
    and every message acknowledged before the second batch is found (the last few sent
    may not have reached the index before the kill)."""
    found = _ours(capsys, crash.copy, crash, tmp_path)
    assert all(found[:120])
    assert sum(found) >= len(found) - 20


def test_salvage_keeps_at_least_what_rocketmqs_deletion_keeps(
    crash: Crash, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The abnormal-exit load as RocketMQ does it (files newer than the checkpoint
    deleted) and with rmqarrow's salvage (their entries up to the checkpoint kept):
    both lose messages that the store held before the load."""
    before = sum(_ours(capsys, crash.copy, crash, tmp_path))
    got = {}
    for name, salvage in (("deleted", False), ("salvaged", True)):
        root = tmp_path / name
        shutil.copytree(crash.copy, root)
        with IndexService(
            root / "index", SLOTS, ENTRIES, checkpoint_path=root / "checkpoint"
        ) as index:
            index.load(last_exit_ok=False, salvage=salvage)
        got[name] = sum(_ours(capsys, root, crash, tmp_path))
    assert got["deleted"] <= got["salvaged"] < before


def test_after_the_restart_and_a_rebuild(
    crash: Crash, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """5.5.0's abnormal recovery deletes the index files newer than its checkpoint, then
    dispatches the CommitLog again from its recovery point: after the restart the broker
    answers every acknowledged message.  ``build --from-commitlog`` over the copy taken
    before the restart restores every one of them too."""
    broker = [p in a for a, (_, _, p) in zip(crash.broker_after_restart, crash.acked, strict=True)]
    assert all(broker)
    rebuilt = rebuild(crash.copy, tmp_path, capsys, version=crash.version)
    assert all(_ours(capsys, rebuilt, crash, tmp_path))
