"""The reader against RocketMQ's own decoding of the golden store (messages.tsv)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pytest

from rmqarrow.commitlog import (
    CommitLogReader,
    Record,
    body_crc,
    index_records,
    iter_records,
    list_commitlog_files,
)


def _row(r: Record) -> dict[str, object]:
    body = r.read_body()
    return {
        "physical_offset": r.physical_offset,
        "total_size": r.total_size,
        "magic": f"V{r.version}",
        "queue_id": r.queue_id,
        "queue_offset": r.queue_offset,
        "sys_flag": r.sys_flag,
        "born_timestamp": r.born_timestamp,
        "store_timestamp": r.store_timestamp,
        "born_host": r.born_host,
        "store_host": r.store_host,
        "topic": r.topic,
        "tags": r.tags,
        "keys": r.keys,
        "uniq_key": r.uniq_key,
        "body_crc": r.body_crc,
        "body_length": len(body),
        "properties": r.properties_text,
        "flag": r.flag,
        "reconsume_times": r.reconsume_times,
        "prepared_transaction_offset": r.prepared_transaction_offset,
        "msg_id": r.msg_id,
        "body_sha256": hashlib.sha256(body).hexdigest(),
    }


def test_every_record_every_column(
    golden_commitlog: Path, messages_tsv: list[dict[str, object]]
) -> None:
    got = [_row(r) for r in iter_records(golden_commitlog)]
    assert len(got) == len(messages_tsv) == 300
    for g, e in zip(got, messages_tsv, strict=True):
        assert g == e, e["physical_offset"]


def test_files_and_mapped_size(golden_commitlog: Path) -> None:
    files = list_commitlog_files(golden_commitlog)
    assert [f.start_offset for f in files] == [0, 65536, 131072]
    reader = CommitLogReader(golden_commitlog)
    assert reader.mapped_file_size == 65536
    assert reader.problems == []


def test_stored_crc_is_the_body_crc(golden_commitlog: Path) -> None:
    for r in iter_records(golden_commitlog):
        assert body_crc(r.read_body()) == r.body_crc


def test_compressed_bodies_inflate(golden_commitlog: Path) -> None:
    kinds = set()
    for r in iter_records(golden_commitlog):
        if r.compression is None:
            assert r.read_body(inflate_body=True) == r.read_body()
            continue
        kinds.add(r.compression)
        text = r.read_body(inflate_body=True)
        assert 4096 <= len(text) <= 9 * 1024
        assert len(text) > r.body_length
        text.decode("utf-8")  # the generator compressed text bodies
    assert kinds == {"lz4", "zlib"}


def test_properties_dict_follows_rocketmq_rule(golden_commitlog: Path) -> None:
    for r in iter_records(golden_commitlog):
        props = r.properties
        assert props.get("KEYS") == r.keys
        assert r.key_list == [k for k in (r.keys or "").split(" ") if k]
        assert r.properties_text.endswith("\x02")


def test_v2_records_and_topic_lengths(golden_commitlog: Path) -> None:
    by_len = {
        len(r.topic): r.version for r in iter_records(golden_commitlog) if len(r.topic) >= 127
    }
    assert by_len == {127: 1, 128: 2, 200: 2, 300: 2}


def test_start_offset_resumes_at_a_record(
    golden_commitlog: Path, messages_tsv: list[dict[str, object]]
) -> None:
    offsets = [int(str(m["physical_offset"])) for m in messages_tsv]
    for start in (offsets[0], offsets[91], offsets[92], offsets[250]):
        got = [r.physical_offset for r in iter_records(golden_commitlog, start_offset=start)]
        assert got == [o for o in offsets if o >= start]


def test_read_record_at_offset(
    golden_commitlog: Path, messages_tsv: list[dict[str, object]]
) -> None:
    reader = CommitLogReader(golden_commitlog)
    for m in messages_tsv[::37]:
        r = reader.read_record(int(str(m["physical_offset"])))
        assert r.topic == m["topic"]
        assert r.uniq_key == m["uniq_key"]


@pytest.mark.parametrize("batch_rows", [1, 7, 65536])
def test_index_records_equals_full_reader(golden_commitlog: Path, batch_rows: int) -> None:
    batches = list(index_records(golden_commitlog, batch_rows=batch_rows))
    assert all(b.num_rows <= batch_rows for b in batches)
    table = pa.Table.from_batches(batches)
    expected = [
        {
            "topic": r.topic,
            "keys": r.keys,
            "uniq_key": r.uniq_key,
            "commit_log_offset": r.physical_offset,
            "store_timestamp": r.store_timestamp,
            "sys_flag": r.sys_flag,
        }
        for r in iter_records(golden_commitlog)
    ]
    assert table.to_pylist() == expected


def test_index_records_start_offset(golden_commitlog: Path) -> None:
    all_rows = pa.Table.from_batches(list(index_records(golden_commitlog))).to_pylist()
    start = all_rows[100]["commit_log_offset"]
    rows = pa.Table.from_batches(
        list(index_records(golden_commitlog, start_offset=start))
    ).to_pylist()
    assert rows == all_rows[100:]


def test_recover_start_offset(
    golden_commitlog: Path, messages_tsv: list[dict[str, object]]
) -> None:
    reader = CommitLogReader(golden_commitlog)
    firsts = {}
    for m in messages_tsv:
        off = int(str(m["physical_offset"]))
        firsts.setdefault(off // 65536 * 65536, int(str(m["store_timestamp"])))
    assert sorted(firsts) == [0, 65536, 131072]
    f0, f1, f2 = firsts[0], firsts[65536], firsts[131072]
    assert reader.recover_start_offset(f0 - 1) == 0  # no file matches: the oldest
    assert reader.recover_start_offset(f0) == 0
    assert reader.recover_start_offset(f1) == 65536
    assert reader.recover_start_offset(f2 - 1) == (65536 if f2 - 1 >= f1 else 0)
    assert reader.recover_start_offset(2**63 - 1) == 131072
