"""Never write under a running broker: ``STORE/lock`` (a POSIX record lock) and ``abort``.

The broker is :mod:`rmqarrow.testing.broker_like`, a real process holding the lock as
Java's ``FileChannel.tryLock(0, 1, false)`` does (fcntl, byte 0) and keeping ``abort``.
Before: ``rmqarrow build`` into a live ``STORE/index`` ran beside it (keys lost, the live
file rolled back to its header), and so did ``import``, a writable ``IndexService``
and checkpoint writes; nothing looked at ``lock`` or ``abort``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import one_error, run
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.importer import import_dataset
from storage.storage_helpers import GEO, records, write_csv

import rmqarrow
from rmqarrow._broker import (
    broker_state,
    check_store_writable,
    hold_broker_lock,
    release_broker_lock,
    store_root,
)
from rmqarrow.commitlog import CommitLogWriter, iter_records
from rmqarrow.errors import BrokerRunningError, StoreLockedError, UsageError
from rmqarrow.format.checkpoint import StoreCheckpoint
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService
from rmqarrow.testing import BrokerLike, BrokerLikeOptions, start_broker_like
from rmqarrow.tiered import TieredIndexFile, TieredIndexStore

#: one batch of every message: once ready, the writer idles holding the store, so its
#: bytes stand still while the refusals are checked against them
LIVE = {"messages": 400, "batch": 400, "commitlog_file_size": 16 * 1024}
UNIQ_3 = f"{7:08X}{3:024X}"  # message 3 of seed 7: TopicA, keys order-3 and one shared


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every entry under ``root`` (hidden ones too): its bytes and mtime."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (b"" if p.is_dir() else p.read_bytes(), st.st_mtime_ns)
    return out


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A small exported dataset to import (from a store of its own)."""
    src = tmp_path / "src"
    run_ok = rmqarrow.build(src, records=write_csv(tmp_path / "r.csv", records(100)), **_geo())
    assert run_ok.records == 100
    out = tmp_path / "dataset"
    export_store(src, out)
    return out


def _geo() -> dict[str, int]:
    return {"hash_slot_num": int(GEO[1]), "index_num": int(GEO[3])}


