"""A store as operators meet it: a broker-like writer appends, rolls and expires index and
CommitLog files while a follower archives it, readers query and check it, and the
follower is killed with SIGKILL and restarted midway.

At the end the follower's dataset equals, table for table and row for row, a full export
of the same stream written without expiry (the writer is deterministic for a seed, so the
reference store has the same files with the same bytes): nothing the broker expired is
lost from the archive, nothing is counted twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import rmqarrow
from rmqarrow.testing import BrokerLike, BrokerLikeOptions, start_broker_like

pytestmark = pytest.mark.slow

GEOMETRY = {"hash_slot_num": 64, "index_num": 256, "commitlog_file_size": 16 * 1024}
MESSAGES = 2_400
SEED = 11
# about 60 messages a second, 12 CommitLog files kept (about 14 s of messages): a
# follower restarted after a crash is back long before an unseen file could expire
WRITER = {"batch": 15, "interval": 0.25, "keep_commitlog_files": 12, "stop_when_done": True}


def _rmqarrow(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rmqarrow", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _reference(tmp: Path) -> Path:
    """The same stream written whole, without expiry, then exported at once."""
    store = tmp / "reference"
    writer = BrokerLike(store, BrokerLikeOptions(seed=SEED, messages=MESSAGES, **GEOMETRY))
    writer.start()
    while not writer.done:
        writer.step()
    writer.stop()
    out = tmp / "reference-lake"
    argv = ["export", str(store), str(out), "--commitlog", str(store / "commitlog")]
    done = subprocess.run(
        [sys.executable, "-m", "rmqarrow", *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


def _table(dataset: Path, name: str, keys: list[str]) -> pa.Table:
    with rmqarrow.open(dataset) as ds:
        table = ds.scan(name).read_all()
    return table.sort_by([(k, "ascending") for k in keys])


def _readers(store: Path, stop: threading.Event, failures: list[str]) -> None:
    """Readers beside the writer: each must exit 0 (query) or 0/1 with one line (check)."""
    while not stop.is_set():
        for args in (
            ["query", str(store), "--key", "TopicA#order-3", "--json"],
            ["check", str(store), "--json"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "rmqarrow", *args],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if "Traceback" in done.stderr or done.returncode not in (0, 1):
                failures.append(f"{args[0]}: {done.returncode} {done.stderr[-500:]}")
            elif args[0] == "query" and done.returncode != 0:
                failures.append(f"query: {done.returncode} {done.stderr[-500:]}")
        stop.wait(0.5)


def test_a_follower_beside_an_expiring_broker_keeps_every_entry(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    want_entries = _table(reference, "entries", ["file_name", "position"]).num_rows
    store, lake = tmp_path / "store", tmp_path / "lake"
    follow = [
        "export",
        str(store),
        str(lake),
        "--follow",
        "--interval",
        "0.2",
        "--commitlog",
        str(store / "commitlog"),
    ]
    failures: list[str] = []
    stop = threading.Event()
    with start_broker_like(
        store,
        seed=SEED,
        messages=MESSAGES,
        **WRITER,
        **GEOMETRY,
    ) as writer:
        readers = threading.Thread(target=_readers, args=(store, stop, failures))
        readers.start()
        follower = _rmqarrow(*follow)
        try:
            time.sleep(4.0)
            os.killpg(follower.pid, signal.SIGKILL)  # a crash mid-run
            follower.communicate(timeout=60)
            follower = _rmqarrow(*follow)  # the next run converges
            summary = writer.wait(timeout=300)
            assert summary["expired_commitlog_files"] > 0 and summary["expired_index_files"] > 0
            # the follower catches up with the writer's last batch, then stops cleanly
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if lake.exists():
                    with rmqarrow.open(lake) as ds:
                        rows = ds.scan("entries", columns=["position"]).read_all().num_rows
                    if rows >= want_entries:
                        break
                time.sleep(0.5)
            follower.send_signal(signal.SIGTERM)
            _, err = follower.communicate(timeout=120)
            assert follower.returncode in (0, 130, -signal.SIGTERM), err
            assert "Traceback" not in err, err
        finally:
            stop.set()
            readers.join(timeout=300)
            if follower.poll() is None:
                os.killpg(follower.pid, signal.SIGKILL)
                follower.communicate(timeout=60)
    assert not failures, failures[:3]

    for name, keys in (
        ("files", ["file_name"]),
        ("slots", ["file_name", "slot"]),
        ("entries", ["file_name", "position"]),
        ("messages", ["physical_offset"]),
    ):
        got, want = _table(lake, name, keys), _table(reference, name, keys)
        assert got.num_rows == want.num_rows, (name, got.num_rows, want.num_rows)
        assert got.equals(want), name
