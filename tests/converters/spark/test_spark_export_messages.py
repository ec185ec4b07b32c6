"""``export --engine spark --commitlog``: the messages table, a task and a part per file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from golden_data import GOLDEN
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA
from rmqarrow.converters.parquet.manifest import check_parts, read_manifest

from rmqarrow.cli import main

pytestmark = pytest.mark.spark

STORE1 = GOLDEN / "commitlog" / "store1"
GEOMETRY = ["--hash-slot-num", "64", "--index-num", "256"]


def _messages(dataset: Path) -> pa.Table:
    parts = sorted((dataset / "messages").glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(p) for p in parts])
    assert table.schema.equals(MESSAGES_SCHEMA)
    return table.sort_by("physical_offset")


def test_messages_equal_the_local_export(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index, log = GOLDEN / "commitlog_store1", STORE1 / "commitlog"
    local, dist = tmp_path / "local", tmp_path / "spark"
    assert main(["export", str(index), str(local), "--commitlog", str(log), *GEOMETRY]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "export",
                str(index),
                str(dist),
                "--commitlog",
                str(log),
                *GEOMETRY,
                "--engine",
                "spark",
                "--master",
                "local[2]",
                "--json",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["messages"] == 300
    files = sorted(p.name for p in log.iterdir())
    assert len(list((dist / "messages").glob("*.parquet"))) == len(files) > 1
    assert _messages(dist).equals(_messages(local))
    assert read_manifest(dist)["tables"]["messages"] == read_manifest(local)["tables"]["messages"]
    check_parts(dist, full=True)  # the parts are listed and checksummed in the manifest
    for table in ("files", "slots", "entries"):  # the index tables as before
        assert pq.read_table(dist / table).equals(pq.read_table(local / table))


def test_missing_commitlog_is_one_line(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "export",
            str(GOLDEN / "commitlog_store1"),
            str(tmp_path / "out"),
            "--commitlog",
            str(tmp_path / "nope"),
            *GEOMETRY,
            "--engine",
            "spark",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert status != 0 and "\n" not in err and "nope" in err, err
    assert not (tmp_path / "out").exists()
