"""One writer per store, dataset or checkpoint; readers never blocked; merges checked.

Writers are real ``python -m rmqarrow`` processes.  A writer is held mid-write by freezing
it with SIGSTOP at a crash point (``RMQARROW_CRASH_SIGNAL=stop``), so the overlap of two
writers is certain rather than a matter of timing.  Before: two builds appending to one
store both exited 0 and left a damaged store; ``build --checkpoint`` rewrote any file,
by rename; ``import`` merged a store's own dataset into it (every answer doubled) and
datasets of another geometry.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from storage.storage_helpers import (
    GEO,
    INDEX,
    SLOTS,
    cli,
    hidden,
    one_line_error,
    records,
    write_csv,
)

from rmqarrow._lock import acquire, lock_path, writer_lock
from rmqarrow._staging import sibling
from rmqarrow.errors import InvalidValueError, StoreLockedError
from rmqarrow.format.checkpoint import CHECKPOINT_SIZE, StoreCheckpoint

HERE = Path(__file__).resolve().parent.parent


def _env(crash: str | None = None, sig: str = "stop") -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RMQARROW_CRASH_AT", None)
    if crash is not None:
        env["RMQARROW_CRASH_AT"] = crash
        env["RMQARROW_CRASH_SIGNAL"] = sig
    return env


def frozen(*args: object, at: str) -> subprocess.Popen[str]:
    """``rmqarrow ARGS`` stopped (SIGSTOP) at crash point ``at``, holding what it holds."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqarrow", *map(str, args)],
        env=_env(at),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # waitpid(WUNTRACED) returns when the child stops (or ends): no polling, no timing
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), proc.communicate()
    return proc


def finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=180)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -9


def contents(store: Path) -> list[bytes]:
    """The store's files in name order (names carry the build's wall clock; bytes do not)."""
    return [p.read_bytes() for p in sorted(store.iterdir())]


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    base = write_csv(tmp_path / "base.csv", records(150))
    a = write_csv(tmp_path / "a.csv", records(150, 150))
    b = write_csv(tmp_path / "b.csv", records(150, 300))
    return base, a, b


def built(tmp_path: Path, name: str, *csvs: Path) -> Path:
    store = tmp_path / name
    for src in csvs:
        cli("build", store, "--from", src, *GEO).check_returncode()
    return store


def test_second_writer_refused_naming_the_holder_then_sequential(
    tmp_path: Path, inputs: tuple[Path, Path, Path]
) -> None:
    base, a, b = inputs
    store = built(tmp_path, "store", base)
    holder = frozen("build", store, "--from", a, *GEO, at="put:entries@3")
    try:
        refused = cli("build", store, "--from", b, *GEO)
        line = one_line_error(refused)
        assert refused.returncode == 1
        assert f"pid {holder.pid} on {socket.gethostname()}" in line
        assert "rmqarrow build" in line and "since 20" in line
        assert str(store) in line
        # a reader is never blocked: it answers from what is committed
        query = cli("query", store, "--topic", "T", "--key", "u3")
        assert query.returncode == 0, query.stderr
        assert "1300" in query.stdout
    finally:
        done = finish(holder)
    assert done.returncode == 0, done.stderr
    again = cli("build", store, "--from", b, *GEO)
    assert again.returncode == 0, again.stderr
    assert contents(store) == contents(built(tmp_path, "sequential", base, a, b))
    assert cli("check", store).returncode == 0
    assert hidden(tmp_path) == []  # the lock file goes with its last holder


_WAITER = """
import sys
sys.path.insert(0, {tests!r})
from storage.storage_helpers import INDEX, SLOTS, records
from rmqarrow._lock import acquire
from rmqarrow.errors import StoreLockedError
from rmqarrow.index.service import IndexService

store = {store!r}
try:
    acquire(store)
except StoreLockedError:
    print("held", flush=True)
with IndexService(store, SLOTS, INDEX, wait=True) as s:
    s.load()
    s.build_index_many(records(150, 300))
    s.flush()
print("done", flush=True)
"""


