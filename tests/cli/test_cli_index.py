"""The CLI's native commands: info, query, build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from golden_data import golden_set

from rmqarrow import IndexService
from rmqarrow.cli import main

T0 = 1_700_000_000_000
BASIC = golden_set("basic")  # 100 slots x 400: the 1:4 ratio, so geometry is fitted


def records(n: int) -> pa.Table:
    return pa.table(
        {
            "topic": ["T"] * n,
            "keys": [f"k{i % 7} order-{i}" for i in range(n)],
            "uniq_key": [f"U{i:08d}" for i in range(n)],
            "commit_log_offset": pa.array([i * 100 for i in range(n)], pa.int64()),
            "store_timestamp": pa.array([T0 + i for i in range(n)], pa.int64()),
            "sys_flag": pa.array([0xC if i % 50 == 49 else 0 for i in range(n)], pa.int32()),
        }
    )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_info_store_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "info", str(BASIC.store_dir))
    assert status == 0
    assert "00000" in out and "2 files, 400 entries" in out
    # the geometry fitted from the size is shown; the files' own entries confirm it, so
    # no note repeats it (a guess is noted: test_geometry_note_when_the_fit_is_a_guess)
    assert "geometry 100 slots x 400" in out and "does not fit the defaults" not in err
    status, out, _ = run(capsys, "info", str(BASIC.store_dir), "--json")
    doc = json.loads(out)
    assert doc["schema"] == "rmqarrow.info.index-store/1"
    infos = doc["files"]
    assert [i["entries"] for i in infos] == [399, 1]
    assert infos[0]["fill_ratio"] == 1.0 and infos[0]["write_full"] is True


def test_info_wrong_geometry_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    rolling = golden_set("rolling")
    status, _, err = run(capsys, "info", str(rolling.store_dir))
    assert status == 1
    assert "expected 420000040 bytes" in err and "found 744 bytes" in err


def test_query_single_key_forms(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with IndexService(tmp_path, 8, 32) as s:
        from rmqarrow import MessageRecord

        s.build_index(MessageRecord("T", "a b", "U1", 10, T0))
        s.build_index(MessageRecord("T", "a", None, 20, T0 + 5000))
    geometry = ("--hash-slot-num", "8", "--index-num", "32")
    status, out, _ = run(capsys, "query", str(tmp_path), "--topic", "T", "--key", "a", *geometry)
    assert status == 0 and out.split()[:4] == ["phy_offset", "----------", "20", "10"]
    _, out, _ = run(
        capsys,
        "query",
        str(tmp_path),
        "--key",
        "T#a",
        "--json",
        "--begin",
        str(T0 + 1000),
        *geometry,
    )
    assert json.loads(out)["phy_offsets"] == [20]
    status, _, err = run(capsys, "query", str(tmp_path), "--key", "a", "--max-num", "-1")
    assert status == 2 and "--max-num" in err  # a usage error


def test_query_batch_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "query", str(BASIC.store_dir), "--queries", str(BASIC.queries_path), "--json"
    )
    doc = json.loads(out)
    assert status == 0 and doc["schema"] == "rmqarrow.query.batch/1"
    assert [a["phy_offsets"] for a in doc["answers"]] == BASIC.expected
    assert [a["key"] for a in doc["answers"]] == [q.key for q in BASIC.queries]
    assert "does not fit the defaults" not in err  # fitted, and confirmed by the files


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_build_from_file_equals_service(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    table = records(300)
    source = tmp_path / f"in.{fmt}"
    if fmt == "parquet":
        pq.write_table(table, source)
    else:
        pcsv.write_csv(table, source)
    store = tmp_path / "store"
    status, out, _ = run(
        capsys,
        "build",
        str(store),
        "--from",
        str(source),
        "--hash-slot-num",
        "16",
        "--index-num",
        "64",
        "--batch-rows",
        "70",
        "--json",
    )
    assert status == 0
    summary = json.loads(out)
    assert summary["records"] == 300 and summary["files"] > 1
    # the same records through build_index, one at a time
    from rmqarrow import MessageRecord

    reference = tmp_path / "ref"
    with IndexService(reference, 16, 64) as s:
        for row in table.to_pylist():
            s.build_index(MessageRecord(**row))
    mine = sorted(p.read_bytes() for p in store.iterdir())
    theirs = sorted(p.read_bytes() for p in reference.iterdir())
    assert mine == theirs


def test_build_reports_missing_columns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"topic": ["T"], "offset": [1]}), source)
    status, _, err = run(capsys, "build", str(tmp_path / "s"), "--from", str(source))
    assert status == 1 and "missing columns ['commit_log_offset', 'store_timestamp']" in err
    status, _, err = run(capsys, "build", str(tmp_path / "s"), "--from", str(tmp_path / "none"))
    assert status == 1 and "no such file" in err


def test_python_dash_m_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rmqarrow", "--help"], capture_output=True, text=True, check=True
    )
    assert "query" in done.stdout and "build" in done.stdout