def test_every_write_refused_beside_a_running_broker_readers_work(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    with start_broker_like(store, **LIVE) as broker:
        before = snapshot(store)
        index_file = sorted((store / "index").iterdir())[-1]
        commitlog = store / "commitlog"

        def refused(*args: str) -> str:
            status, _, err = run(capsys, *args)
            assert status == 1, err
            assert snapshot(store) == before  # not a byte, not an mtime, no new entry
            # force in the command's terms: export has no --force (nor Store.export a force)
            force = "force=True" if args[0] == "export" else "--force"
            return one_error(err, str(store), f"pid {broker.pid}", str(store / "lock"), force)

        refused("build", f"{store}/index", "--from-commitlog", str(commitlog))
        refused("build", f"{store}/index", "--from-commitlog", str(commitlog), "--force")
        refused(
            "build",
            str(tmp_path / "copy" / "index"),
            "--from-commitlog",
            str(commitlog),
            "--checkpoint",
            str(store / "checkpoint"),
        )
        refused("build", f"{store}/index", "--from-commitlog", str(commitlog), "--index", "rocksdb")
        refused("import", str(dataset), f"{store}/index")
        refused("export", str(store), str(store / "lake"))  # a dataset is no part of it
        # a file:// URI is the same path, for the guard as for the writers
        refused("import", str(dataset), (store / "index").as_uri())
        refused("export", str(store), (store / "lake").as_uri())
        refused("build", (store / "index").as_uri(), "--from-commitlog", commitlog.as_uri())
        with pytest.raises(BrokerRunningError):
            import_dataset(dataset, (store / "index").as_uri())
        assert snapshot(store) == before
        assert not (tmp_path / "copy").exists()

        # the library: every writer, in library terms
        writers = [
            lambda: IndexService(store / "index").load(),
            lambda: IndexService(store / "index", 64, 256, force=True).new_file(),
            lambda: IndexFile.open(index_file, 64, 256, writable=True),
            lambda: IndexFile.create(store / "index" / "29991231000000000", 64, 256),
            lambda: StoreCheckpoint.update(store / "checkpoint", index_msg_timestamp=1),
            lambda: StoreCheckpoint().write(store / "checkpoint", force=True),
            lambda: rmqarrow.build(store / "index", commitlog=commitlog),
            lambda: import_dataset(dataset, store / "index"),
            lambda: TieredIndexStore.open(store, writable=True),
            lambda: TieredIndexFile.create(store / "tiered_index_file" / "1", 1, 64, 256),
            lambda: TieredIndexFile.open(store / "tiered_index_file" / "1", writable=True),
            lambda: CommitLogWriter(commitlog, mapped_file_size=1 << 14, start_offset=1 << 30),
        ]
        for write in writers:
            with pytest.raises(BrokerRunningError, match=f"pid {broker.pid} holds") as e:
                write()
            assert "force=True" in str(e.value)
            assert isinstance(e.value, StoreLockedError)
            assert snapshot(store) == before

        # readers are read-only and work beside it
        for args in (["info", str(store)], ["check", str(store)]):
            status, _, err = run(capsys, *args)
            assert status == 0, err
        want = [r.physical_offset for r in iter_records(commitlog) if r.uniq_key == UNIQ_3]
        assert len(want) == 1
        status, out, err = run(capsys, "query", str(store), "--topic", "TopicA", "--key", "order-3")
        assert status == 0 and str(want[0]) in out, err
        with rmqarrow.open(store) as s:
            assert s.query("TopicA", "order-3") == want

        assert snapshot(store) == before
        assert broker.proc.poll() is None


def test_after_kill_9_writes_are_allowed_as_the_crash_recovery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    with start_broker_like(store, **LIVE) as broker:
        broker.kill()
    assert (store / "abort").exists() and (store / "lock").exists()  # as a crash leaves them
    state = broker_state(store / "index")
    assert state is not None and state.crashed and not state.running

    status, _, err = run(
        capsys, "build", f"{store}/index", "--from-commitlog", f"{store}/commitlog"
    )
    assert status == 0, err
    assert "did not shut down cleanly" in err and "not running" in err
    with IndexService(store / "index", checkpoint_path=store / "checkpoint") as s:
        s.load()
        assert s.files
    StoreCheckpoint.update(store / "checkpoint", index_msg_timestamp=1)
    assert (store / "abort").exists()  # rmqarrow leaves the broker's markers alone


def test_after_a_clean_stop_writes_are_allowed_quietly(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    with start_broker_like(store, **LIVE) as broker:
        summary = broker.stop()
    assert summary["clean"] and summary["messages"] == 400
    assert not (store / "abort").exists() and (store / "lock").read_bytes() == b"lock"

    status, _, err = run(
        capsys, "build", f"{store}/index", "--from-commitlog", f"{store}/commitlog"
    )
    assert status == 0, err
    assert "warning" not in err
    status, _, err = run(capsys, "import", str(dataset), str(tmp_path / "elsewhere"))
    assert status == 0, err
    StoreCheckpoint.update(store / "checkpoint", index_msg_timestamp=1)


def test_a_copy_with_a_stale_abort_and_no_lock_needs_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    copy = tmp_path / "copy"
    with start_broker_like(store, **LIVE) as live:
        shutil.copytree(store, copy, ignore=shutil.ignore_patterns("lock", ".*"))
        live.kill()
    assert (copy / "abort").exists() and not (copy / "lock").exists()
    before = snapshot(copy)

    args = ["build", f"{copy}/index", "--from-commitlog", f"{copy}/commitlog"]
    status, _, err = run(capsys, *args)
    assert status == 1
    one_error(err, str(copy), "cannot tell", str(copy / "abort"), "is missing", "--force")
    with pytest.raises(BrokerRunningError, match=r"force=True"):
        IndexService(copy / "index").load()
    assert snapshot(copy) == before
    assert not (copy / "lock").exists()  # the detector never creates the lock

    status, _, err = run(capsys, *args, "--force")
    assert status == 0, err
    assert "forced" in err
    with IndexService(copy / "index", force=True) as s:
        s.load()
    StoreCheckpoint.update(copy / "checkpoint", force=True, index_msg_timestamp=1)
    assert not (copy / "lock").exists()


def test_the_detector_never_creates_or_takes_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "index").mkdir(parents=True)
    (root / "abort").touch()
    for path in (root, root / "index", root / "index" / "f", root / "checkpoint"):
        with pytest.raises(BrokerRunningError):
            check_store_writable(path)
    assert sorted(p.name for p in root.iterdir()) == ["abort", "index"]
    (root / "lock").touch()
    state = broker_state(root / "index")
    assert state is not None and state.crashed
    before = snapshot(root)
    check_store_writable(root / "index")
    assert snapshot(root) == before


def test_which_store_a_path_belongs_to(tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / "index").mkdir(parents=True)
    (root / "lock").touch()
    for path in (
        root,
        root / "index",
        root / "index" / "20240101000000000",
        root / "checkpoint",
        root / "commitlog" / "00000000000000000000",
        root / "rocksdbstore",
        root / "rocksdbstore" / "000012.sst",
        root / "RocksDBMessageStore" / "000012.sst",  # an earlier revision's folder
        root / "tiered_index_file" / "1700000000000",
        root / ".index.build-123-abcdef01",  # a staging name stands for its output
        root / "not-yet",
    ):
        assert store_root(path) == root.resolve(), path
    assert store_root(tmp_path / "elsewhere" / "index") is None
    assert store_root(root / "deep" / "er" / "x") is None
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "lock").mkdir()  # a folder named lock is no broker's lock
    assert store_root(tmp_path / "odd") is None
    assert broker_state(tmp_path / "elsewhere") is None


