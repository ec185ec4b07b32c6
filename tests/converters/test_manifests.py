"""The typed manifests: read back to the same JSON, byte for byte; a malformed key refused
in one line naming the key, the dataset, what was expected and what was found."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rmqarrow.converters.delta.layout import META_KEY, PIN_TABLE
from rmqarrow.converters.manifests import (
    DatasetManifest,
    RocksDBManifest,
    RunPin,
    TableRows,
    TieredManifest,
    as_manifest,
)
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.manifest import dataset_manifest, read_manifest

from rmqarrow import Geometry
from rmqarrow.errors import DatasetError
from rmqarrow.testing.stores import write_random_store

LEGACY = Path(__file__).resolve().parents[1] / "legacy"
KINDS = {
    "commitlog_store1": DatasetManifest,
    "tiered_basic": TieredManifest,
    "rocksdb_basic": RocksDBManifest,
}


def _text(manifest: Any) -> str:
    return json.dumps(manifest, indent=1)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_reads_back_to_the_same_json(name: str) -> None:
    """Every key, its order and its value's type (an int stays an int) as read."""
    path = LEGACY / name / "_rmqarrow.json"
    raw = json.loads(path.read_text())
    typed = KINDS[name].from_dict(raw, path)
    assert _text(typed.to_dict()) == _text(raw)
    assert type(as_manifest(raw, path)) is KINDS[name]


def test_an_export_and_its_pin_read_back_to_the_same_json(tmp_path: Path) -> None:
    """The manifest readers get, and the pin commit as written in the log."""
    store, ds = tmp_path / "store", tmp_path / "ds"
    write_random_store(store, Geometry(hash_slot_num=16, index_num=64), [20, 30], seed=3)
    export_store(store, ds, hash_slot_num=16, index_num=64)
    typed = dataset_manifest(ds)
    assert _text(typed.to_dict()) == _text(read_manifest(ds))
    assert typed.source.files[0].hash_slot_num == 16 and typed.delta is not None
    assert typed.rows("entries") == sum(r.rows for r in typed.parts or () if "entries/" in r.path)
    log = sorted((ds / PIN_TABLE / "_delta_log").glob("*.json"))[-1]
    info = next(
        json.loads(line)["commitInfo"]
        for line in log.read_text().splitlines()
        if "commitInfo" in line
    )
    pin = RunPin.of_commit(info[META_KEY], log)
    assert pin is not None and pin.to_dict() == info[META_KEY]
    assert _text(pin.to_dict()) == _text(info[META_KEY])
    assert RunPin.of_commit({"restored_to_pin": 3}) is None  # a restore's commit: no run


def _manifest() -> dict[str, Any]:
    return json.loads((LEGACY / "commitlog_store1" / "_rmqarrow.json").read_text())


def _refused(raw: dict[str, Any], *words: str) -> str:
    with pytest.raises(DatasetError) as caught:
        DatasetManifest.from_dict(raw, "/data/ds/_rmqarrow.json")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("/data/ds/_rmqarrow.json: malformed manifest")
    assert "re-export the dataset" in message
    for word in words:
        assert word in message
    return message


def test_a_missing_key_is_named_with_its_place() -> None:
    raw = _manifest()
    del raw["source"]["files"][1]["size"]
    _refused(raw, "'source.files[1].size' is missing", "expected an integer")
    raw = _manifest()
    del raw["writer"]
    _refused(raw, "'writer' is missing", "expected a string")


def test_a_wrong_type_names_what_was_expected_and_found() -> None:
    raw = _manifest()
    raw["source"]["files"][0]["index_count"] = "many"
    _refused(raw, "'source.files[0].index_count'", "expected an integer", "a string ('many')")
    raw = _manifest()
    raw["parts"][2]["rows"] = True  # JSON's true is no count
    _refused(raw, "'parts[2].rows'", "found a boolean (True)")
    raw = _manifest()
    raw["tables"]["entries"] = [1]
    _refused(raw, "'tables.entries'", "expected an object", "found a list")
    raw = _manifest()
    raw["run"] = 1.5
    _refused(raw, "'run'", "expected an integer or null", "a number (1.5)")


def test_a_number_may_be_written_as_an_integer() -> None:
    """``updated_at`` is Unix seconds: a whole second written as 1700000000 is one."""
    raw = {**_manifest(), "updated_at": 1700000000}
    typed = DatasetManifest.from_dict(raw)
    assert typed.updated_at == 1700000000 and _text(typed.to_dict()) == _text(raw)


def test_a_record_changed_keeps_its_order_and_adds_new_keys_last() -> None:
    raw = _manifest()
    typed = DatasetManifest.from_dict(raw)
    messages = typed.tables["messages"]
    changed = replace(
        typed,
        run=4,
        tables={**typed.tables, "messages": replace(messages, rows=7, next_offset=99)},
    )
    out = changed.to_dict()
    assert list(out) == [*raw, "run"]
    assert list(out["tables"]["messages"]) == [*raw["tables"]["messages"], "next_offset"]
    assert out["tables"]["messages"]["rows"] == 7
    built = TableRows(rows=1, commitlog="/log", next_offset=2).to_dict()
    assert list(built) == ["rows", "commitlog", "next_offset"]


def test_keys_it_does_not_know_are_kept() -> None:
    raw = {**_manifest(), "z_other_tool": {"a": [1, 2]}}
    raw["source"]["files"][0]["note"] = "kept"
    typed = DatasetManifest.from_dict(raw)
    assert typed.extra == {"z_other_tool": {"a": [1, 2]}}
    assert _text(typed.to_dict()) == _text(raw)


def test_a_manifest_of_no_known_format_is_refused_by_as_manifest() -> None:
    with pytest.raises(DatasetError, match="format 'someone-else' is not one of"):
        as_manifest({"format": "someone-else"}, "/data/ds")
