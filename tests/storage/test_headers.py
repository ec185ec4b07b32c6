"""``check``/``info`` findings: headers RocketMQ's reader misreads, entries of a store
directory that are no index file, and CommitLog damage reported as CommitLog damage."""

from __future__ import annotations

import logging
import os
import shutil
import struct
from pathlib import Path

import pytest

from rmqarrow.format.java import JAVA_LONG_MAX, JAVA_LONG_MIN
from rmqarrow.format.layout import GeometryHint
from rmqarrow.format.naming import is_index_file_name, list_index_files, stray_entries
from rmqarrow.format.records import MessageRecord
from rmqarrow.index.health import store_health
from rmqarrow.index.service import IndexService, open_healthy
from rmqarrow.verify.fsck import check_store, damage_summary

T0 = 1_700_000_000_000
GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _store(path: Path) -> list[Path]:
    with IndexService(path, 16, 64) as svc:
        for i in range(100):
            svc.build_index(MessageRecord("T", f"k{i % 7}", f"u{i}", 1000 + 100 * i, T0 + 1500 * i))
    return list_index_files(path)


def _answer(store: Path, begin: int = 0, end: int = JAVA_LONG_MAX) -> list[int]:
    with IndexService(store, 16, 64, read_only=True) as svc:
        svc.load()
        return svc.query_offset("T", "k3", 100, begin, end).phy_offsets


def _set(path: Path, field: int, value: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(field)
        fh.write(struct.pack(">q", value))


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        (0, JAVA_LONG_MAX, "beginTimestamp 9223372036854775807 is at the end of the long range"),
        (0, JAVA_LONG_MIN, "is before 1970"),
        (0, -5, "reads no older file"),
        (8, JAVA_LONG_MAX, "endTimestamp 9223372036854775807 is at the end of the long range"),
        (8, JAVA_LONG_MIN, "endTimestamp -9223372036854775808 is before 1970"),
        (24, -1, "negative CommitLog offset"),
    ],
)
def test_impossible_header_values_are_bad_headers(
    tmp_path: Path, field: int, value: int, says: str
) -> None:
    """Values no RocketMQ file holds: ``bad header``, skipped by readers, which then read
    the other files (a reader that took the file as RocketMQ does would lose them)."""
    files = _store(tmp_path / "s")
    _set(files[1], field, value)
    health = store_health(tmp_path / "s")
    assert [f.status for f in health.files] == ["ok", "bad header", "ok", "ok"]
    assert says in health.files[1].detail
    assert health.files[1].skipped_by_readers and not health.ok
    service, _ = open_healthy(tmp_path / "s")
    with service:
        assert [f.path for f in service.files] == [files[0], *files[2:]]


def test_begin_after_end_is_flagged_and_still_read(tmp_path: Path) -> None:
    """A clock step back leaves begin after end; RocketMQ's isTimeMatched then skips the
    file for ranges starting inside it: check says so, readers still read it as RocketMQ."""
    files = _store(tmp_path / "s")
    with open(files[1], "rb") as fh:
        _, end = struct.unpack(">qq", fh.read(16))
    full, narrow = _answer(tmp_path / "s"), _answer(tmp_path / "s", T0 + 60_000, T0 + 90_000)
    assert narrow  # entries of the second file lie in that range
    _set(files[1], 0, end + 1_000_000)
    health = store_health(tmp_path / "s")
    assert [f.status for f in health.files] == ["ok", "misread header", "ok", "ok"]
    assert "start before its begin and end after its end" in health.files[1].detail
    assert not health.files[1].skipped_by_readers and not health.ok
    assert [f.path for f in health.healthy] == files
    # what the finding announces: the full range still reads it, the narrow one misses it
    assert _answer(tmp_path / "s") == full
    assert _answer(tmp_path / "s", T0 + 60_000, T0 + 90_000) == []
    assert "header RocketMQ misreads" in damage_summary(health.damaged, len(health.files))
    checked, _ = check_store(tmp_path / "s")
    assert checked.files[1].status == "misread header"


