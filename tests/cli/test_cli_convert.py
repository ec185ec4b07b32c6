"""``rmqarrow export`` / ``rmqarrow import`` through rmqarrow.cli.main."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from golden_data import GoldenSet
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet.manifest import MANIFEST_NAME

import rmqarrow
from rmqarrow.cli import main
from rmqarrow.format.layout import Geometry


def _geo(g: GoldenSet) -> list[str]:
    return ["--hash-slot-num", str(g.hash_slot_num), "--index-num", str(g.index_num)]


def test_export_import_round_trip(
    golden: GoldenSet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds, out = tmp_path / "ds", tmp_path / "out"
    assert main(["export", str(golden.store_dir), str(ds), *_geo(golden), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == len(golden.files) and summary["engine"] == "local"
    parts = rmqarrow.open(ds).parts("entries")  # the Delta table's files, not its folder
    assert summary["entries"] == sum(pq.read_metadata(p).num_rows for p in parts)
    assert main(["import", str(ds), str(out)]) == 0
    text = capsys.readouterr().out
    assert "files" in text and golden.files[0] in text
    for name, orig in zip(golden.files, golden.file_paths, strict=True):
        assert (out / name).read_bytes() == orig.read_bytes()


def test_export_refuses_existing_then_overwrites(
    golden: GoldenSet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()  # an empty folder is a place to write: nothing in it to lose
    assert main(["export", str(golden.store_dir), str(ds), *_geo(golden)]) == 0
    before = sorted(p.name for p in ds.rglob("*"))
    capsys.readouterr()
    assert main(["export", str(golden.store_dir), str(ds), *_geo(golden)]) == 1
    err = capsys.readouterr().err
    assert "already exists" in err and "--overwrite" in err
    assert sorted(p.name for p in ds.rglob("*")) == before
    assert main(["export", str(golden.store_dir), str(ds), *_geo(golden), "--overwrite"]) == 0
    assert is_delta_dataset(ds) and not (ds / MANIFEST_NAME).exists()


def test_import_of_a_non_dataset_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ds").mkdir()
    assert main(["import", str(tmp_path / "ds"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "rmqarrow import: error:" in err and "empty directory" in err
    assert not (tmp_path / "out").exists()


def test_master_needs_spark(golden: GoldenSet, tmp_path: Path) -> None:
    argv = ["export", str(golden.store_dir), str(tmp_path / "ds"), "--master", "local[1]"]
    assert main(argv) == 2
    assert not (tmp_path / "ds").exists()


def test_bad_engine_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "a", "b", "--engine", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'nope'" in err


def test_engine_spark_dispatches_lazily(
    golden: GoldenSet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The CLI hands --engine spark to rmqarrow.converters.spark.export.export_store (faked here by
    the local exporter: the real one has its own spark-marked tests)."""
    from rmqarrow.converters.parquet.export import export_store

    calls: list[dict[str, object]] = []

    def fake(store_dir: str, out_dir: str, **kwargs: object) -> None:
        calls.append({"store": store_dir, "out": out_dir, **kwargs})
        export_store(
            store_dir,
            out_dir,
            overwrite=bool(kwargs["overwrite"]),
            hash_slot_num=golden.hash_slot_num,
            index_num=golden.index_num,
        )

    module = types.ModuleType("rmqarrow.converters.spark.export")
    module.export_store = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rmqarrow.converters.spark.export", module)
    out = tmp_path / "ds"
    argv = [
        "export",
        str(golden.store_dir),
        str(out),
        "--engine",
        "spark",
        "--master",
        "local[1]",
        *_geo(golden),
        "--json",
    ]
    assert main(argv) == 0
    assert calls == [
        {
            "store": golden.store_dir,
            "out": str(out),
            "overwrite": False,
            "master": "local[1]",
            "geometry": Geometry(golden.hash_slot_num, golden.index_num),
            "commitlog": None,
            "wait": False,
        }
    ]
    assert json.loads(capsys.readouterr().out)["engine"] == "spark"
