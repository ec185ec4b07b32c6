"""TieredIndexFile and CompactedIndexFile beyond the golden sets: API, rules, edge cases."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from tiered_golden_data import MANIFEST, TieredSet

from rmqarrow.errors import (
    InvalidKeyError,
    InvalidValueError,
    OutputExistsError,
    ReadOnlyIndexError,
    StoreNotFoundError,
    TieredReadError,
)
from rmqarrow.format.java import java_rem
from rmqarrow.tiered import (
    BEGIN_MAGIC,
    END_MAGIC,
    AppendResult,
    CompactedIndexFile,
    FileStatus,
    TieredIndexFile,
    key_hash,
    segment_dir,
    segment_file_name,
)
from rmqarrow.tiered.layout import binary as layout

MIN_TOPIC, MIN_KEY = "OrderTopic", "minhash1-9ty59h2xf"  # hash Integer.MIN_VALUE (tiered_random)
BEGIN = 1_732_000_000_000


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_struct_formats_match_dtypes() -> None:
    assert layout.HEADER_STRUCT.size == layout.HEADER_DTYPE.itemsize == layout.HEADER_SIZE
    assert layout.ITEM_STRUCT.size == layout.ITEM_DTYPE.itemsize == layout.ITEM_SIZE
    assert layout.COMPACT_ITEM_STRUCT.size == layout.COMPACT_ITEM_DTYPE.itemsize == 28
    assert layout.SLOT_DTYPE.itemsize == layout.COMPACT_SLOT_DTYPE.itemsize == 8
    assert np.int32(np.uint32(0xBCC50289).view(np.int32)) == layout.BEGIN_MAGIC
    assert END_MAGIC == (0xCCDDEEFF ^ (1880681586 + 8)) - (1 << 32)
    assert BEGIN_MAGIC == (0xCCDDEEFF ^ (1880681586 + 4)) - (1 << 32)


def test_min_value_hash_stays_negative() -> None:
    assert key_hash(MIN_TOPIC, MIN_KEY) == -(1 << 31)
    assert key_hash("TopicC", "Aa") == key_hash("TopicC", "BB")
    assert key_hash("T#x", "y") == key_hash("T", "x#y")


def test_create_refuses_existing_and_missing_folder(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"keep")
    with pytest.raises(OutputExistsError):
        TieredIndexFile.create(tmp_path / "x", BEGIN, 4, 8)
    assert (tmp_path / "x").read_bytes() == b"keep"
    with pytest.raises(StoreNotFoundError):
        TieredIndexFile.create(tmp_path / "no" / "x", BEGIN, 4, 8)
    with pytest.raises(StoreNotFoundError):
        TieredIndexFile.open(tmp_path / "absent", 4, 8)


def test_new_file_header_and_properties(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / str(BEGIN), BEGIN, 4, 8) as f:
        assert (f.begin_timestamp, f.end_timestamp, f.item_count, f.hash_slot_count) == (
            BEGIN,
            0,
            0,
            0,
        )
        assert f.magic == BEGIN_MAGIC and f.status.name == "UNSEALED" and f.writable
        assert (f.hash_slot_num, f.index_num) == (4, 8)
        assert "TieredIndexFile" in repr(f)
    assert f.status is FileStatus.SHUTDOWN
    f.close()  # twice is harmless
    with pytest.raises(InvalidValueError):
        f.query("T", "k", 1, 0, 1)
    assert (tmp_path / str(BEGIN)).stat().st_size == 28 + 8 * 4 + 32 * 8


def test_read_only_open_changes_no_byte(tiered_set: TieredSet, tmp_path: Path) -> None:
    path = tmp_path / str(tiered_set.file_timestamp)
    path.write_bytes((tiered_set.dir / "unsealed.bin").read_bytes())
    before = sha(path)
    with TieredIndexFile.open(path, tiered_set.hash_slot_num, tiered_set.index_num) as f:
        for q in tiered_set.queries[:20]:
            f.query(q.topic, q.key, q.max_count, q.begin, q.end)
        f.compaction_bytes()
        f.flush()
        with pytest.raises(ReadOnlyIndexError):
            f.put_key("T", 1, 1, ["k"], 0, 1, BEGIN)
    assert sha(path) == before


def test_writable_reopen_resets_end_timestamp(tmp_path: Path) -> None:
    path = tmp_path / str(BEGIN)
    with TieredIndexFile.create(path, BEGIN, 4, 8) as f:
        assert f.put_key("T", 1, 1, ["k"], 0, 1, BEGIN + 9_000) is AppendResult.SUCCESS
        assert f.end_timestamp == BEGIN + 9_000
    with TieredIndexFile.open(path, 4, 8) as f:
        assert f.end_timestamp == BEGIN + 9_000  # read-only: the stored value
    with TieredIndexFile.open(path, 4, 8, writable=True) as f:
        assert f.end_timestamp == BEGIN  # RocketMQ reads it at offset 4
        assert f.item_count == 1 and f.status is FileStatus.UNSEALED
    with TieredIndexFile.open(path, 4, 8) as f:
        assert f.end_timestamp == BEGIN


def test_reopen_matches_manifest() -> None:
    meta = MANIFEST["sets"]["tiered_random"]["rocketmq"]["reopens"][0]
    assert meta["end_timestamp_after"] == MANIFEST["sets"]["tiered_random"]["file_timestamp"]


def test_begin_timestamp_from_name_then_header(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / "odd-name", BEGIN, 4, 8):
        pass
    with TieredIndexFile.open(tmp_path / "odd-name", 4, 8) as f:
        assert f.begin_timestamp == BEGIN
    (tmp_path / "123").write_bytes((tmp_path / "odd-name").read_bytes())
    with TieredIndexFile.open(tmp_path / "123", 4, 8) as f:
        assert f.begin_timestamp == 123
    with TieredIndexFile.open(tmp_path / "123", 4, 8, begin_timestamp=7) as f:
        assert f.begin_timestamp == 7


def test_put_check_order_and_early_sealing(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / "f", BEGIN, 2, 3) as f:
        assert f.put_key(" \t\u2028", 1, 1, ["k"], 0, 1, BEGIN) is AppendResult.UNKNOWN_ERROR
        assert f.put_key("\u00a0", 1, 1, ["k"], 0, 1, BEGIN) is AppendResult.SUCCESS  # NBSP
        assert f.put_key("T", 1, 1, ["a", "b"], 0, 1, BEGIN) is AppendResult.FILE_FULL
        assert f.status is FileStatus.SEALED and f.item_count == 1  # 1 + 2 >= 3 sealed it
        assert f.put_key("T", 1, 1, ["a"], 0, 1, BEGIN) is AppendResult.FILE_FULL
        assert f.put_key("T", 1, 1, [], 0, 1, BEGIN) is AppendResult.SUCCESS
        assert f.put_key("", 1, 1, [], 0, 1, BEGIN) is AppendResult.UNKNOWN_ERROR


def test_full_file_gets_end_magic(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / "f", BEGIN, 2, 4) as f:
        assert f.put_key("T", 1, 1, ["a", "b", "a"], 0, 1, BEGIN) is AppendResult.SUCCESS
        assert f.magic == BEGIN_MAGIC and f.item_count == 2  # duplicates dropped
        assert f.put_key("T", 1, 1, ["c"], 0, 1, BEGIN) is AppendResult.SUCCESS
        assert f.magic == END_MAGIC and f.item_count == 3
        assert f.put_key("T", 1, 1, ["d"], 0, 1, BEGIN) is AppendResult.FILE_FULL


def test_argument_checks(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / "f", BEGIN, 2, 4) as f:
        with pytest.raises(InvalidKeyError):
            f.put_key("T", 1, 1, "abc", 0, 1, BEGIN)
        with pytest.raises(InvalidKeyError):
            f.put_key("T", 1, 1, [b"x"], 0, 1, BEGIN)  # type: ignore[list-item]
        with pytest.raises(InvalidValueError):
            f.put_key("T", 1 << 31, 1, ["k"], 0, 1, BEGIN)
        with pytest.raises(InvalidValueError):
            f.put_key("T", 1, 1, ["k"], 1 << 63, 1, BEGIN)
        with pytest.raises(InvalidValueError):
            f.query("T", "k", 1, "0", 1)  # type: ignore[arg-type]
        assert f.item_count == 0
    with pytest.raises(InvalidValueError):
        TieredIndexFile.create(tmp_path / "g", BEGIN, 0, 4)
    with pytest.raises(InvalidValueError):
        TieredIndexFile.create(tmp_path / "g", BEGIN, 1, 1 << 30)


def test_time_diff_truncates_toward_zero_and_wraps(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / "f", BEGIN, 4, 16) as f:
        f.put_key("T", 1, 1, ["neg"], 0, 1, BEGIN - 1_500)
        f.put_key("T", 1, 1, ["max"], 0, 1, (1 << 63) - 1)
        (neg,) = f.query("T", "neg", 5, BEGIN - 1_000, BEGIN - 1_000)
        assert neg.time_diff == -1 and neg.store_time(BEGIN) == BEGIN - 1_000
        assert f.query("T", "neg", 5, BEGIN - 1_500, BEGIN - 1_500) == []
        (big,) = f.query("T", "max", 5, -(1 << 63), (1 << 63) - 1)
        want = ((((1 << 63) - 1 - BEGIN) // 1000) + (1 << 31)) % (1 << 32) - (1 << 31)
        assert big.time_diff == want


@pytest.mark.parametrize("slots", [797, 3, 5, 16])
def test_min_value_hash_per_geometry(tmp_path: Path, slots: int) -> None:
    """Negative slot: put fails after earlier keys; header slot: item unreachable; 0: fine."""
    slot = java_rem(-(1 << 31), slots)
    with TieredIndexFile.create(tmp_path / "f", BEGIN, slots, 64) as f:
        r = f.put_key(MIN_TOPIC, 1, 2, ["before", MIN_KEY, "after"], 10, 20, BEGIN)
        local = f.query(MIN_TOPIC, MIN_KEY, 10, -(1 << 63), (1 << 63) - 1)
        f.compact(tmp_path / "c")
        count = f.item_count
    with CompactedIndexFile.open(tmp_path / "c", slots) as c:
        if slot == 0:
            assert r is AppendResult.SUCCESS and count == 3 and len(local) == 1
            assert len(c.query(MIN_TOPIC, MIN_KEY, 10, -(1 << 63), (1 << 63) - 1)) == 1
        elif layout.slot_position(slot) < 0:
            assert r is AppendResult.UNKNOWN_ERROR and count == 1 and local == []
            with pytest.raises(TieredReadError):
                c.query(MIN_TOPIC, MIN_KEY, 10, -(1 << 63), (1 << 63) - 1)
        else:  # the slot lies in the header: written, reachable from no slot, dropped
            assert r is AppendResult.SUCCESS and count == 3
            assert c.size == 28 + 8 * slots + 28 * 2
            assert len(c.query(MIN_TOPIC, "after", 10, -(1 << 63), (1 << 63) - 1)) == 1


def test_empty_file_compacts_to_nothing(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / "f", BEGIN, 4, 8) as f:
        f.compact(tmp_path / "c")
        with pytest.raises(OutputExistsError):
            f.compact(tmp_path / "c")
    assert (tmp_path / "c").read_bytes() == b""
    with CompactedIndexFile.open(tmp_path / "c", 4, begin_timestamp=BEGIN) as c:
        assert c.query("T", "k", 5, 0, 1 << 62) == [] and c.status is FileStatus.UPLOAD
        assert c.begin_timestamp == BEGIN and c.size == 0


def test_segment_path_matches_rocketmq() -> None:
    for entry in MANIFEST["sets"].values():
        want = entry["rocketmq"]["rocketmq_paths"]["segment"]
        got = segment_dir("tiered", entry["cluster_name"], entry["broker_name"])
        assert str(got / segment_file_name(0)) == want
