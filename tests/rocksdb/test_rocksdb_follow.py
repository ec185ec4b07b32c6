"""``export --follow`` / ``--incremental`` on a store that is not IndexFiles: one clear line.

A 5.x broker keeps ``rocksdbstore/`` (timers, transactions) whatever its message index,
and makes ``index/`` only at its first message: a follower started with the broker
finds a store root that reads as a RocksDB index.  It used to export that once and exit
0, its ``--follow`` ignored.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest
from cli_run import one_error, run
from rocksdb_golden_data import ALL_ROCKSDB

EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")


@pytest.mark.parametrize("mode", [["--follow", "--interval", "1"], ["--incremental"]])
def test_a_broker_root_without_index_files_yet_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mode: list[str]
) -> None:
    root = tmp_path / "store"
    shutil.copytree(EDGE.db, root / "rocksdbstore")
    (root / "commitlog").mkdir()
    (root / "checkpoint").write_bytes(bytes(4096))
    status, out, err = run(capsys, "export", str(root), str(tmp_path / "ds"), *mode)
    assert status == 2 and out == ""
    one_error(err, mode[0].removeprefix("--"), "no index/ yet", "once index/ exists")
    assert not (tmp_path / "ds").exists()


def test_a_rocksdb_directory_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    status, _, err = run(capsys, "export", str(EDGE.db), str(tmp_path / "ds"), "--follow")
    assert status == 2
    one_error(err, "follow", "only RocketMQ's IndexFiles")
    assert not (tmp_path / "ds").exists()
    # the refusal came before the follower took Ctrl-C and SIGTERM over
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers


def test_a_root_with_index_files_opened_for_its_rocksdb_index_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "store"
    shutil.copytree(EDGE.db, root / "rocksdbstore")
    (root / "index").mkdir()
    (root / "commitlog").mkdir()
    args = ["export", str(root), str(tmp_path / "ds"), "--index", "rocksdb", "--incremental"]
    status, _, err = run(capsys, *args)
    assert status == 2
    line = one_error(err, "incremental", "its IndexFiles")
    assert "no index/ yet" not in line
