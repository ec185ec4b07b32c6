"""``rmqarrow.build`` from Python: the crash-safe build the command line uses, with its
progress reported to a callback and its notes to the ``rmqarrow`` loggers."""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import rmqarrow
from rmqarrow._progress import ProgressUpdate
from rmqarrow.cli import main
from rmqarrow.commitlog import CommitLogWriter, Message, index_records
from rmqarrow.errors import UsageError
from rmqarrow.format.layout import GeometryHint
from rmqarrow.format.records import RECORD_COLUMNS
from rmqarrow.index.store_build import build_store
from rmqarrow.tiered import check_tiered

START = 1_709_251_200_000


def _commitlog(path: Path, n: int = 300) -> Path:
    with CommitLogWriter(path, mapped_file_size=64 * 1024) as log:
        for i in range(n):
            log.append(
                Message(
                    topic="T",
                    body=b"x" * 40,
                    keys=[f"k{i}"],
                    uniq_key=f"U{i:08d}",
                    born_timestamp=START + i,
                    store_timestamp=START + 10 * i,
                )
            )
    return path


def _files(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(store.iterdir())}


def test_build_from_a_commitlog_equals_the_command_line(tmp_path: Path) -> None:
    log = _commitlog(tmp_path / "commitlog")
    updates: list[ProgressUpdate] = []
    summary = rmqarrow.build(
        tmp_path / "py", commitlog=log, hash_slot_num=40, index_num=160, progress=updates.append
    )
    assert summary.records == 300 and summary.entries == 600 and summary.new_files == 4
    assert updates and updates[-1].finished and updates[-1].done == 300
    assert (
        main(
            [
                "build",
                str(tmp_path / "cli"),
                "--from-commitlog",
                str(log),
                "--hash-slot-num",
                "40",
                "--index-num",
                "160",
            ]
        )
        == 0
    )
    py, cli = _files(tmp_path / "py"), _files(tmp_path / "cli")
    assert list(py.values()) == list(cli.values())  # names are creation times; bytes equal


def test_a_failed_new_build_leaves_no_store(tmp_path: Path) -> None:
    log = _commitlog(tmp_path / "commitlog")
    batches = list(index_records(log, batch_rows=50))

    def failing() -> Iterator[pa.RecordBatch]:
        yield from batches[:3]
        raise RuntimeError("the source died")

    store = tmp_path / "store"
    with pytest.raises(RuntimeError, match="the source died"):
        build_store(store, failing(), geometry=GeometryHint(40, 160))
    assert not store.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["commitlog"]  # no staging folder left
    summary = build_store(store, iter(batches), geometry=GeometryHint(40, 160))
    assert summary.records == 300


def test_build_refuses_what_is_not_an_index_store(tmp_path: Path) -> None:
    log = _commitlog(tmp_path / "commitlog")
    with pytest.raises(UsageError, match="a CommitLog directory"):
        rmqarrow.build(log, commitlog=log)
    root = tmp_path / "root"
    (root / "index").mkdir(parents=True)
    (root / "commitlog").mkdir()
    with pytest.raises(UsageError, match="build into its index directory"):
        rmqarrow.build(root, commitlog=log)
    with pytest.raises(UsageError, match="one source"):
        rmqarrow.build(tmp_path / "s")
    with pytest.raises(UsageError, match="spark engine decodes a CommitLog"):
        rmqarrow.build(tmp_path / "s", records=tmp_path / "r.csv", engine="spark")


def test_stale_staging_of_a_dead_build_is_removed_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = _commitlog(tmp_path / "commitlog", 20)
    dead = tmp_path / ".store.build-999999999-0123abcd"  # no process has this pid
    dead.mkdir()
    (dead / "junk").write_bytes(b"left by kill -9")
    with caplog.at_level(logging.INFO, logger="rmqarrow"):
        rmqarrow.build(tmp_path / "store", commitlog=log, hash_slot_num=40, index_num=160)
    assert not dead.exists()
    assert any(
        "left by a killed build" in r.getMessage() and r.name.startswith("rmqarrow")
        for r in caplog.records
    )


def test_records_file_build_and_validation(tmp_path: Path) -> None:
    rows = pa.table(
        {
            "topic": ["T", "T"],
            "keys": ["a", "b"],
            "uniq_key": ["U1", "U2"],
            "commit_log_offset": [0, 100],
            "store_timestamp": [START, START + 1],
            "sys_flag": [0, 0],
        }
    )
    assert rows.column_names == list(RECORD_COLUMNS)
    import pyarrow.csv as pacsv

    pacsv.write_csv(rows, tmp_path / "r.csv")
    summary = rmqarrow.build(
        tmp_path / "s", records=tmp_path / "r.csv", hash_slot_num=40, index_num=160
    )
    assert summary.entries == 4
    with rmqarrow.open(tmp_path / "s") as store:
        assert store.query("T", "b") == [100]


