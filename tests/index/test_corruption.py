"""Damaged files: every kind of damage gives a clear error or a bounded, defined answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow import CorruptIndexError, GeometryError, IndexFile, index_key_hash
from rmqarrow.format.layout import Geometry, map_regions

T0 = 1_700_000_000_000
S, N = 1, 16  # one slot: every key shares one chain


def make(tmp_path: Path, n: int = 5) -> Path:
    """A file whose single chain is 5 -> 4 -> 3 -> 2 -> 1, offsets 100 + position."""
    path = tmp_path / "f"
    with IndexFile.create(path, S, N) as f:
        for i in range(1, n + 1):
            f.put_key("k", 100 + i, T0 + i * 1000)
    return path


def damage(path: Path, **changes: dict[int, int]) -> None:
    m = map_regions(path, Geometry(S, N), writable=True)
    try:
        for field_name, values in changes.items():
            for position, value in values.items():
                if field_name == "slot":
                    m.slots[position] = value
                elif field_name in {"index_count", "hash_slot_count"}:
                    m.header[field_name] = value
                else:
                    m.entries[field_name][position] = value
    finally:
        m.close()


def lookup(path: Path, max_num: int = 100, begin: int = 0) -> list[int]:
    with IndexFile.open(path, S, N) as f:
        return f.select_phy_offsets("k", max_num, begin)


def test_intact_chain(tmp_path: Path) -> None:
    assert lookup(make(tmp_path)) == [105, 104, 103, 102, 101]


def test_truncated_file(tmp_path: Path) -> None:
    path = make(tmp_path)
    path.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(GeometryError, match=r"truncated.*found \d+ bytes"):
        IndexFile.open(path, S, N)
    path.write_bytes(b"")
    with pytest.raises(GeometryError, match=str(path)):
        IndexFile.open(path, S, N)


@pytest.mark.parametrize(
    ("field_name", "value", "message"),
    [("index_count", N + 1, "indexCount is 17"), ("hash_slot_count", -3, "hashSlotCount is -3")],
)
def test_garbage_header(tmp_path: Path, field_name: str, value: int, message: str) -> None:
    path = make(tmp_path)
    damage(path, **{field_name: {0: value}})
    with pytest.raises(CorruptIndexError, match=message):
        IndexFile.open(path, S, N)


def test_non_positive_index_count_reads_as_one(tmp_path: Path) -> None:
    path = make(tmp_path)
    damage(path, index_count={0: -5})
    with IndexFile.open(path, S, N) as f:
        assert f.index_count == 1
        assert f.select_phy_offsets("k", 10) == []  # indexCount <= 1: nothing is read


def test_self_loop_stops(tmp_path: Path) -> None:
    path = make(tmp_path)
    damage(path, prev_index={3: 3})
    assert lookup(path) == [105, 104, 103]


@pytest.mark.parametrize("cycle", [[3, 5], [2, 4, 5], [1, 2, 3, 4, 5]])
def test_cycles_of_any_length_end_the_walk(tmp_path: Path, cycle: list[int]) -> None:
    path = make(tmp_path)
    # the lowest position of the cycle points back up to its highest
    damage(path, prev_index={min(cycle): max(cycle)})
    got = lookup(path)
    assert len(got) == len(set(got)), "no position is read twice"
    assert got[: 6 - min(cycle)] == [105, 104, 103, 102, 101][: 6 - min(cycle)]


def test_cycle_with_max_num_larger_than_anything(tmp_path: Path) -> None:
    path = make(tmp_path)
    damage(path, prev_index={2: 4})
    assert lookup(path, max_num=2**31 - 1) == [105, 104, 103, 102]


@pytest.mark.parametrize("prev", [-1, -(2**31), 6, 2**31 - 1])
def test_prev_out_of_range_ends_the_chain(tmp_path: Path, prev: int) -> None:
    path = make(tmp_path)
    damage(path, prev_index={4: prev})
    assert lookup(path) == [105, 104]


@pytest.mark.parametrize("head", [0, -7, 6, 2**31 - 1])
def test_slot_head_out_of_range_reads_nothing(tmp_path: Path, head: int) -> None:
    path = make(tmp_path)
    damage(path, slot={0: head})
    assert lookup(path) == []


def test_negative_time_diff_stops_before_matching(tmp_path: Path) -> None:
    path = make(tmp_path)
    damage(path, time_diff={4: -1})
    assert lookup(path) == [105]


def test_head_at_the_end_of_a_full_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    with IndexFile.create(path, S, N) as f:
        for i in range(N - 1):
            f.put_key("k", i, T0)
    damage(path, slot={0: N})  # valid by count (== indexCount) but past the last position
    assert lookup(path) == []


def test_damaged_slot_value_becomes_a_chain_link(tmp_path: Path) -> None:
    # RocketMQ keeps a stored head only if 0 < head <= indexCount at the time of the put.
    path = tmp_path / "f"
    IndexFile.create(path, S, N).close()
    damage(path, slot={0: 3})
    with IndexFile.open(path, S, N, writable=True) as f:
        f.put_key("k", 1, T0)  # head 3 > indexCount 1: invalid, prev 0
        f.put_key("x", 2, T0)  # head is now 1: prev 1
        assert f.regions.entries["prev_index"][1:3].tolist() == [0, 1]
        assert f.hash_slot_count == 1


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_random_damage_never_hangs_or_crashes(tmp_path: Path, data: st.DataObject) -> None:
    path = tmp_path / "r"
    path.unlink(missing_ok=True)
    geometry = Geometry(3, 12)
    with IndexFile.create(path, 3, 12) as f:
        for i in range(11):
            f.put_key(f"k{i % 4}", i, T0 + i)
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 30))):
        at = data.draw(st.integers(40, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    path.write_bytes(bytes(raw))
    with IndexFile.open(path, geometry.hash_slot_num, geometry.index_num) as f:
        for key in ["k0", "k1", "k2", "k3", "zz"]:
            got = f.select_phy_offsets(key, 1000)
            assert len(got) <= 11
            stored = f.regions.entries[1:12]
            assert set(got) <= set(stored["phy_offset"].astype(np.int64).tolist())
            assert index_key_hash(key) >= 0
