"""``IndexStore.verify``: the engines against the native lookup, and what a damaged store
leaves out, refuses or logs (decided by the library, not the command line)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from golden_data import golden_set

import rmqarrow
from rmqarrow.errors import CorruptIndexError, InvalidValueError, UsageError

G = golden_set("rolling")
GEO = {"hash_slot_num": G.hash_slot_num, "index_num": G.index_num}


def _damaged(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "store"
    shutil.copytree(G.store_dir, store)
    newest = sorted(store.iterdir())[-1]
    with open(newest, "r+b") as f:
        f.truncate(newest.stat().st_size // 2)
    return store, newest


def test_every_engine_agrees_with_the_native_lookup_and_the_dataset_too(tmp_path: Path) -> None:
    with rmqarrow.open(G.store_dir, **GEO) as store:
        report = store.verify(engines=["native", "duckdb"], sample=30)
        assert report.ok and [e.engine for e in report.engines] == ["native", "duckdb"]
        store.export(tmp_path / "ds")
        against = store.verify(engines=["native", "duckdb"], dataset=tmp_path / "ds", sample=30)
    assert against.ok and against.dataset == str(tmp_path / "ds")
    assert against.dataset_check is not None and against.dataset_check.ok


def test_a_dataset_must_be_one(tmp_path: Path) -> None:
    with rmqarrow.open(G.store_dir, **GEO) as store:
        with pytest.raises(UsageError, match="not an exported dataset"):
            store.verify(dataset=G.store_dir)
        with pytest.raises(
            UsageError, match="as_of=0 reads an older version of a dataset: give dataset="
        ):
            store.verify(as_of=0)


def test_damaged_files_leave_the_sql_engines_out_unless_asked_for(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store_dir, newest = _damaged(tmp_path)
    with rmqarrow.open(store_dir, **GEO) as store:
        with caplog.at_level("INFO", logger="rmqarrow"):
            report = store.verify(sample=20)
        assert [e.engine for e in report.engines] == ["native"] and report.ok
        assert f"skipped damaged file {newest}" in caplog.text
        assert "leaving out duckdb, spark" in caplog.text
        with pytest.raises(UsageError, match="duckdb would read every file"):
            store.verify(engines=["native", "duckdb"])
    with (
        rmqarrow.open(store_dir, strict=True, **GEO) as strict,
        pytest.raises(CorruptIndexError, match=r"refused \(strict=True\)"),
    ):
        strict.verify()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sample": 0}, InvalidValueError, "sample must be an int >= 1, got 0"),
        ({"sample": True}, InvalidValueError, "sample must be an int >= 1"),
        ({"queries": [], "keys": ["T#k"]}, UsageError, "give one"),
        ({"engines": "native,duckdb"}, UsageError, "engines must be a list"),
        ({"engines": ["native", "presto"]}, UsageError, "engines must be a list"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    with rmqarrow.open(G.store_dir, **GEO) as store, pytest.raises(error, match=match):
        store.verify(**kwargs)  # type: ignore[arg-type]