def test_a_writer_holding_the_lock_itself_keeps_it(tmp_path: Path) -> None:
    """POSIX locks drop when any descriptor of the file closes: the broker-like writer's
    own checks (its IndexService, its checkpoint) must not open the lock file again."""
    store = tmp_path / "store"
    broker = BrokerLike(store, BrokerLikeOptions(messages=300, batch=100))
    broker.start()
    try:
        for _ in range(3):
            broker.step()
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from rmqarrow._broker import broker_state; "
                "print(broker_state(sys.argv[1]).holder)",
                str(store),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert probe.stdout.strip() == str(os.getpid())
        # like a broker, it takes none of rmqarrow's writer locks beside its files
        assert [p.name for p in store.iterdir() if p.name.startswith(".")] == []
    finally:
        summary = broker.stop()
    assert summary["messages"] == 300 and not (store / "abort").exists()
    state = broker_state(store)
    assert state is not None and state.holder is None and not state.abort_exists


def test_the_broker_like_writer_rolls_and_expires(tmp_path: Path) -> None:
    store = tmp_path / "store"
    options = {
        "messages": 3000,
        "batch": 500,
        "commitlog_file_size": 16 * 1024,
        "keep_commitlog_files": 3,
        "stop_when_done": True,
    }
    summary = start_broker_like(store, **options).wait()
    assert summary["messages"] == 3000 and summary["clean"]
    assert len(summary["commitlog_files"]) == 3 and summary["expired_commitlog_files"] > 0
    assert summary["expired_index_files"] > 0
    oldest = int(summary["commitlog_files"][0])
    assert sorted(p.name for p in (store / "index").iterdir()) == summary["index_files"]
    with rmqarrow.open(store) as s:
        assert s.query("TopicC", "order-2999")  # the newest message is found
        assert not s.query("TopicA", "order-0")  # the oldest went with its files
    with IndexService(store / "index", read_only=True) as idx:
        idx.load()
        assert idx.files[0].end_phy_offset >= oldest  # nothing wholly below the log left
    # the same seed writes the same store
    again = tmp_path / "again"
    second = start_broker_like(again, **options).wait()
    for listed in ("commitlog_files", "index_files"):
        assert second[listed] == summary[listed]
    for name in summary["index_files"]:
        assert (store / "index" / name).read_bytes() == (again / "index" / name).read_bytes()
    for name in summary["commitlog_files"]:
        assert (store / "commitlog" / name).read_bytes() == (
            again / "commitlog" / name
        ).read_bytes()


