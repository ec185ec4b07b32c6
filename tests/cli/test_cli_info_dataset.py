"""``rmqarrow info`` on an exported dataset, in both layouts: what it holds, where it came
from, and whether its store has moved on (headers only), or is gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import one_error, run
from legacy_dataset import legacy_layout
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.manifest import read_manifest

import rmqarrow
from rmqarrow.errors import DatasetError
from rmqarrow.index.service import IndexService

SLOTS, INDEX = 16, 128  # 127 entries a file: two entries a message, a new file every 63
START = 1_700_000_000_000


def _put(service: IndexService, first: int, count: int) -> None:
    """``count`` messages, each indexed under its key and its unique key (two entries)."""
    ids = range(first, first + count)
    service.build_index_batch(
        pa.table(
            {
                "topic": ["T"] * count,
                "keys": [f"k{i % 7}" for i in ids],
                "uniq_key": [f"u{i}" for i in ids],
                "commit_log_offset": pa.array([1000 + 100 * i for i in ids]),
                "store_timestamp": pa.array([START + i for i in ids]),
                "sys_flag": pa.array([0] * count, pa.int32()),
            }
        )
    )
    service.flush()


def _store(path: Path, messages: int) -> IndexService:
    service = IndexService(path, SLOTS, INDEX, 1 << 20)
    service.load()
    _put(service, 0, messages)
    return service


def _entries(store: Path) -> int:
    """The store's entries as the index files' own reader counts them."""
    with rmqarrow.open(store, hash_slot_num=SLOTS, index_num=INDEX) as opened:
        return sum(int(f["entries"]) for f in opened.info(chains=False).files)


def _info_json(capsys: pytest.CaptureFixture[str], ds: Path) -> dict[str, object]:
    status, out, err = run(capsys, "info", str(ds), "--json")
    assert status == 0, err
    doc = json.loads(out)
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize("delta", [False, True], ids=["manifest", "delta"])
def test_info_on_a_fresh_dataset(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, delta: bool
) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    _store(store, 100).close()  # 200 entries over two files
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    if not delta:
        legacy_layout(ds)
    manifest = read_manifest(ds)

    status, out, err = run(capsys, "info", str(ds))
    assert status == 0, err
    layout = "delta (pinned version 0: entries v0, files v0, slots v0)" if delta else "manifest"
    assert f"layout        {layout}\n" in out
    assert f"source        {store.absolute()}\n" in out
    assert "source files  2 (" in out and "), 200 entries\n" in out
    assert "up to date with its source: 200 entries in the store" in out
    assert "stale" not in out

    doc = _info_json(capsys, ds)
    assert doc["layout"] == ("delta" if delta else "manifest")
    assert doc["run"] == 0 and doc["stale"] is False
    assert doc["delta_version"] == (0 if delta else None)
    assert doc["table_versions"] == ({"files": 0, "slots": 0, "entries": 0} if delta else {})
    tables = doc["tables"]
    assert isinstance(tables, dict)
    assert list(tables) == ["files", "slots", "entries"]
    for table, figures in tables.items():
        assert figures["rows"] == manifest["tables"][table]["rows"]
        listed = [p for p in manifest["parts"] if p["path"].startswith(f"{table}/")]
        assert figures["parts"] == len(listed) > 0
    assert tables["entries"]["rows"] == 200 == _entries(store)
    assert [f["file_name"] for f in doc["source_files"]] == sorted(p.name for p in store.iterdir())
    # the Python API answers the same, typed
    with rmqarrow.open(ds) as opened:
        info = opened.info()
        assert {"schema": "rmqarrow.info.dataset/1", **info.to_dict()} == doc
        assert info.manifest["tables"] == manifest["tables"]

    status, out, _ = run(capsys, "info", str(ds), "--jsonl")
    assert status == 0 and out.count("\n") == 1 and json.loads(out) == doc


@pytest.mark.parametrize("delta", [False, True], ids=["manifest", "delta"])
def test_info_says_stale_with_the_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, delta: bool
) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    service = _store(store, 100)
    try:
        export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
        if not delta:
            legacy_layout(ds)
        before = sorted(p.name for p in store.iterdir())
        _put(service, 100, 80)  # fills the second file and rolls to a third
    finally:
        service.close()
    added = sorted(set(p.name for p in store.iterdir()) - set(before))
    assert len(added) == 1

    status, out, err = run(capsys, "info", str(ds))
    assert status == 0, err
    assert _entries(store) == 360
    line = "stale: the source has 1 file(s) and 160 entries the dataset lacks (1 file(s) changed)"
    assert line in out
    assert f"  {added[0]}: in the store, not in the dataset" in out
    assert f"  {before[-1]}: modified since export (header differs" in out

    drift = _info_json(capsys, ds)["drift"]
    assert isinstance(drift, dict)
    assert drift["found"] is True and drift["stale"] is True
    assert drift["files_added"] == added and drift["files_changed"] == [before[-1]]
    assert drift["files_gone"] == []
    assert drift["store_entries"] == 360 and drift["entries_missing"] == 160

    if not delta:  # no incremental run on the older layout: it is converted first
        with pytest.raises(DatasetError, match=r"older manifest layout.*convert it"):
            sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
        return
    # an incremental run brings it up to date: the run number and the version move
    sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    doc = _info_json(capsys, ds)
    assert doc["stale"] is False and doc["run"] == 1 and doc["updated_at"]
    assert doc["tables"]["entries"]["rows"] == 360  # type: ignore[index]
    assert doc["delta_version"] == 1


def test_info_says_source_not_found(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    _store(store, 10).close()
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    shutil.rmtree(store)

    status, out, err = run(capsys, "info", str(ds))
    assert status == 0, err
    assert f"source not found: {store.absolute()}" in out
    doc = _info_json(capsys, ds)
    assert doc["tables"]["entries"] == {"rows": 20, "parts": 1}  # type: ignore[index]
    drift = doc["drift"]
    assert drift == {
        "path": str(store.absolute()),
        "found": False,
        "files_added": [],
        "files_gone": [],
        "files_changed": [],
        "store_entries": None,
        "entries_missing": None,
        "reasons": [f"{store.absolute()}: source no longer exists"],
        "stale": True,
    }


def test_info_on_a_converted_dataset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A manifest-layout dataset converted in place reads as Delta, same figures."""
    store, ds = tmp_path / "store", tmp_path / "ds"
    _store(store, 30).close()
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    before = _info_json(capsys, legacy_layout(ds))
    with rmqarrow.open(ds) as opened:
        assert opened.convert_to_delta()
    after = _info_json(capsys, ds)
    assert before["layout"] == "manifest" and after["layout"] == "delta"
    assert after["tables"] == before["tables"] and after["source_files"] == before["source_files"]
    assert after["stale"] is False


def test_info_on_an_odd_manifest_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Another writer's odd record: its times as written, a wrong figure one clear line."""
    store, ds = tmp_path / "store", tmp_path / "ds"
    _store(store, 10).close()
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    path = legacy_layout(ds) / "_rmqarrow.json"
    manifest = json.loads(path.read_text())
    manifest["created_at"] = "yesterday"
    path.write_text(json.dumps(manifest))
    status, out, _ = run(capsys, "info", str(ds))
    assert status == 0 and "created_at    yesterday\n" in out
    manifest["source"]["files"][0]["index_count"] = "many"
    path.write_text(json.dumps(manifest))
    status, _, err = run(capsys, "info", str(ds))
    assert status == 1
    one_error(err, str(path), "malformed manifest", "re-export")