def test_check_tiered_reads_in_chunks_and_names_problems(tmp_path: Path) -> None:
    from tiered_golden_data import TieredSet

    basic = TieredSet("tiered_basic")
    local = tmp_path / "unsealed.bin"
    local.write_bytes((basic.dir / "unsealed.bin").read_bytes())
    assert check_tiered(local, GeometryHint(basic.hash_slot_num, basic.index_num)).ok
    data = bytearray(local.read_bytes())
    struct.pack_into(">i", data, 28 + 8 * 3 + 4, 7)  # the never-written half of slot 3
    local.write_bytes(bytes(data))
    report = check_tiered(local, GeometryHint(basic.hash_slot_num, basic.index_num))
    assert not report.ok and "non-zero second int32" in report.files[0].problems[0]
    compacted = tmp_path / "compacted.bin"
    data = bytearray((basic.dir / "compacted.bin").read_bytes())
    assert check_tiered(basic.dir / "compacted.bin").ok
    struct.pack_into(">i", data, 28 + 8 * 2, 99)  # slot 2's position off its range
    compacted.write_bytes(bytes(data))
    problems = check_tiered(compacted).files[0].problems
    assert problems and "back-to-back" in problems[0]


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("commit_log_offset", -5, "negative"),
        ("store_timestamp", 1_709_251_200, "seconds"),
    ],
)
def test_bad_records_are_refused_by_row_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, value: int, said: str
) -> None:
    import pyarrow.csv as pacsv

    rows = {
        "topic": ["T"] * 3,
        "keys": ["a", "b", "c"],
        "uniq_key": ["U1", "U2", "U3"],
        "commit_log_offset": [0, 100, 200],
        "store_timestamp": [START] * 3,
        "sys_flag": [0, 0, 0],
    }
    rows[column][2] = value
    pacsv.write_csv(pa.table(rows), tmp_path / "r.csv")
    assert main(["build", str(tmp_path / "s"), "--from", str(tmp_path / "r.csv")]) == 1
    err = capsys.readouterr().err
    assert "row 3" in err and said in err and err.count("\n") == 1, err
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_build_waits_for_another_writer_or_names_it(tmp_path: Path) -> None:
    """A real second process holds the store's writer lock: ``build`` stops naming it, and
    ``--wait`` builds once it lets go."""
    import subprocess
    import sys
    import time

    log = _commitlog(tmp_path / "commitlog", 30)
    store = tmp_path / "store"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from rmqarrow._lock import writer_lock\n"
            f"with writer_lock({str(store)!r}):\n"
            "    print('held', flush=True); time.sleep(4)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        cmd = [
            sys.executable,
            "-m",
            "rmqarrow",
            "build",
            str(store),
            "--from-commitlog",
            str(log),
            "--hash-slot-num",
            "40",
            "--index-num",
            "160",
        ]
        refused = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1 and f"pid {holder.pid}" in refused.stderr
        assert refused.stderr.count("\n") == 1 and not store.exists()
        started = time.monotonic()
        waited = subprocess.run([*cmd, "--wait", "60"], capture_output=True, text=True, timeout=120)
        assert waited.returncode == 0, waited.stderr
        assert holder.wait(30) == 0 and time.monotonic() - started > 0.5
    finally:
        holder.kill()
    with rmqarrow.open(store) as built:
        assert built.query("T", "k7") != []


@pytest.mark.slow
def test_export_and_import_wait_for_the_writer_of_their_output(tmp_path: Path) -> None:
    """``export --wait`` and ``import --wait`` wait for a real process writing their output;
    without it they stop in one line naming that process."""
    import subprocess
    import sys

    from golden_data import golden_set

    g = golden_set("rolling")
    geo = ["--hash-slot-num", str(g.hash_slot_num), "--index-num", str(g.index_num)]
    for target, cmd in (
        (tmp_path / "ds", ["export", str(g.store_dir), str(tmp_path / "ds"), *geo]),
        (tmp_path / "back", ["import", str(tmp_path / "ds"), str(tmp_path / "back")]),
    ):
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import time; from rmqarrow._lock import writer_lock\n"
                f"with writer_lock({str(target)!r}):\n"
                "    print('held', flush=True); time.sleep(3)\n",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            run = [sys.executable, "-m", "rmqarrow", *cmd]
            refused = subprocess.run(run, capture_output=True, text=True, timeout=120)
            assert refused.returncode == 1 and f"pid {holder.pid}" in refused.stderr
            waited = subprocess.run([*run, "--wait"], capture_output=True, text=True, timeout=120)
            assert waited.returncode == 0, waited.stderr
        finally:
            holder.kill()
    assert sorted(p.name for p in (tmp_path / "back").iterdir()) == sorted(g.files)
