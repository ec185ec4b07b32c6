"""Rebuilding from a CommitLog gives RocketMQ's pairs; check finds what RocketMQ misreads."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from rocksdb_golden_data import ALL_ROCKSDB, RocksDBSet
from rocksdb_live import damaged

from rmqarrow.commitlog import CommitLogReader
from rmqarrow.commitlog.writer import Message, write_commitlog
from rmqarrow.rocksdb import RocksDBIndex, build_from_commitlog, check_rocksdb
from rmqarrow.rocksdb._tsv import read_messages

L = struct.Struct(">q")
BASIC = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_basic")


def commitlog_of(s: RocksDBSet, d: Path) -> dict[int, int]:
    """The set's messages as a real CommitLog; golden offset -> CommitLog offset."""
    msgs = read_messages(s.dir / "input.tsv")
    assert [m.commit_log_offset for m in msgs] == sorted(m.commit_log_offset for m in msgs)
    write_commitlog(
        d,
        [
            Message(
                topic=m.topic or "",
                keys=m.keys,
                tags=m.tags,
                uniq_key=m.uniq_key,
                sys_flag=m.sys_flag,
                store_timestamp=m.store_timestamp,
                body=b"x",
            )
            for m in msgs
        ],
        mapped_file_size=1 << 16,
    )
    offsets = [r.physical_offset for r in CommitLogReader(d).records()]
    return dict(zip([m.commit_log_offset for m in msgs], offsets, strict=True))


def test_rebuild_from_a_commitlog_gives_rocketmqs_pairs(tmp_path: Path) -> None:
    s = BASIC
    moved = commitlog_of(s, tmp_path / "commitlog")
    expected = []
    for k, v in s.pairs()["default"]:
        if k == b"lastOffsetPy":
            v = L.pack(moved[L.unpack(v)[0]])
        elif k != b"lastStoreTimeStamp":
            k = k[:-8] + L.pack(moved[L.unpack(k[-8:])[0]])
        expected.append((k, v))
    result = build_from_commitlog(tmp_path / "commitlog", tmp_path / "store" / "rocksdbstore")
    assert result.messages == len(moved)
    with RocksDBIndex.open(tmp_path / "store") as r:
        assert r.pairs() == sorted(expected)
    assert not list((tmp_path / "store").glob(".*building"))
    assert check_rocksdb(tmp_path / "store", commitlog=tmp_path / "commitlog").ok


def test_check_reports_each_kind_of_damage(tmp_path: Path) -> None:
    damaged(tmp_path / "db")
    result = check_rocksdb(tmp_path / "db")
    assert not result.ok
    assert result.counts == {
        "unparsed_key": 1,
        "value_size": 1,
        "hour_mismatch": 1,
        "bookkeeping_behind": 1,
    }
    assert result.records == 4 and result.last_offset_py == 100
    assert result.to_dict()["findings"][0]["severity"] == "error"


@pytest.mark.slow
def test_check_against_the_commitlog_span(tmp_path: Path) -> None:
    commitlog_of(BASIC, tmp_path / "commitlog")
    build_from_commitlog(tmp_path / "commitlog", tmp_path / "db")
    late = tmp_path / "late"
    write_commitlog(
        late, [Message(topic="T", uniq_key="U1", body=b"x", store_timestamp=1_900_000_000_000)]
    )
    result = check_rocksdb(tmp_path / "db", commitlog=late)  # expiry's leftovers: warnings
    assert result.ok and result.counts["outside_commitlog"] == result.hours
    early = tmp_path / "early"
    write_commitlog(
        early, [Message(topic="T", uniq_key="U1", body=b"x", store_timestamp=1_000_000_000_000)]
    )
    result = check_rocksdb(tmp_path / "db", commitlog=early)  # newer than the CommitLog
    assert not result.ok and result.counts["outside_commitlog"] == result.hours
