"""The index checked against the log in Spark gives DuckDB's figures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from golden_data import GOLDEN
from rmqarrow.converters.duckdb.sql import check_against_log as duckdb_check
from rmqarrow.converters.duckdb.sql import connect

from rmqarrow.cli import main

pytestmark = pytest.mark.spark

INDEX = GOLDEN / "commitlog_store1"
LOG = GOLDEN / "commitlog" / "store1" / "commitlog"
GEOMETRY = {"hash_slot_num": 64, "index_num": 256}


def _stats(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert (
        main(
            [
                "stats",
                str(INDEX),
                "--commitlog",
                str(LOG),
                "--json",
                "--top",
                "3",
                "--hash-slot-num",
                "64",
                "--index-num",
                "256",
                *extra,
            ]
        )
        == 0
    )
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_stats_engine_spark_equals_duckdb(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    duck = _stats(capsys)
    dist = _stats(capsys, "--engine", "spark", "--master", "local[2]")
    assert dist["log_check"] == duck["log_check"]
    assert duck["log_check"]["messages"] == 300 and duck["log_check"]["dangling"] == 0
    assert dist.keys() == duck.keys()  # the other analyses are DuckDB's either way


def _both(spark: Any, index: Path, log: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    from rmqarrow.converters.spark.log_check import check_against_log
    from rmqarrow.converters.spark.tables import register_tables

    con = connect(index, commitlog=log, **GEOMETRY)
    try:
        duck = duckdb_check(con, examples=4)
    finally:
        con.close()
    register_tables(spark, index, commitlog=log, **GEOMETRY)
    return check_against_log(spark, examples=4), duck


def test_dangling_and_missing_equal_duckdb(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the log lost its first file (retention): the entries pointing there dangle
    short = tmp_path / "short"
    shutil.copytree(LOG, short)
    (short / "00000000000000000000").unlink()
    dist, duck = _both(spark, INDEX, short)
    assert dist == duck and duck["dangling"] > 0 and duck["missing"] == 0
    assert len(duck["dangling_examples"]) == 4
    # an index built from the second file on: the first file's keys are missing
    later = tmp_path / "later"
    assert (
        main(
            [
                "build",
                str(later),
                "--from-commitlog",
                str(LOG),
                "--start-offset",
                "65536",
                "--hash-slot-num",
                "64",
                "--index-num",
                "256",
            ]
        )
        == 0
    )
    capsys.readouterr()
    dist, duck = _both(spark, later, LOG)
    assert dist == duck and duck["missing"] > 0 and duck["dangling"] == 0


def test_engine_spark_needs_a_commitlog(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "stats",
                str(INDEX),
                "--engine",
                "spark",
                "--hash-slot-num",
                "64",
                "--index-num",
                "256",
            ]
        )
        == 2
    )
    assert "give --commitlog" in capsys.readouterr().err
    assert (
        main(
            [
                "stats",
                str(INDEX),
                "--master",
                "local[2]",
                "--hash-slot-num",
                "64",
                "--index-num",
                "256",
            ]
        )
        == 2
    )
    assert "--master needs --engine spark" in capsys.readouterr().err