_OFD_HOLDER = """
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 1, 0))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not hasattr(fcntl, "F_OFD_SETLK"), reason="open file description locks")
def test_a_lock_whose_holder_the_kernel_does_not_name_is_still_a_running_broker(
    tmp_path: Path,
) -> None:
    (tmp_path / "index").mkdir()
    (tmp_path / "lock").write_bytes(b"lock")
    holder = subprocess.Popen(
        [sys.executable, "-c", _OFD_HOLDER, str(tmp_path / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(BrokerRunningError, match="a process the kernel does not name"):
            check_store_writable(tmp_path / "index", force=True)
        with pytest.raises(BrokerRunningError, match="a process the kernel does not name"):
            hold_broker_lock(tmp_path)
    finally:
        holder.communicate("", timeout=60)
    check_store_writable(tmp_path / "index")  # freed with its holder


def _holder_seen_from_outside(store: Path) -> str:
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from rmqarrow._broker import broker_state; "
            "print(broker_state(sys.argv[1]).holder)",
            str(store),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return probe.stdout.strip()


def test_a_second_hold_in_the_same_process_is_refused_and_keeps_the_first(
    tmp_path: Path,
) -> None:
    (tmp_path / "index").mkdir()
    fd = hold_broker_lock(tmp_path)
    try:
        # POSIX locks never conflict inside one process: the second hold must be refused
        # by rmqarrow itself, and refusing it must not drop the first
        with pytest.raises(BrokerRunningError, match=f"this process \\(pid {os.getpid()}\\)"):
            hold_broker_lock(tmp_path)
        assert _holder_seen_from_outside(tmp_path) == str(os.getpid())
    finally:
        release_broker_lock(fd)
    assert _holder_seen_from_outside(tmp_path) == "None"
    release_broker_lock(hold_broker_lock(tmp_path))  # free again once released


def test_a_writer_that_does_not_stop_in_time_is_killed_not_left(tmp_path: Path) -> None:
    # LIVE idles holding the store until told to stop: waiting for it times out
    with start_broker_like(tmp_path / "store", **LIVE) as broker:
        with pytest.raises(subprocess.TimeoutExpired):
            broker.wait(timeout=0.5)
        assert broker.proc.returncode is not None  # reaped, not running
    assert broker_state(tmp_path / "store") is not None
    check_store_writable(tmp_path / "store" / "index")  # its lock went with it


def test_the_writer_refuses_bad_options_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rmqarrow.testing.broker_like", str(tmp_path / "s"), "--batch", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "broker_like: error: batch must be >= 1, got 0"
    assert not (tmp_path / "s").exists()
    with start_broker_like(tmp_path / "t", messages=10, batch=10) as first:
        with pytest.raises(BrokerRunningError, match=f"pid {first.pid} already holds the lock"):
            BrokerLike(first.store, BrokerLikeOptions()).start()
        assert first.stop()["messages"] == 10
    with pytest.raises(UsageError, match="starts on a new store"):
        BrokerLike(first.store, BrokerLikeOptions()).start()
    state = broker_state(first.store)
    assert state is not None and state.holder is None and not state.abort_exists
