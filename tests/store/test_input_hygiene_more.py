"""More of the Python front door's input hygiene: a RocksDB index refuses epoch-seconds
times as the other stores do, a dataset exported with a CommitLog scans its ``messages``
table (one without it says which tables it has), and ``build`` given a directory as its
records file says so and names ``commitlog=``; every refusal one line of the project's own
errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from generated_store import GeneratedStore, build_generated
from rocksdb_golden_data import ALL_ROCKSDB

import rmqarrow
from rmqarrow.commitlog import CommitLogReader
from rmqarrow.errors import DatasetError, InvalidValueError, UsageError
from rmqarrow.format.times import looks_like_seconds
from rmqarrow.rocksdb import RocksDBQuery
from rmqarrow.store import DatasetStore, RocksDBDatasetStore, RocksDBStore

EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")
#: the window of the edge set's queries (tests/golden/rocksdb/rocksdb_edge/queries.tsv)
BEGIN, END = 1_749_117_600_000, 1_749_290_400_000


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text, text
    return text


# -- RocksDB: the epoch-seconds rule of the other stores ----------------------------------


@pytest.fixture(scope="module")
def rocksdb_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("rocksdict", reason="the rocksdb extra (rocksdict) is not installed")
    out = tmp_path_factory.mktemp("hygiene-rocksdb") / "ds"
    with rmqarrow.open(EDGE.db, max_msgs_num_batch=16, max_query_days=2) as store:
        store.export(out)
    return out


def test_rocksdb_query_refuses_epoch_seconds(rocksdb_dataset: Path) -> None:
    seconds = BEGIN // 1000
    assert looks_like_seconds(seconds) and not looks_like_seconds(BEGIN)
    for path, kind in ((EDGE.db, RocksDBStore), (rocksdb_dataset, RocksDBDatasetStore)):
        with rmqarrow.open(path, max_msgs_num_batch=16, max_query_days=2) as s:
            assert isinstance(s, kind)
            # milliseconds answer, as before
            assert s.query("EdgeTopic", "first", begin=BEGIN, end=END) == [0]
            with pytest.raises(InvalidValueError) as caught:
                s.query("EdgeTopic", "first", begin=seconds, end=END)
            line = _one_line(caught.value)
            assert line.startswith(f"begin {seconds}:") and "epoch seconds" in line
            assert f"pass {seconds * 1000}" in line
            with pytest.raises(InvalidValueError, match=rf"^end {END // 1000}: .*epoch seconds"):
                s.query_offset("EdgeTopic", "first", 64, BEGIN, END // 1000)
            with pytest.raises(InvalidValueError, match=r"^begin 1700000000: .*1700000000000"):
                s.query("EdgeTopic", "first", begin=1_700_000_000)
            # query_many and answers name the query, as the index stores' do
            good = ("EdgeTopic", "first", 64, BEGIN, END, "K")
            with pytest.raises(InvalidValueError, match=r"^query 1: begin \d+: .*epoch seconds"):
                s.query_many([good, ("EdgeTopic", "first", 64, seconds, END, "K")])
            with pytest.raises(InvalidValueError, match=r"^query 0: end \d+: .*epoch seconds"):
                s.answers([RocksDBQuery("EdgeTopic", "first", 64, BEGIN, END // 1000)])
            assert s.query_many([good])["phy_offset"].to_pylist() == [0]


def test_rocksdb_golden_queries_still_pass_the_rule() -> None:
    """Every golden RocksDB query (RocketMQ's own windows) is in milliseconds: none is
    refused, and the database answers them as before."""
    pytest.importorskip("rocksdict", reason="the rocksdb extra (rocksdict) is not installed")
    rows = [line.split("\t") for line in (EDGE.dir / "queries.tsv").read_text().splitlines()]
    queries = [
        RocksDBQuery(t, k, int(n), int(b), int(e), ty or None, None if last == "\\N" else last)
        for t, k, ty, n, b, e, last in rows
    ]
    with rmqarrow.open(EDGE.db, max_msgs_num_batch=16, max_query_days=2) as s:
        assert isinstance(s, RocksDBStore)
        assert len(s.answers(queries)) == len(queries)


# -- a dataset's messages table -----------------------------------------------------------


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("hygiene-more") / "gen", messages=300)


def _export(gen: GeneratedStore, dest: Path, **options: object) -> Path:
    with rmqarrow.open(gen.store, hash_slot_num=gen.hash_slot_num, index_num=gen.index_num) as s:
        s.export(dest, **options)  # type: ignore[arg-type]
    return dest


def test_scan_messages_of_a_dataset_exported_with_its_commitlog(
    gen: GeneratedStore, tmp_path: Path
) -> None:
    log = gen.root / "commitlog"
    ds = _export(gen, tmp_path / "ds", commitlog=log)
    want = [(r.physical_offset, r.topic) for r in CommitLogReader(log)]
    assert want
    with rmqarrow.open(ds) as s:
        assert isinstance(s, DatasetStore)
        got = s.scan("messages", columns=["physical_offset", "topic"]).read_all()
        assert got.column_names == ["physical_offset", "topic"]
        pairs = list(zip(*(got.column(c).to_pylist() for c in got.column_names), strict=True))
        assert sorted(pairs) == sorted(want)
        # every indexed record is a message of the table
        indexed = set(gen.records.column("commit_log_offset").to_pylist())
        assert indexed <= {o for o, _ in pairs}
        # the index tables still scan beside it
        assert s.scan("entries").read_all().num_rows > 0


def test_scan_messages_without_them_names_the_tables(gen: GeneratedStore, tmp_path: Path) -> None:
    ds = _export(gen, tmp_path / "ds")
    with rmqarrow.open(ds) as s:
        with pytest.raises(DatasetError) as caught:
            s.scan("messages")
        line = _one_line(caught.value)
        assert "no messages table" in line
        assert "this dataset has files, slots, entries" in line
        assert "export with commitlog=DIR to include the messages" in line
        with pytest.raises(InvalidValueError, match=r"unknown table 'message'.*messages"):
            s.scan("message")


# -- build given a directory as its records file ------------------------------------------


def test_build_from_a_directory_says_so(gen: GeneratedStore, tmp_path: Path) -> None:
    log = gen.root / "commitlog"
    for source in (log, gen.root):
        with pytest.raises(UsageError) as caught:
            rmqarrow.build(tmp_path / "store", records=source)
        line = _one_line(caught.value)
        assert line.startswith(f"{source}: a directory, not a records file")
        assert "Parquet, CSV or TSV" in line and "use commitlog=" in line
        assert not (tmp_path / "store").exists()
    # a missing file is still "no such file"
    with pytest.raises(FileNotFoundError, match="no such file"):
        rmqarrow.build(tmp_path / "store", records=tmp_path / "records.parquet")
    # the directory as a CommitLog builds, as the message says
    summary = rmqarrow.build(
        tmp_path / "store", commitlog=log, hash_slot_num=gen.hash_slot_num, index_num=gen.index_num
    )
    assert summary.records == gen.records.num_rows and summary.entries > 0
