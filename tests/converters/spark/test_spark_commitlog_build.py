"""The CommitLog's index records on Spark and ``build --from-commitlog --engine spark``.

Spark decodes each CommitLog file in its own task; the index built on the driver from the
records in log order must equal the local rebuild byte for byte.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rmqarrow.cli import main
from rmqarrow.commitlog import INDEX_RECORDS_SCHEMA, index_records

pytestmark = pytest.mark.spark

GOLDEN_LOG = Path(__file__).parents[2] / "golden" / "commitlog" / "store1" / "commitlog"


def _logs(generated: Any) -> list[tuple[Path, list[str]]]:
    """The golden log and the generated multi-file log, with their index geometry."""
    return [
        (GOLDEN_LOG, ["--hash-slot-num", "64", "--index-num", "256"]),
        (
            generated.root / "commitlog",
            [
                "--hash-slot-num",
                str(generated.hash_slot_num),
                "--index-num",
                str(generated.index_num),
            ],
        ),
    ]


def _bytes(store: Path) -> list[bytes]:
    """A store's files, oldest first (names are creation times, contents are compared)."""
    return [p.read_bytes() for p in sorted(store.iterdir())]


def test_index_records_table_equals_the_decoder(spark: Any, generated: Any) -> None:
    from rmqarrow.converters.spark.commitlog import index_records_frame

    for log, _ in _logs(generated):
        df = index_records_frame(spark, log)
        assert df.rdd.getNumPartitions() == len([p for p in log.iterdir() if p.is_file()]) > 1
        want = pa.Table.from_batches(list(index_records(log)), INDEX_RECORDS_SCHEMA)
        got = df.toArrow()
        assert got.column_names == INDEX_RECORDS_SCHEMA.names
        assert got.sort_by("commit_log_offset").cast(want.schema).equals(want), log


def test_ordered_batches_equal_the_local_ones(spark: Any, generated: Any) -> None:
    from rmqarrow.converters.spark.records import ordered_index_records

    log = generated.root / "commitlog"
    resume = list(index_records(log))[1].column("commit_log_offset")[7].as_py()
    for start in (0, resume):
        want = list(index_records(log, start_offset=start, batch_rows=100))
        # window=1: one file a job, so the next window is decoded while one is consumed
        got = list(ordered_index_records(spark, log, start_offset=start, batch_rows=100, window=1))
        assert len(got) == len(want) > 2
        assert all(g.equals(w) for g, w in zip(got, want, strict=True))
    # a build that stops early: the window still decoding is cancelled, the session lives on
    early = ordered_index_records(spark, log, batch_rows=100, window=1)
    assert next(early).equals(next(index_records(log, batch_rows=100)))
    early.close()
    assert spark.range(3).count() == 3


def test_build_engine_spark_is_byte_identical(
    spark: Any, generated: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i, (log, geometry) in enumerate(_logs(generated)):
        local, dist = tmp_path / f"local{i}", tmp_path / f"spark{i}"
        assert main(["build", str(local), "--from-commitlog", str(log), *geometry]) == 0
        assert (
            main(
                [
                    "build",
                    str(dist),
                    "--from-commitlog",
                    str(log),
                    *geometry,
                    "--engine",
                    "spark",
                    "--master",
                    "local[2]",
                    "--batch-rows",
                    "500",
                ]
            )
            == 0
        )
        assert _bytes(dist) == _bytes(local) and len(_bytes(local)) > 1, log
    capsys.readouterr()


def test_build_engine_spark_resumes_at_a_timestamp(
    spark: Any, generated: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, geometry = _logs(generated)[1]
    records = pa.Table.from_batches(list(index_records(log)))
    when = str(records.column("store_timestamp")[records.num_rows // 2].as_py())
    for engine in ("local", "spark"):
        assert (
            main(
                [
                    "build",
                    str(tmp_path / engine),
                    "--from-commitlog",
                    str(log),
                    *geometry,
                    "--start-timestamp",
                    when,
                    "--engine",
                    engine,
                ]
            )
            == 0
        )
    assert _bytes(tmp_path / "spark") == _bytes(tmp_path / "local")
    capsys.readouterr()


def test_damaged_log_is_one_line_and_leaves_nothing(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "commitlog"
    shutil.copytree(GOLDEN_LOG, log)
    with open(log / "00000000000000065536", "r+b") as f:
        f.seek(4)
        f.write(b"\xff\xff\xff\xff")  # the magic code of the second file's first record
    status = main(
        [
            "build",
            str(tmp_path / "idx"),
            "--from-commitlog",
            str(log),
            "--hash-slot-num",
            "64",
            "--index-num",
            "256",
            "--engine",
            "spark",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert status == 1
    assert err.count("\n") == 0 and "Traceback" not in err, err
    assert err.startswith("rmqarrow build: error: ") and "physical offset 65536" in err
    assert "bad magic code" in err
    assert not (tmp_path / "idx").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["commitlog"]  # no staging dir left


def test_engine_options_are_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["build", str(tmp_path / "x"), "--from", "r.csv", "--engine", "spark"]) == 2
    assert "--engine spark goes with --from-commitlog" in capsys.readouterr().err
    assert (
        main(
            [
                "build",
                str(tmp_path / "x"),
                "--from-commitlog",
                str(GOLDEN_LOG),
                "--master",
                "local[2]",
            ]
        )
        == 2
    )
    assert "--master needs --engine spark" in capsys.readouterr().err
