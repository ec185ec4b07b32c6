"""A dataset of the older manifest layout, which rmqarrow no longer writes, is still read
right and becomes Delta tables in place (``tests/legacy/`` holds one its writer wrote)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from golden_data import golden_set
from legacy_dataset import legacy_export
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.duckdb.sql import answer_queries, connect
from rmqarrow.converters.parquet.importer import import_dataset
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.manifest import read_manifest
from rmqarrow.converters.parquet.to_delta import convert_to_delta

from rmqarrow.errors import DatasetError

LEGACY = Path(__file__).parents[2] / "legacy" / "commitlog_store1"
GOLDEN = golden_set("commitlog_store1")
TABLES = ("files", "slots", "entries", "messages")


def _copy(tmp_path: Path) -> Path:
    ds = tmp_path / "legacy"
    shutil.copytree(LEGACY, ds)
    return ds


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_written_dataset_is_read_as_its_store(tmp_path: Path) -> None:
    ds = _copy(tmp_path)
    assert not is_delta_dataset(ds)
    assert answer_queries(ds, GOLDEN.queries) == GOLDEN.expected
    con = connect(ds)
    try:
        n = con.sql("SELECT count(*) FROM messages").fetchall()[0][0]
    finally:
        con.close()
    assert n == read_manifest(ds)["tables"]["messages"]["rows"] == 300
    import_dataset(ds, tmp_path / "back")
    assert _bytes(tmp_path / "back") == _bytes(GOLDEN.store_dir)


def test_converted_in_place_then_exported_incrementally(tmp_path: Path) -> None:
    ds = _copy(tmp_path)
    parts = {p.relative_to(ds): p.read_bytes() for p in ds.rglob("*.parquet")}
    geo = {"hash_slot_num": GOLDEN.hash_slot_num, "index_num": GOLDEN.index_num}
    with pytest.raises(DatasetError, match="older manifest layout"):
        sync_store(GOLDEN.store_dir, ds, **geo)
    assert not is_delta_dataset(ds)  # refused before anything was written
    # what the older writer left when killed while replacing its record
    (ds / "._rmqarrow.json.tmp").write_text('{"format": "rmqarrow-')
    assert convert_to_delta(ds)
    assert is_delta_dataset(ds)
    assert not list(ds.glob("*rmqarrow.json*"))  # neither record nor half of one stays
    # nothing rewritten: the same parts, now committed
    assert {p.relative_to(ds): p.read_bytes() for p in ds.rglob("*.parquet")} == parts
    assert answer_queries(ds, GOLDEN.queries) == GOLDEN.expected
    # the store has not moved on since the export: the run commits nothing
    result = sync_store(GOLDEN.store_dir, ds, **geo)
    assert not result.changed
    import_dataset(ds, tmp_path / "back")
    assert _bytes(tmp_path / "back") == _bytes(GOLDEN.store_dir)


def test_the_tests_helper_makes_what_the_writer_wrote(tmp_path: Path) -> None:
    """``tests/legacy_dataset.py`` turns a Delta export into the layout the last writer of
    it wrote: the same manifest keys, parts and rows (the Parquet bytes may differ by the
    pyarrow that wrote them)."""
    made = tmp_path / "made"
    legacy_export(
        GOLDEN.store_dir,
        made,
        hash_slot_num=GOLDEN.hash_slot_num,
        index_num=GOLDEN.index_num,
        commitlog=GOLDEN.store_dir.parent / "commitlog" / "store1" / "commitlog",
    )
    written = json.loads((LEGACY / "_rmqarrow.json").read_text())
    ours = json.loads((made / "_rmqarrow.json").read_text())
    # the run's own bookkeeping (its number) is what a Delta export adds
    assert set(written) <= set(ours) and set(ours) - set(written) <= {"run"}
    assert sorted((p["path"], p["rows"]) for p in ours["parts"]) == sorted(
        (p["path"], p["rows"]) for p in written["parts"]
    )
    assert ours["tables"]["entries"] == written["tables"]["entries"]
    assert [f["file_name"] for f in ours["source"]["files"]] == [
        f["file_name"] for f in written["source"]["files"]
    ]
    for table in TABLES:
        assert pq.read_table(made / table).equals(pq.read_table(LEGACY / table)), table
