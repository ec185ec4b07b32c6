"""An incremental export refuses a store that is not the dataset's own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from golden_data import golden_set

import rmqarrow
from rmqarrow.cli import main
from rmqarrow.errors import StoreChangedError


def _files(dataset: Path) -> dict[str, bytes]:
    """Every file of the dataset (its tables' parts and logs) by path."""
    return {
        p.relative_to(dataset).as_posix(): p.read_bytes()
        for p in dataset.rglob("*")
        if p.suffix in (".parquet", ".json")
    }


def test_another_store_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rolling, basic = golden_set("rolling"), golden_set("basic")
    dataset = tmp_path / "ds"
    with rmqarrow.open(rolling.store_dir, hash_slot_num=16, index_num=32) as store:
        store.export(dataset)
    before = _files(dataset)
    # another geometry
    with (
        rmqarrow.open(basic.store_dir, hash_slot_num=100, index_num=400) as other,
        pytest.raises(StoreChangedError, match=r"100 slots x 400 entries.*16 x 32"),
    ):
        other.sync(dataset)
    # the same geometry, another store (no file in common, another path)
    twin = tmp_path / "twin"
    twin.mkdir()
    for i, name in enumerate(rolling.files):
        shutil.copy(rolling.store_dir / name, twin / f"{90000 + i:05d}")
    argv = [
        "export",
        str(twin),
        str(dataset),
        "--incremental",
        "--hash-slot-num",
        "16",
        "--index-num",
        "32",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "none of the dataset's 7 files is in this store" in err and err.count("\n") == 1
    assert _files(dataset) == before  # nothing written
    # the dataset's own store still syncs (nothing changed)
    with rmqarrow.open(rolling.store_dir, hash_slot_num=16, index_num=32) as store:
        assert not store.sync(dataset).changed


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: (root / "index").mkdir() or (root / "commitlog").mkdir(), "broker store"),
        (lambda root: (root / "00000000000000000000").write_bytes(bytes(64)), "CommitLog"),
    ],
)
def test_import_refuses_places_that_are_not_an_index_directory(
    tmp_path: Path, make: object, says: str
) -> None:
    rolling = golden_set("rolling")
    dataset = tmp_path / "ds"
    with rmqarrow.open(rolling.store_dir, hash_slot_num=16, index_num=32) as store:
        store.export(dataset)
    place = tmp_path / "place"
    place.mkdir()
    make(place)  # type: ignore[operator]
    before = sorted(p.name for p in place.iterdir())
    with rmqarrow.open(dataset) as ds, pytest.raises(rmqarrow.UsageError, match=says):
        ds.import_files(place)
    with rmqarrow.open(dataset) as ds, pytest.raises(rmqarrow.UsageError, match="dataset"):
        ds.import_files(dataset)
    assert sorted(p.name for p in place.iterdir()) == before
