"""The demo runs end to end at a small size and says what a person needs to read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rmqarrow.cli import main
from rmqarrow.demo.run import demo_geometry, message_count, run_demo
from rmqarrow.errors import InvalidValueError, OutputExistsError


def _run(out: Path, engines: tuple[str, ...]) -> tuple[Any, str]:
    lines: list[str] = []
    result = run_demo(out, size="small", engines=engines, echo=lines.append)
    return result, "\n".join(lines)


def test_demo_small_without_spark(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result, text = _run(out, ("native", "duckdb"))
    assert result.ok, text
    # every step, in order; Spark's is left out
    steps = [
        "== 1. A message stream",
        "== 2. The native index",
        "== 3. Exported to Parquet",
        "== 4. Questions in DuckDB",
        "== 6. Why the native semantics matter",
        "== 7. verify",
        "== 8. What is where",
    ]
    positions = [text.index(s) for s in steps]
    assert positions == sorted(positions)
    assert "skipped: --engines leaves Spark out" in text
    assert "reflect(" not in text
    # the stream and what was built from it
    assert result.messages == 3000 and result.index_files >= 5
    assert (result.hash_slot_num, result.index_num) == demo_geometry(3000)
    assert "rollbacks" in text and "stored out of order" in text
    for key in ("commitlog", "records", "keys", "store", "dataset"):
        assert Path(result.paths[key]).exists(), key
    keys = Path(result.paths["keys"]).read_text().split("\n")[:-1]
    assert len(keys) > 3000 and all("#" in k for k in keys)
    # SQL is shown with bound parameters, and answered
    assert "FROM index_lookup(?, 64)" in text and "-- parameters: ['payments#ORD-" in text
    assert all(q["rows"] > 0 for q in result.questions if q["engine"] == "duckdb")
    # the semantics case: the plain filter finds more than the native walk, engines agree
    sem = result.semantics
    assert sem is not None
    assert sem["plain_filter"] != sem["native"]
    assert sem["engines"] == {"native": sem["native"], "duckdb": sem["native"]}
    assert "why: out-of-order store times" in text
    # verify across engines, with the dataset check
    assert result.verify["ok"] and result.verify["dataset_check"]["ok"]
    assert [e["engine"] for e in result.verify["engines"]] == ["native", "duckdb"]
    assert "OK: every engine agrees with the native lookup" in text
    # what to try next names real paths
    assert f"rmqarrow verify {result.paths['store']} --dataset {result.paths['dataset']}" in text
    assert text.rstrip().split("\n")[-1].startswith("OK: demo finished in")


def test_demo_cli_json_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    status = main(["demo", "--size", "600", "--engines", "duckdb", "--out", str(out), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0 and doc["ok"] and doc["messages"] == 600
    assert [e["engine"] for e in doc["verify"]["engines"]] == ["native", "duckdb"]
    # an existing, non-empty output directory is never reused
    assert main(["demo", "--size", "small", "--out", str(out)]) == 1
    assert "not empty" in capsys.readouterr().err
    with pytest.raises(OutputExistsError):
        run_demo(out, size="small")
    with pytest.raises(InvalidValueError):
        message_count("huge")
    assert main(["demo", "--engines", "native,oracle", "--out", str(tmp_path / "x")]) == 2


@pytest.mark.spark
def test_demo_small_with_spark(spark: Any, tmp_path: Path) -> None:
    result, text = _run(tmp_path / "demo", ("native", "duckdb", "spark"))
    assert result.ok, text
    assert "== 5. Questions in Spark SQL" in text
    assert "reflect('java.util.Objects', 'hashCode', :key)" in text
    assert [q["rows"] > 0 for q in result.questions if q["engine"] == "spark"] == [True, True]
    assert result.semantics is not None
    assert result.semantics["engines"]["spark"] == result.semantics["native"]
    assert [e["status"] for e in result.verify["engines"]] == ["reference", "ok", "ok"]


def test_demo_build_command_reproduces_its_store(
    generated: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The `rmqarrow build --from-commitlog` line the demo prints builds the same files."""
    from rmqarrow.format.naming import list_index_files

    store = tmp_path / "store"
    status = main(
        [
            "build",
            str(store),
            "--from-commitlog",
            str(generated.root / "commitlog"),
            "--hash-slot-num",
            str(generated.hash_slot_num),
            "--index-num",
            str(generated.index_num),
            "--json",
        ]
    )
    capsys.readouterr()
    assert status == 0
    mine, theirs = list_index_files(store), list_index_files(generated.store)
    assert len(mine) == len(theirs) >= 5
    for a, b in zip(mine, theirs, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_demo_leaves_spark_out_when_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rmqarrow.cli import _demo

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    assert _demo.spark_unavailable() is not None
    status = main(["demo", "--size", "300", "--out", str(tmp_path / "d")])
    captured = capsys.readouterr()
    assert status == 0
    assert "note: leaving Spark out: JAVA_HOME is" in captured.err
    assert "skipped: --engines leaves Spark out" in captured.out