def test_second_writer_waits_when_asked(tmp_path: Path, inputs: tuple[Path, Path, Path]) -> None:
    base, a, _ = inputs
    store = built(tmp_path, "store", base)
    holder = frozen("build", store, "--from", a, *GEO, at="put:entries@3")
    waiter = subprocess.Popen(
        [sys.executable, "-c", _WAITER.format(tests=str(HERE), store=str(store))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert waiter.stdout is not None
        assert waiter.stdout.readline().strip() == "held"  # it saw the holder, now waits
    finally:
        done = finish(holder)
    out, err = waiter.communicate(timeout=180)
    assert done.returncode == 0, done.stderr
    assert waiter.returncode == 0, err
    assert out.strip() == "done"
    sequential = built(tmp_path, "sequential", *inputs)
    assert contents(store) == contents(sequential)


def test_killed_holder_leaves_a_lock_the_next_writer_takes(
    tmp_path: Path, inputs: tuple[Path, Path, Path]
) -> None:
    base, a, b = inputs
    store = built(tmp_path, "store", base)
    holder = frozen("build", store, "--from", a, *GEO, at="put:entries@3")
    kill(holder)
    lock = lock_path(store)
    assert lock.exists() and f'"pid": {holder.pid}' in lock.read_text()  # stale, kernel-free
    done = cli("build", store, "--from", b, *GEO)
    assert done.returncode == 0, done.stderr
    assert not lock.exists()
    assert cli("check", store).returncode == 0
    query = cli("query", store, "--topic", "T", "--key", "u310")
    assert query.returncode == 0 and str(1000 + 100 * 310) in query.stdout


def test_export_to_one_dataset_one_at_a_time(
    tmp_path: Path, inputs: tuple[Path, Path, Path]
) -> None:
    store = built(tmp_path, "store", *inputs)
    work = tmp_path / "work"
    work.mkdir()
    holder = frozen("export", store, work / "ds", *GEO, at="export:part@2")
    try:
        refused = cli("export", store, work / "ds", *GEO)
        assert refused.returncode == 1
        assert f"pid {holder.pid}" in one_line_error(refused)
    finally:
        kill(holder)
    done = cli("export", store, work / "ds", *GEO)
    assert done.returncode == 0, done.stderr
    assert hidden(work) == []  # the killed export's staging and lock are both gone


def test_import_into_a_store_being_built_is_refused(
    tmp_path: Path, inputs: tuple[Path, Path, Path]
) -> None:
    base, a, b = inputs
    store = built(tmp_path, "store", base)
    later = built(tmp_path, "later", b)
    cli("export", later, tmp_path / "ds", *GEO).check_returncode()
    holder = frozen("build", store, "--from", a, *GEO, at="put:entries@3")
    try:
        refused = cli("import", tmp_path / "ds", store)
        assert refused.returncode == 1
        assert f"pid {holder.pid}" in one_line_error(refused)
    finally:
        assert finish(holder).returncode == 0
    done = cli("import", tmp_path / "ds", store)
    assert done.returncode == 0, done.stderr
    # the dataset's files were named (by the clock) before the build's, over later
    # records: check flags them out of name order, and nothing else
    checked = cli("check", store, "--json")
    statuses = {f["status"] for f in json.loads(checked.stdout)["files"]}
    assert statuses <= {"ok", "out of name order"}, checked.stdout


# -- the lock itself, in this process -----------------------------------------------------


def test_lock_is_reentrant_and_removed_by_its_last_holder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with writer_lock(store), writer_lock(store):
        assert lock_path(store).exists()
        # a staging folder of the store is the store, for the lock
        with writer_lock(sibling(store, "build")):
            pass
        assert lock_path(store).exists()
    assert not lock_path(store).exists()
    assert lock_path(sibling(store, "import")) == lock_path(store)


def test_one_lock_whatever_the_path_says(tmp_path: Path) -> None:
    """A store named through a symlink or a relative path is the same store."""
    store = tmp_path / "store"
    store.mkdir()
    (tmp_path / "link").symlink_to(store)
    assert lock_path(tmp_path / "link") == lock_path(store) == lock_path(store / ".." / "store")


@pytest.mark.parametrize("wait", [-1, float("nan"), "yes", None])
def test_wait_must_be_a_bool_or_seconds(tmp_path: Path, wait: object) -> None:
    with pytest.raises(InvalidValueError, match="wait must be"):
        acquire(tmp_path / "store", wait=wait)  # type: ignore[arg-type]


def test_waiting_a_while_then_refused(tmp_path: Path, inputs: tuple[Path, Path, Path]) -> None:
    base, a, _ = inputs
    store = built(tmp_path, "store", base)
    holder = frozen("build", store, "--from", a, *GEO, at="put:entries@3")
    try:
        with pytest.raises(StoreLockedError, match=f"after waiting 0.3 s: pid {holder.pid}") as e:
            acquire(store, wait=0.3)
        assert isinstance(e.value, BlockingIOError)
    finally:
        assert finish(holder).returncode == 0


# -- checkpoints --------------------------------------------------------------------------


def test_checkpoint_refuses_what_is_not_one(
    tmp_path: Path, inputs: tuple[Path, Path, Path]
) -> None:
    base = inputs[0]
    text = tmp_path / "notes.txt"
    text.write_text("these are my notes, not a checkpoint\n" * 200)
    big = tmp_path / "00000000000000000000"  # a CommitLog file's name and kind of size
    big.write_bytes(b"\x00\x00\x01\x00" * 4096)
    page = tmp_path / "page"  # the right size, but text where the timestamps are
    page.write_bytes(("x" * 4096).encode())
    for bad in (text, big, page):
        before = bad.read_bytes()
        done = cli("build", tmp_path / "store", "--from", base, *GEO, "--checkpoint", bad)
        line = one_line_error(done)
        assert done.returncode == 1 and "not a RocketMQ checkpoint" in line, line
        assert bad.read_bytes() == before
    assert not (tmp_path / "store").exists()


def test_checkpoint_written_in_place(tmp_path: Path) -> None:
    cp = tmp_path / "checkpoint"
    raw = bytearray(CHECKPOINT_SIZE)
    raw[0:8] = (1_700_000_000_000).to_bytes(8, "big")
    raw[8:16] = (1_700_000_000_500).to_bytes(8, "big")
    raw[24:32] = (123456).to_bytes(8, "big")
    cp.write_bytes(bytes(raw))
    inode = cp.stat().st_ino
    src = write_csv(tmp_path / "in.csv", records(300))
    done = cli("build", tmp_path / "store", "--from", src, *GEO, "--checkpoint", cp)
    assert done.returncode == 0, done.stderr
    assert cp.stat().st_ino == inode  # the same file: a broker's mapping still sees it
    after = cp.read_bytes()
    assert len(after) == CHECKPOINT_SIZE
    assert after[:16] == raw[:16] and after[24:] == raw[24:]
    assert StoreCheckpoint.read(cp).index_msg_timestamp > 0
    assert hidden(tmp_path) == []


def test_missing_checkpoint_is_created(tmp_path: Path) -> None:
    cp = tmp_path / "root" / "checkpoint"
    cp.parent.mkdir()
    src = write_csv(tmp_path / "in.csv", records(300))
    done = cli("build", tmp_path / "root" / "index", "--from", src, *GEO, "--checkpoint", cp)
    assert done.returncode == 0, done.stderr
    assert cp.stat().st_size == CHECKPOINT_SIZE
    assert StoreCheckpoint.read(cp).index_msg_timestamp > 0
    assert hidden(cp.parent) == []


# -- merges -------------------------------------------------------------------------------


def test_import_refuses_a_dataset_of_the_store_itself(
    tmp_path: Path, inputs: tuple[Path, Path, Path]
) -> None:
    store = built(tmp_path, "store", *inputs)
    cli("export", store, tmp_path / "ds", *GEO).check_returncode()
    copy = tmp_path / "copy"
    copy.mkdir()
    for i, p in enumerate(sorted(store.iterdir())):  # a copy under other names
        shutil.copy(p, copy / f"2020010100000{i:04d}")
    before = contents(copy)
    done = cli("import", tmp_path / "ds", copy)
    line = one_line_error(done)
    assert done.returncode == 1
    assert "indexes CommitLog offsets" in line and "twice" in line
    assert contents(copy) == before
    same = cli("import", tmp_path / "ds", store)  # the store itself: same names
    assert same.returncode == 1 and "already holds" in one_line_error(same)


def test_import_refuses_another_geometry(tmp_path: Path, inputs: tuple[Path, Path, Path]) -> None:
    base, _, b = inputs
    store = built(tmp_path, "store", base)
    other = tmp_path / "other"
    cli(
        "build",
        other,
        "--from",
        b,
        "--hash-slot-num",
        str(SLOTS * 2),
        "--index-num",
        str(INDEX * 2),
    ).check_returncode()
    cli("export", other, tmp_path / "ds").check_returncode()
    done = cli("import", tmp_path / "ds", store)
    line = one_line_error(done)
    assert done.returncode == 1 and "geometry" in line and "32 slots" in line, line


def test_import_merges_a_disjoint_dataset(tmp_path: Path, inputs: tuple[Path, Path, Path]) -> None:
    base, a, b = inputs
    store = built(tmp_path, "store", base, a)
    later = built(tmp_path, "later", b)
    cli("export", later, tmp_path / "ds", *GEO).check_returncode()
    done = cli("import", tmp_path / "ds", store)
    assert done.returncode == 0, done.stderr
    for key, offset in (("u10", 2000), ("u200", 21000), ("u400", 41000)):
        q = cli("query", store, "--topic", "T", "--key", key)
        assert q.returncode == 0 and q.stdout.split().count(str(offset)) == 1, q.stdout
