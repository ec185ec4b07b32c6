"""The commands on a RocksDB message index, and the broker's directory after every read
command: byte for byte as it was, also while a writer process holds the database."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from json_shapes import shaped
from rocksdb_golden_data import ALL_ROCKSDB
from rocksdb_live import Writer, damaged, lock_holders, make_db, snapshot

from rmqarrow.cli import main

EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")
WINDOW = ["--begin", "1749117600000", "--end", "1749290400000"]
LIMITS = ["--max-query-days", "2", "--max-msgs-num-batch", "16"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_query_answers_as_rocketmq(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys,
        "query",
        str(EDGE.db),
        "--topic",
        "EdgeTopic",
        "--key",
        "first",
        "--type",
        "K",
        *WINDOW,
        *LIMITS,
        "--json",
    )
    doc = json.loads(out)
    assert status == 0 and doc["phy_offsets"] == [0] and doc["last_update_phy_offset"] == 22100
    # one millisecond past the two days: RocketMQ refuses, and --explain says why
    status, out, _ = run(
        capsys,
        "query",
        str(EDGE.db),
        "--topic",
        "EdgeTopic",
        "--key",
        "first",
        "--begin",
        "1749117600000",
        "--end",
        "1749290400001",
        *LIMITS,
        "--explain",
    )
    assert status == 0 and "RocketMQ returns null" in out and "longer than" in out


def test_query_file_in_the_golden_format(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "query", str(EDGE.db), "--queries", str(EDGE.dir / "queries.tsv"), *LIMITS
    )
    expected = (EDGE.dir / "expected.tsv").read_text().splitlines()
    got = out.splitlines()
    assert status == 0 and len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        fields = e.split("\t")
        want = "null" if fields[1] == "null" else "\t".join(["ok", fields[2], fields[4], fields[5]])
        assert g == f"{fields[0]}\t{want}"


def test_build_check_export_sql(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from rmqarrow.commitlog.writer import Message, write_commitlog

    root = tmp_path / "store"
    write_commitlog(
        root / "commitlog",
        [
            Message(
                topic="T",
                keys="a b",
                tags="TagA",
                uniq_key=f"ID{i}",
                body=b"x",
                store_timestamp=1_749_128_400_000 + i * 60_000,
            )
            for i in range(20)
        ],
    )
    status, out, _ = run(
        capsys, "build", str(root), "--from-commitlog", str(root), "--index", "rocksdb", "--json"
    )
    assert status == 0 and shaped(out, "build.rocksdb")["records"] == 20 * 4
    assert (root / "rocksdbstore" / "CURRENT").is_file()
    status, out, _ = run(capsys, "check", str(root), "--json")
    doc = shaped(out, "check.rocksdb")
    assert status == 0 and doc["ok"] and doc["commitlog_span"] is not None
    first, last = doc["commitlog_span"]
    status, out, _ = run(capsys, "check", str(root))
    assert status == 0 and f"commitlog_span        {first} .. {last}\n" in out
    status, out, _ = run(capsys, "check", str(root / "rocksdbstore"))
    assert status == 0 and "commitlog_span        not compared (no CommitLog beside" in out
    status, out, _ = run(capsys, "export", str(root), str(tmp_path / "ds"), "--json")
    assert status == 0 and shaped(out, "export.rocksdb")["records"] == 80
    status, out, _ = run(
        capsys,
        "sql",
        str(tmp_path / "ds"),
        "SELECT key AS tag, count(*) AS n FROM rocksdb_records WHERE type = 'T' GROUP BY key",
        "--json",
    )
    assert status == 0 and json.loads(out)["rows"] == [{"tag": "TagA", "n": 20}]
    status, out, _ = run(
        capsys, "stats", str(root), "--json", "--between", "1749128400000", "1749128460000"
    )
    assert status == 0 and len(shaped(out, "stats.rocksdb")["between"]) == 2 * 4
    report = tmp_path / "r.html"  # the page draws IndexFile analyses: refused, not ignored
    status, _, err = run(capsys, "stats", str(root), "--html", str(report))
    assert status == 2 and not report.exists()
    assert "a RocksDB index's stats print as tables" in err and len(err.splitlines()) == 1
    # nor is a CommitLog or another engine ignored: the records hold what a log would add
    status, _, err = run(capsys, "stats", str(root), "--commitlog", str(root / "commitlog"))
    assert status == 2 and "records already hold topic, keys and tags" in err
    status, _, err = run(capsys, "stats", str(root), "--engine", "spark")
    assert status == 2 and "figures are DuckDB's, got engine 'spark'" in err
    status, out, _ = run(
        capsys,
        "verify",
        str(root),
        "--engines",
        "native,duckdb",
        "--dataset",
        str(tmp_path / "ds"),
        "--json",
    )
    assert status == 0 and json.loads(out)["ok"]


def test_a_root_with_both_indexes_reads_indexfiles_unless_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "store"
    shutil.copytree(EDGE.db, root / "rocksdbstore")
    (root / "index").mkdir()
    (root / "commitlog").mkdir()
    status, _, err = run(capsys, "info", str(root))
    assert status == 2 and "index/ directory is empty" in err
    status, out, _ = run(capsys, "info", str(root), "--index", "rocksdb", "--json")
    assert status == 0 and json.loads(out)["last_offset_py"] == 22100


def test_check_reports_damage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    damaged(tmp_path / "db")
    status, out, _ = run(capsys, "check", str(tmp_path / "db"))
    assert status == 1 and "hour_mismatch" in out and "bookkeeping_behind" in out


def test_read_commands_leave_a_live_broker_directory_untouched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "store" / "rocksdbstore"
    make_db(db, 40)
    writer = Writer(db, 40)
    try:
        writer.send("w 25")
        before = snapshot(db)
        root = str(db.parent)
        for argv in (
            ["info", root],
            [
                "query",
                root,
                "--topic",
                "T",
                "--key",
                "k1",
                "--begin",
                "1749128400000",
                "--end",
                "1749132000000",
            ],
            ["check", root],
            ["export", root, str(tmp_path / "ds")],
            ["verify", root, "--engines", "native,duckdb", "--sample", "50"],
            ["sql", root, "SELECT count(*) FROM rocksdb_records"],
            ["stats", root],
        ):
            status, out, err = run(capsys, *argv)
            assert status == 0, (argv, err)
            assert snapshot(db) == before, argv
            assert lock_holders(db) == {writer.proc.pid}
        status, out, _ = run(
            capsys, "sql", root, "SELECT count(*) AS n FROM rocksdb_records", "--json"
        )
        assert json.loads(out)["rows"] == [{"n": 40 * 2 + 25}]  # the writer's WAL included
        writer.send("w 5")
    finally:
        writer.stop()


def test_a_query_without_a_time_range_names_the_window_it_searched(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # RocketMQ searches maxRocksDBIndexQueryDays back from now: an index of 2025 answers
    # nothing then, and the line says why and what to pass
    args = ["query", str(EDGE.db), "--topic", "EdgeTopic", "--key", "first", "--type", "K"]
    status, out, _ = run(capsys, *args, *LIMITS)
    assert status == 0 and "\n0 offsets for 'EdgeTopic' / 'first'" in out
    assert "searched the last 2 days up to now, as RocketMQ does without a time range" in out
    assert "pass --begin and --end to search older hours" in out
    status, out, _ = run(capsys, *args, *WINDOW, *LIMITS)
    assert status == 0 and "searched the last" not in out and "0 offsets" not in out