def test_offsets_out_of_order_are_flagged_and_still_read(tmp_path: Path) -> None:
    """IndexFile.putKey takes offsets in any order, so begin after end is a file RocketMQ
    can write and its lookup reads as usual: flagged, never skipped."""
    files = _store(tmp_path / "s")
    full = _answer(tmp_path / "s")
    _set(files[1], 16, 10**12)
    health = store_health(tmp_path / "s")
    assert [f.status for f in health.files] == ["ok", "misread header", "ok", "ok"]
    assert "beginPhyOffset 1000000000000 after endPhyOffset" in health.files[1].detail
    assert not health.files[1].skipped_by_readers
    assert _answer(tmp_path / "s") == full


def test_java_long_names() -> None:
    """``Long.parseLong``: sign, Unicode decimal digits of one UTF-16 unit, the long range."""
    for name in ["20240301000000000", "0", "+7", "-3", "\u0663\u0664", "9223372036854775807"]:
        assert is_index_file_name(name), name
    for name in [
        "",
        "+",
        "-",
        "x.bak",
        "2024.bak",
        " 1",
        "1_000",
        "9223372036854775808",
        "\U0001d7ce",
        ".1",
        "1e3",
    ]:
        assert not is_index_file_name(name), name


def test_store_entries_that_are_no_index_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Directories, FIFOs and dangling symlinks named like index files, files named
    otherwise: never loaded, each named once in a warning and as a finding of check."""
    store = tmp_path / "s"
    files = _store(store)
    shutil.copy(files[0], store / "20240101000000000.bak")
    (store / "20230101000000000").mkdir()
    os.mkfifo(store / "20230101000000001")
    os.symlink(tmp_path / "gone", store / "20230101000000002")
    os.symlink(files[1], store / "20230101000000003")  # a symlink to a file is loaded
    (store / ".rmqarrow-staging").mkdir()  # rmqarrow's own hidden entries: silent
    expected = [
        "20230101000000000",
        "20230101000000001",
        "20230101000000002",
        "20240101000000000.bak",
    ]
    with caplog.at_level(logging.WARNING, logger="rmqarrow"):
        loaded = list_index_files(store)
        list_index_files(store)  # a second listing does not repeat the warnings
    assert [p.name for p in loaded] == ["20230101000000003", *(p.name for p in files)]
    warned = [r.getMessage() for r in caplog.records if r.name == "rmqarrow.format.naming"]
    assert len(warned) == 4
    assert all(any(w.startswith(f"{store / n}: ") for w in warned) for n in expected)
    kinds = {e.path.name: e.kind for e in stray_entries(store)}
    assert kinds == {
        "20230101000000000": "directory",
        "20230101000000001": "FIFO",
        "20230101000000002": "dangling symlink",
        "20240101000000000.bak": "file",
    }
    health, _ = check_store(store)
    assert [f.name for f in health.strays] == expected
    assert all(f.status == "not an index file" and f.skipped_by_readers for f in health.strays)
    assert "RocketMQ's load fails on it" in health.strays[0].detail
    assert "create its target" in health.strays[2].detail
    assert not health.damaged  # the index files themselves are healthy
    # but the directory, FIFO and dangling symlink named like index files stop RocketMQ's
    # load (or make it create a file): the store is not ok; the *.bak alone would be
    assert [f.name for f in health.blocking] == expected[:3] and not health.ok
    assert {d["name"]: d["status"] for d in (f.to_dict() for f in health.files)}[
        "20240101000000000.bak"
    ] == "not an index file"
    with IndexService(store, 16, 64, read_only=True) as svc:
        svc.load()
        assert len(svc.files) == len(files) + 1
    # the symlink gives a later file an earlier name: a time-ranged lookup stops before it
    assert [f.name for f in health.misordered] == ["20230101000000003"]
    for name in [*expected[:3], "20230101000000003"]:
        p = store / name
        p.rmdir() if p.is_dir() and not p.is_symlink() else p.unlink()
    assert check_store(store)[0].ok  # a stray *.bak: named, not blocking


def test_commitlog_damage_is_reported_as_commitlog_damage(tmp_path: Path) -> None:
    """A bad record in the CommitLog: one finding naming the CommitLog file and offset; the
    index entries pointing into the unread rest are unverified, not dangling."""
    log = tmp_path / "commitlog"
    shutil.copytree(GOLDEN / "commitlog" / "store1" / "commitlog", log)
    shutil.copytree(GOLDEN / "commitlog_store1", tmp_path / "idx")
    health, _ = check_store(tmp_path / "idx", GeometryHint(64, 256), commitlog=log)
    assert health.ok
    first = sorted(log.iterdir())[0]
    with open(first, "r+b") as fh:  # the second record's magic code
        fh.seek(217 + 4)
        fh.write(b"\xda\xa3\x21\xa7")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw warning escapes the check
        health, chains = check_store(tmp_path / "idx", GeometryHint(64, 256), commitlog=log)
    (log_finding,) = health.damaged
    assert log_finding.path == first and log_finding.status == "damaged CommitLog"
    assert "physical offset 217: bad magic code" in log_finding.detail
    assert all(f.ok for f in health.files if f.path.parent.name == "idx")
    assert sum(c.dangling for c in chains.values()) == 0
    assert sum(c.unverified for c in chains.values()) > 0
    assert "damaged spot(s) in the CommitLog" in damage_summary(health.damaged, len(health.files))


def test_out_of_range_slot_heads_check_and_export_agree(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """check says export still reads a file whose slot heads are out of range; export does,
    with those slots empty as RocketMQ reads them (a note names the file), instead of
    refusing the whole store."""
    import pyarrow.parquet as pq
    from rmqarrow.converters.parquet.export import export_store

    files = _store(tmp_path / "s")
    with open(files[1], "r+b") as fh:
        fh.seek(40 + 4 * 3)
        fh.write(struct.pack(">i", 5000))
        fh.seek(40 + 4 * 5)
        fh.write(struct.pack(">i", -7))
    health, _ = check_store(tmp_path / "s")
    assert [f.status for f in health.files] == ["ok", "damaged chains", "ok", "ok"]
    assert "pointers out of range" in health.files[1].detail
    assert not health.files[1].skipped_by_readers
    summary = damage_summary(health.damaged, len(health.files))
    assert "query and export still read the 1 with damaged chains" in summary
    with caplog.at_level(logging.WARNING, logger="rmqarrow"):
        export_store(tmp_path / "s", tmp_path / "ds", hash_slot_num=16, index_num=64)
    assert any(
        files[1].name in r.getMessage() and "2 slot heads outside 1..63" in r.getMessage()
        for r in caplog.records
    )
    slots = pq.read_table(tmp_path / "ds" / "slots").to_pydict()
    damaged = {
        s: h
        for n, s, h in zip(slots["file_name"], slots["slot"], slots["head"], strict=True)
        if n == files[1].name
    }
    assert 3 not in damaged and 5 not in damaged and damaged  # empty there, the rest kept
    assert len(set(slots["file_name"])) == len(files)


def test_cli_names_stray_entries_and_refuses_non_utf8_keys_alike(tmp_path: Path) -> None:
    """The command line: check's JSON lists the stray entries with their status, a warning
    line names each; a --key holding byte 0xFF is one error line in every engine."""
    import json

    from storage.storage_helpers import cli

    store = tmp_path / "s"
    files = _store(store)
    shutil.copy(files[0], store / "x.bak")
    (store / "20200101000000000").mkdir()
    done = cli("check", store, "--json")
    assert done.returncode == 1, done.stderr  # the directory would stop the broker's load
    doc = json.loads(done.stdout)
    assert doc["ok"] is False
    status = {f["name"]: f["status"] for f in doc["files"]}
    assert status["x.bak"] == status["20200101000000000"] == "not an index file"
    assert sum(f["status"] == "ok" for f in doc["files"]) == len(files)
    warned = [ln for ln in done.stderr.splitlines() if "not loaded" in ln]
    assert len(warned) == 2 and any(str(store / "x.bak") in ln for ln in warned)
    raw = os.fsdecode(b"T#k\xff")
    for engine in ("native", "duckdb"):
        done = cli("query", store, "--key", raw, "--engine", engine)
        assert done.returncode == 1
        errors = [ln for ln in done.stderr.splitlines() if "error" in ln]
        assert len(errors) == 1 and "holds the byte 0xFF at byte 3" in errors[0], done.stderr
        assert "Traceback" not in done.stderr and "bug" not in done.stderr
