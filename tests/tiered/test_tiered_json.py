"""The commands' ``--json`` / ``--jsonl`` on tiered index files, validated against the
schemas ``rmqarrow schema COMMAND`` publishes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_run import run
from json_shapes import shaped, shaped_lines
from tiered_golden_data import TieredSet, unescape

from rmqarrow.tiered import segment_file_name

COLL = TieredSet("tiered_collisions")


def test_every_command_prints_its_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    unsealed, compacted = str(COLL.dir / "unsealed.bin"), str(COLL.dir / "compacted.bin")
    root = tmp_path / "store"
    (root / "tiered_index_file").mkdir(parents=True)
    shutil.copyfile(unsealed, root / "tiered_index_file" / str(COLL.file_timestamp))
    shutil.copyfile(compacted, root / segment_file_name(0))
    for one in (unsealed, compacted):
        status, out, _ = run(capsys, "info", one, "--json")
        assert status == 0 and shaped(out, "info.tiered-file")["form"]
        status, out, _ = run(capsys, "info", one, "--jsonl")
        assert shaped_lines(out, "info.tiered-file")
    status, out, _ = run(capsys, "info", str(root), "--json")
    files = shaped(out, "info.tiered-store")["files"]
    assert status == 0 and len(files) == 1  # the uploaded segment replaces the local file
    status, out, _ = run(capsys, "info", str(root), "--jsonl")
    assert shaped_lines(out, "info.tiered-store") == files
    status, out, _ = run(capsys, "query", unsealed, "--key", "TopicC#Aa", "--json")
    assert status == 0 and shaped(out, "query.tiered")["items"]
    status, out, _ = run(capsys, "query", unsealed, "--key", "TopicC#Aa", "--exact", "--json")
    assert status == 0 and "rocketmq_items" in shaped(out, "query.tiered")
    lines = (COLL.dir / "queries.tsv").read_text().splitlines()[:5]
    tsv = tmp_path / "q.tsv"
    tsv.write_text(
        "".join(
            "\t".join([f"{unescape(t)}#{unescape(k)}", m, b, e]) + "\n"
            for t, k, m, b, e in (x.split("\t") for x in lines)
        )
    )
    status, out, _ = run(capsys, "query", compacted, "--queries", str(tsv), "--json")
    answers = shaped(out, "query.tiered-batch")["answers"]
    assert status == 0 and len(answers) == 5
    status, out, _ = run(capsys, "query", compacted, "--queries", str(tsv), "--jsonl")
    assert shaped_lines(out, "query.tiered-batch") == answers
    status, out, _ = run(capsys, "check", str(root), "--json")
    assert status == 0 and shaped(out, "check.tiered")["ok"] is True
    status, out, _ = run(capsys, "export", str(root), str(tmp_path / "ds"), "--json")
    assert status == 0 and shaped(out, "export.tiered")["tiered_items"] == 2 * 1288
    status, out, _ = run(capsys, "info", str(tmp_path / "ds"), "--json")
    assert status == 0 and shaped(out, "info.tiered-dataset")["tables"]
    status, out, _ = run(capsys, "import", str(tmp_path / "ds"), str(tmp_path / "b"), "--json")
    assert status == 0 and shaped(out, "import.tiered")["files"] == 2
    status, out, _ = run(
        capsys, "verify", unsealed, "--engines", "native,duckdb", "--sample", "10", "--json"
    )
    assert status == 0 and shaped(out, "verify.tiered")["ok"] is True
