"""IndexFile: the API around the golden-checked core (creation, opening, rules, errors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqarrow import (
    GeometryError,
    IndexFile,
    InvalidKeyError,
    InvalidValueError,
    OutputExistsError,
    ReadOnlyIndexError,
    RmqArrowError,
    StoreNotFoundError,
)

T0 = 1_700_000_000_000


def test_create_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"user data")
    with pytest.raises(OutputExistsError, match="never replaced"):
        IndexFile.create(path, 4, 8)
    assert path.read_bytes() == b"user data"
    with pytest.raises(FileExistsError):  # the built-in it also is
        IndexFile.create(path, 4, 8)


def test_fresh_file_header_and_capacity(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, 3) as f:
        assert (f.index_count, f.entry_count, f.capacity) == (1, 0, 2)
        assert f.put_key("a", 1, T0) and f.put_key("b", 2, T0)
        assert f.is_write_full()
        assert f.put_key("c", 3, T0) is False  # position 0 unused: 3 positions hold 2
        assert f.end_phy_offset == 2
    raw = (tmp_path / "f").read_bytes()
    assert len(raw) == 40 + 4 * 4 + 20 * 3
    assert int.from_bytes(raw[36:40], "big") == 3  # indexCount written on close


def test_empty_file_is_flushed_with_index_count_one(tmp_path: Path) -> None:
    IndexFile.create(tmp_path / "f", 2, 4).close()
    raw = (tmp_path / "f").read_bytes()
    assert raw[:36] == bytes(36) and int.from_bytes(raw[36:40], "big") == 1


def test_rolled_file_is_seeded_and_first_entry_rule(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8, end_phy_offset=500, end_timestamp=T0) as f:
        assert (f.begin_phy_offset, f.end_phy_offset, f.begin_timestamp) == (500, 500, T0)
        f.put_key("k", 600, T0 + 7_500)  # diff against the seed: 7 s
        f.put_key("k", 601, T0 + 9_000)  # against the new begin T0+7.5 s: 1 s
        assert f.begin_timestamp == T0 + 7_500 and f.begin_phy_offset == 600
        diffs = f.regions.entries["time_diff"][1:3].tolist()
    assert diffs == [7, 1]


def test_first_store_time_not_positive_zeroes_every_diff(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        f.put_key("k", 1, 0)
        f.put_key("k", 2, T0)
        assert f.regions.entries["time_diff"][1:3].tolist() == [0, 0]
        assert f.select_phy_offsets("k", 10) == [2, 1]


def test_time_diff_clamping(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        f.put_key("k", 1, 1000)
        f.put_key("k", 2, 500)  # earlier than begin: clamped to 0
        f.put_key("k", 3, 2**63 - 1)  # overflowing the int: clamped to Integer.MAX_VALUE
        f.put_key("k", 4, -(2**63))  # wraps in Java long arithmetic, then clamps
        assert f.regions.entries["time_diff"][1:5].tolist() == [0, 0, 2**31 - 1, 2**31 - 1]


def test_walk_stops_at_first_entry_older_than_begin(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 1, 10) as f:
        f.put_key("a", 1, 10_000)
        f.put_key("a", 2, 20_000)
        f.put_key("a", 3, 15_000)
        assert f.select_phy_offsets("a", 10, 15_000) == [3, 2]
        assert f.select_phy_offsets("a", 10, 15_001) == []  # the 15 s entry ends the walk
        assert f.select_phy_offsets("a", 1) == [3]
        assert f.select_phy_offsets("a", 0) == []


def test_equal_hashes_are_not_told_apart(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 3, 10) as f:
        f.put_key("Aa", 1, T0)
        f.put_key("BB", 2, T0)
        assert f.select_phy_offsets("Aa", 10) == [2, 1]
        assert f.hash_slot_count == 1


def test_is_time_matched(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 3, 10) as f:
        f.put_key("a", 1, 10_000)
        f.put_key("a", 2, 20_000)
        assert f.is_time_matched(5_000, 30_000)  # spans the file
        assert f.is_time_matched(15_000, 16_000)  # inside
        assert f.is_time_matched(0, 10_000)  # touches the begin
        assert not f.is_time_matched(21_000, 30_000)
        assert not f.is_time_matched(0, 9_999)


def test_open_checks_geometry_and_says_what_fits(tmp_path: Path) -> None:
    IndexFile.create(tmp_path / "f", 10, 40).close()
    with pytest.raises(GeometryError) as err:
        IndexFile.open(tmp_path / "f")
    text = str(err.value)
    assert "expected 420000040 bytes" in text and "found 880 bytes" in text
    assert "hash_slot_num=10 index_num=40" in text
    with pytest.raises(GeometryError, match="larger than the geometry"):
        IndexFile.open(tmp_path / "f", 5, 20)


def test_read_only_refuses_writes_and_changes_nothing(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        f.put_key("a", 1, T0)
    before = (tmp_path / "f").read_bytes()
    with IndexFile.open(tmp_path / "f", 4, 8) as f:
        with pytest.raises(ReadOnlyIndexError, match="read-only"):
            f.put_key("b", 2, T0)
        f.flush()
        assert f.select_phy_offsets("a", 5) == [1]
    assert (tmp_path / "f").read_bytes() == before


def test_reopen_writable_and_continue(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        f.put_key("a", 1, T0)
    with IndexFile.open(tmp_path / "f", 4, 8, writable=True) as f:
        f.put_key("a", 2, T0 + 1000)
    with IndexFile.open(tmp_path / "f", 4, 8) as f:
        assert f.select_phy_offsets("a", 5) == [2, 1]
        assert f.index_count == 3


@pytest.mark.parametrize("bad", [None, 5, b"k"])
def test_bad_keys(tmp_path: Path, bad: object) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        with pytest.raises(InvalidKeyError):
            f.put_key(bad, 1, T0)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            f.select_phy_offsets(bad, 1)  # type: ignore[arg-type]
        assert f.index_count == 1


@pytest.mark.parametrize("offset", [2**63, -(2**63) - 1, 1.5, "7", True])
def test_bad_numbers(tmp_path: Path, offset: object) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8) as f, pytest.raises(InvalidValueError):
        f.put_key("k", offset, T0)  # type: ignore[arg-type]


def test_closed_file_and_missing_paths(tmp_path: Path) -> None:
    f = IndexFile.create(tmp_path / "f", 4, 8)
    f.close()
    f.close()
    with pytest.raises(RmqArrowError, match="closed"):
        f.select_phy_offsets("a", 1)
    with pytest.raises(StoreNotFoundError):
        IndexFile.open(tmp_path / "missing", 4, 8)
    with pytest.raises(RmqArrowError, match="parent directory"):
        IndexFile.create(tmp_path / "no" / "f", 4, 8)
    with pytest.raises(GeometryError):
        IndexFile.create(tmp_path / "g", 0, 8)
    with pytest.raises(GeometryError, match="Java int"):
        IndexFile.create(tmp_path / "g", 5_000_000, 200_000_000)
    assert not (tmp_path / "g").exists()
