"""Golden conformance: RocketMQ's own RIP-82 classes wrote every pair and every answer."""

from __future__ import annotations

from pathlib import Path

from rocksdb_golden_data import RocksDBSet

from rmqarrow.rocksdb import RocksDBIndex
from rmqarrow.rocksdb._tsv import (
    format_answer,
    read_deletions,
    read_expected,
    read_messages,
    read_queries,
)


def rebuild(s: RocksDBSet, dest: Path) -> None:
    """input.tsv then deletions.tsv through the Python contract, one call a line."""
    with RocksDBIndex.create(dest) as w:
        for m in read_messages(s.dir / "input.tsv"):
            w.build_index(
                m.topic,
                m.keys,
                m.tags,
                m.uniq_key,
                m.commit_log_offset,
                m.store_timestamp,
                m.sys_flag,
                m.msg_size,
            )
        for call, t, hours in read_deletions(s.dir / "deletions.tsv"):
            if call == "expired_commitlog_creation_time":
                w.delete_expired_index(t)
            else:
                assert hours is not None
                w.delete_records_for_index(t, hours)


def test_rebuild_gives_exactly_the_pairs(rocksdb_set: RocksDBSet, tmp_path: Path) -> None:
    rebuild(rocksdb_set, tmp_path / "db")
    expected = rocksdb_set.pairs()
    with RocksDBIndex.open(tmp_path / "db") as r:
        for family, pairs in expected.items():
            assert r.pairs(family) == pairs, family


def test_golden_db_reads_back_the_pairs(rocksdb_set: RocksDBSet) -> None:
    with RocksDBIndex.open(rocksdb_set.db) as r:
        assert r.column_families() == ["default", "timer", "trans"]
        for family, pairs in rocksdb_set.pairs().items():
            assert r.pairs(family) == pairs, family


def test_every_query_answers_as_rocketmq(rocksdb_set: RocksDBSet) -> None:
    queries = read_queries(rocksdb_set.dir / "queries.tsv")
    expected = read_expected(rocksdb_set.dir / "expected.tsv")
    assert len(queries) == len(expected)
    with RocksDBIndex.open(
        rocksdb_set.db,
        max_msgs_num_batch=rocksdb_set.max_msgs_num_batch,
        max_query_days=rocksdb_set.max_query_days,
    ) as r:
        got = [format_answer(a) for a in r.answers(queries)]
    wrong = [
        (i, queries[i], got[i], expected[i]) for i in range(len(queries)) if got[i] != expected[i]
    ]
    assert not wrong, wrong[:5]
