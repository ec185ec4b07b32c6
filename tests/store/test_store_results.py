"""``info``, ``check``, ``verify`` and ``stats`` of every kind: typed results (frozen, with
``to_dict``), one ``verify`` signature for all, and what a kind cannot use refused in the
library's terms."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from golden_data import golden_set
from rocksdb_golden_data import ALL_ROCKSDB
from tiered_golden_data import TieredSet

import rmqarrow
from rmqarrow.errors import UnsupportedOperationError, UsageError
from rmqarrow.format.queries import Query
from rmqarrow.store import (
    RocksDBDatasetCheck,
    RocksDBDatasetInfo,
    RocksDBInfo,
    RocksDBStats,
    TieredDatasetInfo,
    TieredInfo,
)

BASIC = TieredSet("tiered_basic")
EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")


def _tiered(path: Path) -> rmqarrow.Store:
    return rmqarrow.open(path, hash_slot_num=BASIC.hash_slot_num, index_num=BASIC.index_num)


def _frozen(result: object) -> None:
    assert dataclasses.is_dataclass(result)
    field = dataclasses.fields(result)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(result, field, None)


def test_tiered_info_is_one_file_or_a_folder(tmp_path: Path) -> None:
    with _tiered(BASIC.dir / "unsealed.bin") as store:
        one = store.info()
    assert isinstance(one, TieredInfo) and one.one_file
    _frozen(one)
    assert one.to_dict() == one.files[0] and one.to_dict()["form"] == "unsealed (local)"
    folder = tmp_path / "tiered_index_file"
    folder.mkdir()
    shutil.copy(BASIC.dir / "unsealed.bin", folder / "1732000000000")
    with _tiered(folder) as store:
        many = store.info()
    assert not many.one_file and many.note is None
    # the folder's files are the same fields, listed under "files"
    assert many.to_dict() == {"files": [{**one.files[0], "file": str(folder / "1732000000000")}]}


def test_tiered_files_verify_as_one_verb(tmp_path: Path) -> None:
    queries = [("TopicTest", "key-00", 32, 0, 2**62), ("TopicTest", "key-01", 4, 0, 2**62)]
    with _tiered(BASIC.dir / "unsealed.bin") as store:
        given = store.verify(engines=["native", "duckdb"], queries=queries)
        assert given.ok and len(given.queries) == 2
        # a query file's full keys (topic#key) are the same queries
        tsv = tmp_path / "q.tsv"
        tsv.write_text("".join(f"{t}#{k}\t{n}\t{b}\t{e}\n" for t, k, n, b, e in queries))
        read = store.read_queries(tsv)
        assert read == queries
        full = [Query("TopicTest#key-00", 32, 0, 2**62), Query("TopicTest#key-01", 4, 0, 2**62)]
        again = store.verify(engines=["native", "duckdb"], queries=full)
        assert (
            again.to_dict()["engines"][0]["items_compared"]
            == given.to_dict()["engines"][0]["items_compared"]
        )
        sampled = store.verify(engines=["native", "duckdb"], sample=10, seed=3)
        assert sampled.ok and len(sampled.queries) == 10
        with pytest.raises(UsageError, match="keys= are the IndexFiles' sampling source"):
            store.verify(keys=["TopicTest#key-00"])
        with pytest.raises(UsageError, match="chain_check=False"):
            store.verify(chain_check=False)
        with pytest.raises(UsageError, match="as_of=0"):
            store.verify(as_of=0)
        with pytest.raises(UsageError, match="tiered index keys are topic#key"):
            store.verify(queries=[Query("no-topic", 1, 0, 1)])


def test_rocksdb_results_are_typed_and_verify_takes_the_base_signature(tmp_path: Path) -> None:
    with rmqarrow.open(EDGE.db) as store:
        info = store.info()
        assert isinstance(info, RocksDBInfo)
        _frozen(info)
        doc = info.to_dict()
        assert list(doc)[:3] == ["path", "format", "column_families"]
        assert doc["column_families"] == info.column_families
        stats = store.stats(top=3)
        assert isinstance(stats, RocksDBStats) and "hours" in stats.tables
        assert stats.to_dict()["hours"] == stats.tables["hours"].to_pylist()
        report = store.verify(engines=["native", "duckdb"], sample=20)
        assert (
            report.ok
            and report.reference == "native"
            and set(report.agree)
            == {
                "native",
                "duckdb",
            }
        )
        with pytest.raises(UsageError, match="keys= are the IndexFiles' sampling source"):
            store.verify(keys=["EdgeTopic#first"])
        with pytest.raises(UsageError, match="a RocksDB index has no hash chains"):
            store.verify(chain_check=False)
        with pytest.raises(UsageError, match="as_of=1"):
            store.verify(as_of=1)
        with pytest.raises(UsageError, match=r"check\(\) this index for its verdict"):
            store.stats(with_check=True)
        store.export(tmp_path / "ds")
    with rmqarrow.open(tmp_path / "ds") as ds:
        dinfo = ds.info()
        assert isinstance(dinfo, RocksDBDatasetInfo) and dinfo.to_dict() == dinfo.manifest
        check = ds.check()
        assert isinstance(check, RocksDBDatasetCheck) and check.ok
        with pytest.raises(UsageError, match=r"commitlog=.* an exported dataset is checked"):
            ds.check(commitlog=tmp_path)
        # a dataset has no native engine: the first SQL engine is the reference
        assert ds.verify(engines=["native", "duckdb"], sample=5).reference == "duckdb"


def test_tiered_dataset_info_is_its_manifest(tmp_path: Path) -> None:
    with _tiered(BASIC.dir / "unsealed.bin") as store:
        with pytest.raises(UsageError, match="tiered commit log"):
            store.check(commitlog=tmp_path)
        store.export(tmp_path / "tds")
    with rmqarrow.open(tmp_path / "tds") as ds:
        info = ds.info()
        assert isinstance(info, TieredDatasetInfo)
        assert [v["version"] for v in info.versions] == [0]
        assert info.to_dict() == info.manifest and info.manifest["tables"]["tiered_files"]
        tsv = tmp_path / "q.tsv"
        tsv.write_text("TopicTest#key-00\t32\t0\t9\n")
        assert ds.read_queries(tsv) == [("TopicTest", "key-00", 32, 0, 9)]  # as the files'
        with pytest.raises(UnsupportedOperationError, match="verify needs the native tiered"):
            ds.verify()
        with pytest.raises(UnsupportedOperationError, match="check the tiered files"):
            ds.check()


def test_an_index_dataset_refuses_verify_naming_the_reference(tmp_path: Path) -> None:
    g = golden_set("rolling")
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as st:
        assert st.info().one_file is False
        st.export(tmp_path / "ds")
    with rmqarrow.open(
        g.file_paths[0], hash_slot_num=g.hash_slot_num, index_num=g.index_num
    ) as one:
        assert one.info().one_file is True
    with rmqarrow.open(tmp_path / "ds") as ds:
        with pytest.raises(UnsupportedOperationError, match="verify needs the native store"):
            ds.verify()
        with pytest.raises(UsageError, match="an exported dataset is checked on its own"):
            ds.check(commitlog=tmp_path)
        assert ds.check().ok
