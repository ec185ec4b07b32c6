"""The command line on tiered files: what an operator types, and their usual mistakes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_run import call
from tiered_golden_data import TIERED, TieredSet

from rmqarrow.cli import main
from rmqarrow.tiered import segment_file_name

COLL = TieredSet("tiered_collisions")


def broker(tmp_path: Path, ts: TieredSet = COLL) -> Path:
    root = tmp_path / "store"
    (root / "tiered_index_file").mkdir(parents=True)
    shutil.copyfile(ts.dir / "unsealed.bin", root / "tiered_index_file" / str(ts.file_timestamp))
    return root


def test_info_both_forms_and_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(COLL.dir / "unsealed.bin"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["hash_slot_num"], info["index_num"], info["item_count"]) == (16, 1600, 1288)
    assert main(["info", str(COLL.dir / "compacted.bin"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == 1288
    assert main(["info", str(broker(tmp_path))]) == 0
    assert "1 tiered index files" in capsys.readouterr().out


def test_query_matches_golden_and_exact(capsys: pytest.CaptureFixture[str]) -> None:
    q = COLL.queries[0]
    want = COLL.expected["unsealed"][0].items
    assert (
        main(
            [
                "query",
                str(COLL.dir / "unsealed.bin"),
                "--topic",
                q.topic,
                "--key",
                q.key,
                "--max-num",
                str(q.max_count),
                "--json",
            ]
        )
        == 0
    )
    got = json.loads(capsys.readouterr().out)["items"]
    assert [(g["queue_id"], g["offset"]) for g in got] == [(w[2], w[3]) for w in want]
    # the file's begin timestamp (header; the name is not numeric) decodes the seconds
    assert [g["store_timestamp"] for g in got] == [COLL.file_timestamp + 1000 * w[5] for w in want]
    assert (
        main(
            [
                "query",
                str(COLL.dir / "unsealed.bin"),
                "--key",
                f"{q.topic}#{q.key}",
                "--max-num",
                str(q.max_count),
                "--exact",
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    assert f"{len(want)} items for {q.topic}#{q.key} (exact)" in out.out
    assert "RocketMQ's own lookup returns 4 (the same items)" in out.err


def test_query_notes_the_uploaded_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "query",
                str(COLL.dir / "unsealed.bin"),
                "--topic",
                "TopicC",
                "--key",
                "Aa",
                "--max-num",
                "3",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "once this file is uploaded, RocketMQ answers 3 items" in err


def test_batch_query_with_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tiered_golden_data import unescape

    lines = (COLL.dir / "queries.tsv").read_text().splitlines()[:20]
    tsv = tmp_path / "q.tsv"
    tsv.write_text(
        "".join(
            "\t".join([f"{unescape(t)}#{unescape(k)}", m, b, e]) + "\n"
            for t, k, m, b, e in (x.split("\t") for x in lines)
        )
    )
    outs = []
    for engine in ("native", "duckdb"):
        assert (
            main(
                [
                    "query",
                    str(COLL.dir / "compacted.bin"),
                    "--queries",
                    str(tsv),
                    "--engine",
                    engine,
                    "--json",
                ]
            )
            == 0
        )
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1] and len(outs[0]["answers"]) == 20


def test_export_import_check_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = broker(tmp_path)
    shutil.copyfile(COLL.dir / "compacted.bin", root / segment_file_name(0))
    assert main(["export", str(root), str(tmp_path / "ds"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tiered_items"] == 2 * 1288
    assert main(["import", str(tmp_path / "ds"), str(tmp_path / "back")]) == 0
    capsys.readouterr()
    for p in root.rglob("*"):
        if p.is_file():
            assert (tmp_path / "back" / p.relative_to(root)).read_bytes() == p.read_bytes()
    assert (
        main(
            [
                "verify",
                str(COLL.dir / "unsealed.bin"),
                "--engines",
                "native,duckdb",
                "--sample",
                "30",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "OK: every engine agrees" in out and "local vs uploaded form" in out
    assert main(["check", str(root)]) == 0
    assert "2 tiered files checked: all ok" in capsys.readouterr().out


def test_operator_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = str(COLL.dir / "unsealed.bin")
    # a bare key without its topic
    assert main(["query", f, "--key", "Aa"]) == 2
    assert "topic#key" in capsys.readouterr().err
    # --resolve is for the classic CommitLog
    assert main(["query", f, "--key", "T#a", "--resolve", str(tmp_path)]) == 2
    assert "tiered commit log" in capsys.readouterr().err
    # a wrong geometry
    assert main(["info", f, "--hash-slot-num", "17", "--index-num", "1600"]) == 1
    assert "28 + 8*S + 32*N" in capsys.readouterr().err
    # a compacted file opened with another S
    assert main(["info", str(COLL.dir / "compacted.bin"), "--hash-slot-num", "100"]) == 2
    assert "S=16" in capsys.readouterr().err
    # exporting into a folder that holds something else, then over an existing dataset
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "notes.txt").write_text("mine")
    assert main(["export", f, str(tmp_path / "ds")]) == 1
    assert "not an rmqarrow dataset" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "ds").iterdir()] == ["notes.txt"]
    assert main(["export", f, str(tmp_path / "ds2")]) == 0
    capsys.readouterr()
    assert main(["export", f, str(tmp_path / "ds2")]) == 1
    assert "already" in capsys.readouterr().err
    # a tiered dataset where index files are expected
    assert main(["export", f, str(tmp_path / "tds")]) == 0
    capsys.readouterr()
    assert main(["query", str(tmp_path / "tds"), "--key", "T#k"]) == 2
    assert "--engine duckdb" in capsys.readouterr().err
    assert (
        main(["query", str(tmp_path / "tds"), "--key", "TopicC#Aa", "--engine", "duckdb", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["items"]
    assert main(["info", str(tmp_path / "tds"), "--json"]) == 0  # its manifest
    assert json.loads(capsys.readouterr().out)["tables"]["tiered_items"]["rows"] > 0
    assert main(["info", str(tmp_path / "tds")]) == 0
    assert "tiered_items" in capsys.readouterr().out
    # a truncated local file: geometry can no longer be told
    cut = tmp_path / "cut"
    cut.write_bytes((COLL.dir / "unsealed.bin").read_bytes()[:-4])
    assert main(["info", str(cut)]) == 2
    assert "--hash-slot-num" in capsys.readouterr().err


def test_damaged_header_is_one_line_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "1700000000000"
    data = bytearray((TIERED / "tiered_basic" / "unsealed.bin").read_bytes())
    data[24:28] = (10**6).to_bytes(4, "big")  # itemCount out of range
    bad.write_bytes(bytes(data))
    r = call("query", str(bad), "--key", "T#k", "--hash-slot-num", "100", "--index-num", "400")
    assert r.status == 1 and "Traceback" not in r.err
    assert "itemCount 1000000 outside" in r.err
