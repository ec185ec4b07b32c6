"""The input detector and the one time parser (rmqarrow.format.detect, .times)."""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import signal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from golden_data import golden_set

from rmqarrow._vocab import Kind
from rmqarrow.errors import StoreNotFoundError, UsageError
from rmqarrow.format.detect import (
    _file_kind,
    describe,
    detect,
    instead_of,
    require_commitlog,
    require_index_store,
)
from rmqarrow.format.times import format_time, parse_time

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def test_kinds(tmp_path: Path) -> None:
    assert detect(golden_set("basic").store_dir).kind == "index_dir"
    assert detect(golden_set("basic").store_dir / "00000").kind == "index_file"
    assert detect(GOLDEN / "commitlog" / "store1" / "commitlog").kind == "commitlog_dir"
    assert detect(tmp_path / "none").kind == "missing"
    (tmp_path / "empty").mkdir()
    assert detect(tmp_path / "empty").kind == "empty_dir"
    (tmp_path / "notes.txt").write_text("hello")
    assert detect(tmp_path / "notes.txt").kind == "other_file"
    pq.write_table(pa.table({"a": [1]}), tmp_path / "t.parquet")
    assert detect(tmp_path / "t.parquet").detail == "a Parquet file"
    tiered = tmp_path / "tiered"
    tiered.write_bytes((-1127939451).to_bytes(4, "big", signed=True) + bytes(100))
    assert detect(tiered).kind == "tiered"
    ds = tmp_path / "ds"
    (ds / "files").mkdir(parents=True)
    assert detect(ds).kind == "dataset"


def test_a_file_sized_like_an_index_file_is_one_only_with_a_header_that_can_be(
    tmp_path: Path,
) -> None:
    """A chart of 20,872 bytes (40 + 84 x 248, the 1:4 geometry's size) in a folder of its
    own: a PNG's magic bytes are no begin timestamp, so the folder is no index directory
    (it was, and `info` answered 0 entries with exit 0; a rerun of `stats --plot` into
    it was refused as an index directory).  A never-written file of that size still is."""
    charts = tmp_path / "plots"
    charts.mkdir()
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 82
    (charts / "time_coverage.png").write_bytes(png[: 40 + 84 * 248])
    assert (charts / "time_coverage.png").stat().st_size == 40 + 84 * 248
    assert detect(charts / "time_coverage.png").kind == "other_file"
    assert detect(charts).kind == "other_dir"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "index").write_bytes(bytes(40 + 84 * 248))  # a file RocketMQ made, never written
    assert detect(fresh / "index").kind == "index_file"


def test_broker_root_resolves_its_parts(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "store"
    (root / "index").mkdir(parents=True)
    (root / "commitlog").mkdir()
    (root / "checkpoint").write_bytes(bytes(16))
    t = detect(root)
    assert t.kind == "broker_root" and t.index_path == root / "index"
    with pytest.raises(UsageError, match="index/ directory is empty"):
        require_index_store(root)
    with pytest.raises(UsageError, match="no CommitLog files"):
        require_commitlog(root)
    (root / "commitlog" / ("0" * 20)).write_bytes(bytes(64))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rmqarrow"):
        assert require_commitlog(root) == root / "commitlog"
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and "broker store root" in notes[0]


def test_a_folder_above_stores_names_them(tmp_path: Path) -> None:
    # an operator pointing at the folder above the store: the line says which path to pass
    shutil.copytree(golden_set("basic").store_dir, tmp_path / "copy" / "store" / "index")
    shutil.copytree(golden_set("basic").store_dir, tmp_path / "two" / "a")
    shutil.copytree(golden_set("basic").store_dir, tmp_path / "two" / "b")
    (tmp_path / "two" / "notes.txt").write_text("x")
    one = detect(tmp_path / "copy")
    assert one.kind == "other_dir"
    assert (
        instead_of(one)
        == f"it holds {tmp_path / 'copy/store/index'} (a directory of index files): pass that"
    )
    assert describe(one).startswith("not a store itself; it holds ")
    two = instead_of(detect(tmp_path / "two"))
    assert two.endswith("(a directory of index files): pass one of these")
    assert f"{tmp_path / 'two/a'} (" in two and f"{tmp_path / 'two/b'} (" in two
    # more than three: the line says how many it leaves out
    for name in ("c", "d"):
        shutil.copytree(golden_set("basic").store_dir, tmp_path / "two" / name)
    assert instead_of(detect(tmp_path / "two")).endswith(
        "(a directory of index files) and 1 more: pass one of these"
    )
    # only one level down: a store two folders below is not searched for
    (tmp_path / "deep" / "x").mkdir(parents=True)
    shutil.copytree(golden_set("basic").store_dir, tmp_path / "deep" / "x" / "y" / "z")
    assert instead_of(detect(tmp_path / "deep")) == ""
    # detecting a folder reads none below it: only a message looks there
    assert detect(tmp_path / "copy").instead == ""
    with pytest.raises(UsageError, match=r"not a store itself; it holds .*: pass that$"):
        require_index_store(tmp_path / "copy")


def test_require_refuses_wrong_kinds(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        require_index_store(tmp_path / "none")
    with pytest.raises(UsageError, match="CommitLog directory"):
        require_index_store(GOLDEN / "commitlog" / "store1" / "commitlog")
    with pytest.raises(UsageError, match="index files, not a CommitLog"):
        require_commitlog(golden_set("basic").store_dir)


def test_parse_time_forms() -> None:
    assert parse_time("1768474024092") == 1768474024092
    assert parse_time("0") == 0 and parse_time(str(2**63 - 1)) == 2**63 - 1
    assert parse_time("2026-01-15T10:47:04.092Z") == 1768474024092
    assert parse_time("2026-01-15T18:47:04.092+08:00") == 1768474024092
    local = dt.datetime(2026, 1, 15, 10, 47, 4).astimezone()
    assert parse_time("2026-01-15T10:47:04") == int(local.timestamp() * 1000)
    assert format_time(1768474024092) == "2026-01-15T10:47:04.092Z"


@pytest.mark.parametrize(
    "text,match",
    [
        ("1768474024", "epoch seconds"),
        ("1,768,474,024,092", "thousands separators"),
        ("tomorrow", "ISO 8601"),
        ("", "ISO 8601"),
    ],
)
def test_parse_time_refusals(text: str, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        parse_time(text, "--begin")


def test_a_pipe_or_an_empty_file_is_classified_without_reading_it(tmp_path: Path) -> None:
    # opening a pipe blocks until a writer comes, and reading some of /proc's empty-sized
    # files blocks too: neither is opened, so a folder holding one is detected at once
    pipe = tmp_path / "00000"
    os.mkfifo(pipe)
    (tmp_path / "empty").write_bytes(b"")
    signal.alarm(20)  # a regression hangs: fail it instead
    try:
        assert _file_kind(pipe)[:2] == (Kind.OTHER_FILE, "not a regular file")
        assert _file_kind(tmp_path / "empty")[0] == Kind.OTHER_FILE
        assert detect(tmp_path).kind == "other_dir"
    finally:
        signal.alarm(0)
