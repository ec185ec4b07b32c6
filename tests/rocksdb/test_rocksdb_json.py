"""The commands' ``--json`` / ``--jsonl`` on a RocksDB index, validated against the schemas
``rmqarrow schema COMMAND`` publishes."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run
from json_shapes import shaped, shaped_lines
from rocksdb_live import T0, make_db

WINDOW = ["--begin", str(T0 - 1000), "--end", str(T0 + 3_600_000)]


def test_every_command_prints_its_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "db"
    make_db(db, 40)
    status, out, _ = run(capsys, "info", str(db), "--json")
    assert status == 0 and shaped(out, "info.rocksdb")["path"] == str(db)
    status, out, _ = run(capsys, "info", str(db), "--jsonl")
    assert shaped_lines(out, "info.rocksdb")
    key = ["--topic", "T", "--key", "k1", *WINDOW]
    status, out, _ = run(capsys, "query", str(db), *key, "--json")
    assert status == 0 and len(shaped(out, "query.rocksdb")["phy_offsets"]) == 6
    status, out, _ = run(capsys, "query", str(db), *key, "--json", "--explain")
    assert shaped(out, "query.rocksdb")["explain"]
    status, out, _ = run(capsys, "query", str(db), "--topic", "T", "--key", "k1", "--json")
    assert status == 0 and shaped(out, "query.rocksdb")["result"] in ("ok", "null")
    tsv = tmp_path / "q.tsv"
    tsv.write_text(
        "".join(f"T\tk{i}\tK\t64\t{T0 - 1000}\t{T0 + 3_600_000}\t\\N\n" for i in range(3)),
        encoding="utf-8",
    )
    status, out, err = run(capsys, "query", str(db), "--queries", str(tsv), "--json")
    answers = shaped(out, "query.rocksdb-batch")["answers"]
    assert status == 0 and len(answers) == 3, err
    status, out, _ = run(capsys, "query", str(db), "--queries", str(tsv), "--jsonl")
    assert shaped_lines(out, "query.rocksdb-batch") == answers
    status, out, _ = run(capsys, "check", str(db), "--json")
    assert status == 0 and shaped(out, "check.rocksdb")["ok"] is True
    status, out, _ = run(capsys, "stats", str(db), "--json")
    assert status == 0 and shaped(out, "stats.rocksdb")
    status, out, _ = run(capsys, "export", str(db), str(tmp_path / "ds"), "--json")
    assert status == 0 and shaped(out, "export.rocksdb")["records"] > 0
    status, out, _ = run(capsys, "check", str(tmp_path / "ds"), "--json")
    assert status == 0 and shaped(out, "check.rocksdb-dataset")["ok"] is True
    status, out, _ = run(capsys, "info", str(tmp_path / "ds"), "--json")
    assert status == 0 and shaped(out, "info.rocksdb")
    lake = ["--dataset", str(tmp_path / "ds")]
    status, out, _ = run(capsys, "verify", str(db), "--engines", "native,duckdb", *lake, "--json")
    assert status == 0 and shaped(out, "verify.rocksdb")["ok"] is True
