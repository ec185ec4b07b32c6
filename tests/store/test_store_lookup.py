"""One lookup, export, import and SQL call for every kind: the same parameters, a result of
the format's type, and a parameter a kind cannot use refused naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_data import golden_set
from rocksdb_golden_data import ALL_ROCKSDB
from tiered_golden_data import TieredSet

import rmqarrow
from rmqarrow.errors import InvalidValueError, UnsupportedOperationError, UsageError
from rmqarrow.store import (
    ImportedIndexFiles,
    ImportedTieredFiles,
    IndexManifest,
    OffsetLookup,
    RocksDBLookup,
    RocksDBManifest,
    TieredLookup,
    TieredManifest,
)
from rmqarrow.tiered import TieredQuery, as_tiered_queries

TIERED = TieredSet("tiered_basic")
ROCKSDB = ALL_ROCKSDB[0]


def _index() -> rmqarrow.Store:
    g = golden_set("basic")
    return rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num)


def _tiered() -> rmqarrow.Store:
    return rmqarrow.open(
        TIERED.dir / "unsealed.bin", hash_slot_num=TIERED.hash_slot_num, index_num=TIERED.index_num
    )


def test_each_format_answers_in_its_own_type() -> None:
    with _index() as store:
        found = store.lookup("7", explain=True)
        assert isinstance(found, OffsetLookup) and not found.batch
        assert found.answers == store.answers([rmqarrow.Query("7", 64)]) and found.answers[0]
        assert found.explained  # the native lookup's reasons, per file
    with _tiered() as store:
        items = store.lookup("TopicTest#key-00", exact=True)
        assert isinstance(items, TieredLookup) and items.exact
        assert items.queries == [TieredQuery("TopicTest", "key-00", 64, 0, 2**63 - 1)]
        assert items.answers[0] == store.query("TopicTest", "key-00", exact=True)
        assert items.rocketmq is not None and items.begin_timestamp is not None
    with rmqarrow.open(ROCKSDB.db) as store:
        offsets = store.lookup("order-1001", topic="TopicTest", index_type="K")
        assert isinstance(offsets, RocksDBLookup)
        assert offsets.queries[0].topic == "TopicTest" and offsets.queries[0].index_type == "K"


@pytest.mark.parametrize(
    ("open_store", "options", "named"),
    [
        (_index, {"last_key": "x"}, "last_key="),
        (_index, {"exact": True}, "exact="),
        (_tiered, {"index_type": "K"}, "index_type="),
        (_tiered, {"resolve": "commitlog"}, "resolve="),
        (_tiered, {"explain": True}, "explain="),
        (lambda: rmqarrow.open(ROCKSDB.db), {"exact": True}, "exact="),
        (lambda: rmqarrow.open(ROCKSDB.db), {"resolve": "commitlog"}, "resolve="),
    ],
)
def test_a_parameter_a_kind_cannot_use_is_refused_naming_it(
    open_store: object, options: dict[str, object], named: str
) -> None:
    with open_store() as store, pytest.raises(UsageError) as refused:  # type: ignore[operator]
        store.lookup("TopicTest#key-00", **options)
    assert str(refused.value).startswith(named)


def test_a_lookup_takes_a_key_or_a_file_of_them() -> None:
    with _index() as store:
        with pytest.raises(UsageError, match=r"key= .* or queries="):
            store.lookup()
        with pytest.raises(UsageError, match="begin=5 is after end=3"):
            store.lookup("7", begin=5, end=3)


def test_export_and_import_return_the_format_s_types(tmp_path: Path) -> None:
    with _index() as store:
        manifest = store.export(tmp_path / "idx")
    assert isinstance(manifest, IndexManifest) and manifest["tables"]["entries"]["rows"] > 0
    with _tiered() as store:
        assert isinstance(store.export(tmp_path / "tiered"), TieredManifest)
        with pytest.raises(UsageError, match="local engine only"):
            store.export(tmp_path / "never", engine="spark")
    with rmqarrow.open(ROCKSDB.db) as store:
        assert isinstance(store.export(tmp_path / "rocksdb"), RocksDBManifest)
    with rmqarrow.open(tmp_path / "idx") as dataset:
        assert isinstance(dataset.import_files(tmp_path / "files"), ImportedIndexFiles)
    with rmqarrow.open(tmp_path / "tiered") as dataset:
        with pytest.raises(UsageError, match=r"^trust="):
            dataset.import_files(tmp_path / "never", trust=True)
        assert isinstance(dataset.import_files(tmp_path / "tfiles"), ImportedTieredFiles)
    with rmqarrow.open(tmp_path / "rocksdb") as dataset:
        with pytest.raises(UnsupportedOperationError, match="import takes a dataset"):
            dataset.import_files(tmp_path / "never")
        with pytest.raises(UnsupportedOperationError, match="copy it, or query it"):
            dataset.export(tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_sql_is_one_session_whatever_the_kind() -> None:
    with _index() as store, store.sql() as session:
        assert session.run("SELECT count(*) AS n FROM entries").read_all()["n"][0].as_py() > 0
    with rmqarrow.open(ROCKSDB.db) as store, store.sql() as session:
        assert session.run("SELECT count(*) AS n FROM rocksdb_records").read_all().num_rows == 1
        with pytest.raises(UsageError, match=r"^commitlog="):
            store.sql(commitlog="commitlog")
    with _tiered() as store, store.sql() as session:
        items = session.run("SELECT count(*) AS n FROM tiered_items").read_all()["n"][0]
        assert items.as_py() == store.scan("tiered_items").read_all().num_rows > 0
        with pytest.raises(UsageError, match=r"^commitlog=.*own commit log"):
            store.sql(commitlog="commitlog")


def test_a_tiered_dataset_answers_sql_as_its_files_do(tmp_path: Path) -> None:
    with _tiered() as store:
        store.export(tmp_path / "ds")
        with store.sql() as session:
            want = session.run("SELECT * FROM tiered_items ORDER BY 1, 2").read_all()
    with rmqarrow.open(tmp_path / "ds") as dataset:
        assert dataset.supports("sql") and dataset.supports("to_duckdb")
        with dataset.sql() as session:
            assert session.run("SELECT * FROM tiered_items ORDER BY 1, 2").read_all() == want
        con = dataset.to_duckdb()
        n = con.execute("SELECT count(*) FROM tiered_files").fetchone()
        assert n == (1,)


def test_tiered_queries_are_one_type() -> None:
    assert as_tiered_queries([("T", "k", 1, 0, 5)]) == [TieredQuery("T", "k", 1, 0, 5)]
    with pytest.raises(InvalidValueError, match="query 0: a tiered query"):
        as_tiered_queries([("T", "k", 1)])
