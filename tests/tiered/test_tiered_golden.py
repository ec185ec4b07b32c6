"""The contract: bytes, put results and answers equal to RocketMQ's IndexStoreFile."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from tiered_golden_data import MANIFEST, TIERED, TieredSet

from rmqarrow.errors import TieredReadError
from rmqarrow.tiered import CompactedIndexFile, IndexItem, TieredIndexFile


def build(ts: TieredSet, path: Path) -> tuple[TieredIndexFile, list[tuple[str, str, int, int]]]:
    """Replay input.tsv, reopening where the manifest says; (open file, put results)."""
    f = TieredIndexFile.create(path, ts.file_timestamp, ts.hash_slot_num, ts.index_num)
    results = []
    for line, p in enumerate(ts.puts):
        if line in ts.reopen_before_lines:
            f.close()
            f = TieredIndexFile.open(path, ts.hash_slot_num, ts.index_num, writable=True)
        r = f.put_key(p.topic, p.topic_id, p.queue_id, p.keys, p.offset, p.size, p.store_timestamp)
        results.append((r.name, f.status.name, f.item_count, f.hash_slot_count))
    return f, results


def as_tuple(item: IndexItem) -> tuple[int, ...]:
    return (
        item.hash_code,
        item.topic_id,
        item.queue_id,
        item.offset,
        item.size,
        item.time_diff,
        item.next_index,
    )


def test_manifest_checksums() -> None:
    for name, entry in MANIFEST["sets"].items():
        for file_name, want in entry["files"].items():
            data = (TIERED / name / file_name).read_bytes()
            assert len(data) == want["bytes"], f"{name}/{file_name} size"
            assert hashlib.sha256(data).hexdigest() == want["sha256"], f"{name}/{file_name}"


def test_unsealed_bytes_and_put_results(tiered_set: TieredSet, tmp_path: Path) -> None:
    path = tmp_path / str(tiered_set.file_timestamp)
    f, results = build(tiered_set, path)
    with f:
        assert results == tiered_set.put_results
        rocketmq = tiered_set.meta["rocketmq"]
        assert isinstance(rocketmq, dict)
        assert f.end_timestamp == rocketmq["end_timestamp"]
        assert f.status.name == rocketmq["status_after_puts"]
    assert path.read_bytes() == (tiered_set.dir / "unsealed.bin").read_bytes()


def test_compacted_bytes(tiered_set: TieredSet, tmp_path: Path) -> None:
    f, _ = build(tiered_set, tmp_path / "local")
    with f:
        f.compact(tmp_path / "compacted")
        assert f.status.name == "SEALED"
    assert (tmp_path / "compacted").read_bytes() == (tiered_set.dir / "compacted.bin").read_bytes()


def test_unsealed_answers(tiered_set: TieredSet, tmp_path: Path) -> None:
    path = tmp_path / str(tiered_set.file_timestamp)
    path.write_bytes((tiered_set.dir / "unsealed.bin").read_bytes())
    with TieredIndexFile.open(path, tiered_set.hash_slot_num, tiered_set.index_num) as f:
        for i, (q, want) in enumerate(
            zip(tiered_set.queries, tiered_set.expected["unsealed"], strict=True)
        ):
            assert want.outcome == "ok"
            got = [as_tuple(x) for x in f.query(q.topic, q.key, q.max_count, q.begin, q.end)]
            assert got == want.items, f"query {i}: {q}"


def test_compacted_answers(tiered_set: TieredSet) -> None:
    with CompactedIndexFile.open(tiered_set.dir / "compacted.bin", tiered_set.hash_slot_num) as f:
        for i, (q, want) in enumerate(
            zip(tiered_set.queries, tiered_set.expected["compacted"], strict=True)
        ):
            if want.outcome.startswith("error:"):
                assert want.outcome == "error:TieredStoreException"
                with pytest.raises(TieredReadError):
                    f.query(q.topic, q.key, q.max_count, q.begin, q.end)
                continue
            assert want.outcome == "ok"
            got = [as_tuple(x) for x in f.query(q.topic, q.key, q.max_count, q.begin, q.end)]
            assert got == want.items, f"query {i}: {q}"
