"""``rmqarrow.open`` on a RocksDB message index: the database, a broker root, a dataset."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rocksdb_golden_data import ALL_ROCKSDB

import rmqarrow
from rmqarrow.errors import UsageError
from rmqarrow.format.detect import detect
from rmqarrow.rocksdb import RocksDBQuery
from rmqarrow.store import RocksDBDatasetStore, RocksDBStore

EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")
BEGIN, END = 1_749_117_600_000, 1_749_290_400_000


def test_open_the_database_and_query(tmp_path: Path) -> None:
    with rmqarrow.open(EDGE.db, max_msgs_num_batch=16, max_query_days=2) as store:
        assert isinstance(store, RocksDBStore) and store.format == "rocksdb"
        assert store.query("EdgeTopic", "first", begin=BEGIN, end=END, index_type="K") == [0]
        # a window one day too long: RocketMQ returns null
        assert store.query_offset("EdgeTopic", "first", 64, BEGIN, END + 86_400_000) is None
        info = store.info()
        assert info.column_families == ["default", "timer", "trans"]
        assert info.last_offset_py == 22100 and info.to_dict()["last_offset_py"] == 22100
        assert store.check().ok
        rows = store.scan("rocksdb_records", columns=["type"]).read_all()
        assert rows.num_rows == len(EDGE.pairs()["default"]) - 2
        con = store.to_duckdb()
        ((topics,),) = con.execute("SELECT count(DISTINCT topic) FROM rocksdb_records").fetchall()
        assert topics == len(
            {k[8:-8].split(b"@")[1] for k, _ in EDGE.pairs()["default"] if b"@" in k}
        )
        manifest = store.export(tmp_path / "ds")
    with rmqarrow.open(tmp_path / "ds", max_msgs_num_batch=16, max_query_days=2) as ds:
        assert isinstance(ds, RocksDBDatasetStore)
        assert ds.info().manifest["tables"] == manifest["tables"]
        assert ds.check().ok
        assert ds.query("EdgeTopic", "first", begin=BEGIN, end=END) == [0]
        with pytest.raises(UsageError, match="native"):
            ds.query("EdgeTopic", "first", begin=BEGIN, end=END, engine="native")


def test_explain_an_empty_answer() -> None:
    with rmqarrow.open(EDGE.db, max_msgs_num_batch=16, max_query_days=2) as store:
        assert isinstance(store, RocksDBStore)
        lines = store.explain(RocksDBQuery("EdgeTopic", "nothing", 64, BEGIN, END))
        assert any("then U" in x for x in lines)
        assert any("capped to maxMsgsNumBatch 16" in x for x in lines)
        assert any("no such bucket" in x for x in lines)
        lines = store.explain(RocksDBQuery("EdgeTopic", "first", 5, BEGIN, END + 1, "K"))
        assert lines[-1].startswith("RocketMQ returns null: the window is 2.000")


def test_a_broker_root_with_both_indexes(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(EDGE.db, root / "rocksdbstore")
    (root / "commitlog").mkdir()
    assert detect(root).kind == "rocksdb"  # no index/: the RocksDB index is what it has
    (root / "index").mkdir()
    t = detect(root)
    assert t.kind == "broker_root" and t.rocksdb_dir == root / "rocksdbstore"
    with rmqarrow.open(root, index="rocksdb") as store:
        assert isinstance(store, RocksDBStore) and store.db_path == root / "rocksdbstore"
    with pytest.raises(UsageError, match="no RocksDB message index"):
        rmqarrow.open(tmp_path, index="rocksdb")
    with pytest.raises(UsageError, match="indexfile"):
        rmqarrow.open(root, index="sideways")


def test_wrong_paths_are_refused_in_one_line(tmp_path: Path) -> None:
    from rmqarrow.errors import ClosedIndexError, OutputExistsError, StoreNotFoundError
    from rmqarrow.rocksdb import RocksDBIndex

    with pytest.raises(StoreNotFoundError, match="no such RocksDB directory"):
        RocksDBIndex.open(tmp_path / "absent")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(StoreNotFoundError, match="not a RocksDB message index"):
        RocksDBIndex.open(tmp_path)
    with pytest.raises(OutputExistsError, match="not empty"):
        RocksDBIndex.create(tmp_path)
    with pytest.raises(UsageError, match="holds no IndexFiles"):
        rmqarrow.open(EDGE.db, index="indexfile")
    with RocksDBIndex.open(EDGE.db) as r:
        pass
    with pytest.raises(ClosedIndexError, match="closed"):
        r.pairs()
