"""``rmqarrow.open``: every kind of path, one surface, the native answers through it."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from golden_data import SET_NAMES, golden_set
from tiered_golden_data import TieredSet

import rmqarrow
from rmqarrow.errors import (
    ClosedIndexError,
    InvalidKeyError,
    InvalidValueError,
    StoreNotFoundError,
    UnsupportedOperationError,
    UsageError,
)
from rmqarrow.store import (
    DatasetStore,
    IndexStore,
    TieredDatasetStore,
    TieredStore,
)

BASIC = TieredSet("tiered_basic")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    g = golden_set("rolling")
    out = tmp_path_factory.mktemp("ds") / "rolling"
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as store:
        store.export(out)
    return out


@pytest.mark.parametrize("name", SET_NAMES)
def test_golden_answers_through_the_front_door(name: str) -> None:
    g = golden_set(name)
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as store:
        assert isinstance(store, IndexStore) and store.kind == "index_dir"
        assert store.answers(g.queries) == g.expected
        hits = store.query_many(g.queries)
        assert hits.column_names == ["query", "key", "phy_offset"]
        assert hits.num_rows == sum(len(a) for a in g.expected)
        first = [
            o
            for q, o in zip(hits["query"].to_pylist(), hits["phy_offset"].to_pylist(), strict=True)
            if q == 0
        ]
        assert first == g.expected[0]


def test_broker_root_reads_its_index_and_fits_the_geometry(tmp_path: Path) -> None:
    g = golden_set("rolling")
    root = tmp_path / "store"
    shutil.copytree(g.store_dir, root / "index")
    (root / "commitlog").mkdir()
    (root / "checkpoint").write_bytes(bytes(4096))
    with rmqarrow.open(root, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as store:
        assert isinstance(store, IndexStore) and store.kind == "broker_root"
        assert store.index_path == root / "index"
        assert store.answers(g.queries) == g.expected
        info = store.info()
        assert info.ok and [f["name"] for f in info.files] == list(g.files)


def test_one_index_file(tmp_path: Path) -> None:
    g = golden_set("time")
    with rmqarrow.open(
        g.file_paths[0], hash_slot_num=g.hash_slot_num, index_num=g.index_num
    ) as store:
        assert store.kind == "index_file"
        assert store.answers(g.queries) == g.expected


def test_scan_projects_and_filters() -> None:
    g = golden_set("collisions")
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as store:
        everything = store.scan("entries").read_all()
        h = everything["key_hash"][0].as_py()
        reader = store.scan(
            "entries", columns=["key_hash", "phy_offset"], filter=pc.field("key_hash") == h
        )
        assert isinstance(reader, pa.RecordBatchReader)
        got = reader.read_all()
        assert got.column_names == ["key_hash", "phy_offset"]
        assert got.num_rows == pc.sum(pc.equal(everything["key_hash"], h)).as_py() > 0
        with pytest.raises(InvalidValueError, match="unknown table 'nope'"):
            store.scan("nope")


def test_duckdb_on_the_callers_connection(exported: Path) -> None:
    g = golden_set("rolling")
    con = duckdb.connect()
    con.execute("CREATE TABLE mine AS SELECT 42 AS x")
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as store:
        assert store.to_duckdb(con) is con
    n = con.execute("SELECT count(*) FROM entries").fetchone()
    assert n is not None and n[0] == sum(1 for _ in g.puts)
    assert con.execute("SELECT x FROM mine").fetchall() == [(42,)]  # the caller's own table
    con.close()
    with rmqarrow.open(exported) as ds:
        own = ds.to_duckdb()
        assert own.execute("SELECT count(*) FROM files").fetchone() == (len(g.files),)
        own.close()


def test_dataset_answers_as_the_native_lookup(exported: Path) -> None:
    g = golden_set("rolling")
    with rmqarrow.open(exported) as ds:
        assert isinstance(ds, DatasetStore) and ds.kind == "dataset"
        assert ds.answers(g.queries) == g.expected
        names = ds.scan("files", columns=["file_name"]).read_all()["file_name"].to_pylist()
        assert names == list(g.files)
        assert ds.check().ok
        info = ds.info()
        assert info.tables["files"]["rows"] == len(g.files) == len(info.source_files)
        assert info.manifest["tables"]["files"]["rows"] == len(g.files)
        with pytest.raises(UsageError, match="native engine"):
            ds.answers(g.queries, engine="native")
        with pytest.raises(UnsupportedOperationError, match="already is a dataset"):
            ds.export(exported.parent / "again")


def test_dataset_import_gives_the_files_back(exported: Path, tmp_path: Path) -> None:
    g = golden_set("rolling")
    with rmqarrow.open(exported) as ds:
        paths = ds.import_files(tmp_path / "back")
    assert [p.name for p in paths] == list(g.files)
    for p in paths:
        assert p.read_bytes() == (g.store_dir / p.name).read_bytes()


def test_tiered_file_folder_and_dataset(tmp_path: Path) -> None:
    queries = [(q.topic, q.key, q.max_count, q.begin, q.end) for q in BASIC.queries][:40]
    with rmqarrow.open(
        BASIC.dir / "unsealed.bin", hash_slot_num=BASIC.hash_slot_num, index_num=BASIC.index_num
    ) as local:
        assert isinstance(local, TieredStore) and local.format == "tiered"
        native = local.answers(queries)
        assert local.answers(queries, engine="duckdb") == native
        assert local.check().ok
        info = local.info()
        assert info.one_file and info.files[0]["form"] == "unsealed (local)"
        assert info.to_dict()["form"] == "unsealed (local)"
        local.export(tmp_path / "tds")
        table = local.query_many(queries)
        assert table.num_rows >= sum(len(a) for a in native if isinstance(a, list))
    with rmqarrow.open(tmp_path / "tds") as ds:
        assert isinstance(ds, TieredDatasetStore) and ds.kind == "tiered_dataset"
        assert ds.answers(queries) == native
        assert ds.scan("tiered_items").read_all().num_rows > 0
        with pytest.raises(UnsupportedOperationError):
            ds.check()
    folder = tmp_path / "root" / "tiered_index_file"
    folder.mkdir(parents=True)
    shutil.copy(BASIC.dir / "unsealed.bin", folder / "1700000000000")
    with rmqarrow.open(
        tmp_path / "root", hash_slot_num=BASIC.hash_slot_num, index_num=BASIC.index_num
    ) as store:
        assert store.kind == "tiered" and store.target.form == "local-dir"
        info = store.info()
        assert not info.one_file and len(info.files) == 1
        assert [f["form"] for f in info.to_dict()["files"]] == ["unsealed (local)"]


def test_wrong_paths_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidValueError, match="path must be a str"):
        rmqarrow.open(None)  # type: ignore[arg-type]
    with pytest.raises(StoreNotFoundError, match="no such store directory"):
        rmqarrow.open(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("operator notes: the index is in store/index\n" * 3)
    with pytest.raises(UsageError, match=r"not an index file \(a text file\)"):
        rmqarrow.open(tmp_path / "notes.txt")
    log = tmp_path / "commitlog"
    log.mkdir()
    (log / ("0" * 20)).write_bytes(bytes(64))
    with pytest.raises(UsageError, match="build an index from it"):
        rmqarrow.open(log)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="empty directory"):
        rmqarrow.open(tmp_path / "empty")


def test_closed_store_and_bad_arguments_are_refused() -> None:
    g = golden_set("basic")
    store = rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    with store:
        for bad in (5.5, True, -1, "3"):
            with pytest.raises(InvalidValueError, match="max_num"):
                store.query("T", "k", max_num=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidKeyError):
            store.answers([(None, 3)])
        for key in (b"k", 108, None):  # never a silent empty answer
            with pytest.raises(InvalidKeyError):
                store.query("T", key)  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="list of column names"):
            store.scan("entries", columns="phy_offset")  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="bare key"):
            store.answers(["T#k"])
        with pytest.raises(UnsupportedOperationError, match="only an exported dataset"):
            store.import_files("anywhere")
    assert store.closed and "closed" in repr(store)
    with pytest.raises(ClosedIndexError, match="closed"):
        store.query("T", "k")


def test_answer_queries_takes_tuples() -> None:
    g = golden_set("basic")
    tuples = [(q.key, q.max_num, q.begin, q.end) for q in g.queries]
    got = rmqarrow.answer_queries(
        g.store_dir, tuples, hash_slot_num=g.hash_slot_num, index_num=g.index_num
    )
    assert got == g.expected
    short = rmqarrow.answer_queries(
        g.store_dir, [(g.queries[0].key, 32)], hash_slot_num=g.hash_slot_num, index_num=g.index_num
    )
    assert len(short) == 1


def test_index_service_fits_the_geometry_of_its_files(tmp_path: Path) -> None:
    """A store written at RocketMQ's 1:4 ratio opens without the counts spelled out."""
    store = tmp_path / "s"
    rec = rmqarrow.MessageRecord(
        topic="T",
        keys="a b",
        uniq_key="U1",
        commit_log_offset=100,
        store_timestamp=1_709_251_200_000,
        sys_flag=0,
    )
    with rmqarrow.IndexService(store, 100, 400) as w:
        w.load()
        w.build_index(rec)
        w.flush()
    with rmqarrow.IndexService(store, read_only=True) as r:
        r.load()
        assert r.geometry == rmqarrow.Geometry(100, 400)
        assert r.query_offset("T", "a", 8).phy_offsets == [100]
    with rmqarrow.open(store) as opened:  # topic and key joined as RocketMQ joins them
        assert opened.query("T", "a") == opened.query("T", "b") == [100]
        assert opened.query("T", "U1") == [100]  # UNIQ_KEY indexed too
        assert opened.query("T", "c") == []
