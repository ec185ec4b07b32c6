"""Damaged files: clear rmqarrow errors or answers, never a hang or a stray exception."""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiered_golden_data import TIERED

from rmqarrow.errors import CorruptIndexError, GeometryError, RmqArrowError, TieredReadError
from rmqarrow.tiered import CompactedIndexFile, TieredIndexFile, key_hash

BASIC = TIERED / "tiered_basic"
S, N, BEGIN = 100, 400, 1_732_000_000_000
ALL = (-(1 << 63), (1 << 63) - 1)


def local_copy(tmp_path: Path) -> Path:
    path = tmp_path / str(BEGIN)
    path.write_bytes((BASIC / "unsealed.bin").read_bytes())
    return path


def poke(path: Path, offset: int, fmt: str, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    path.write_bytes(bytes(data))


def test_truncated_local_file(tmp_path: Path) -> None:
    path = local_copy(tmp_path)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(GeometryError, match=r"13627 bytes.*has 13628"):
        TieredIndexFile.open(path, S, N)
    path.write_bytes(b"")
    with pytest.raises(GeometryError):
        TieredIndexFile.open(path, S, N)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(GeometryError, match="hash_slot_num=101"):
        TieredIndexFile.open(local_copy(other), S + 1, N)


@pytest.mark.parametrize(
    ("offset", "fmt", "value", "message"),
    [
        (0, ">i", 0x12345678, "magic"),
        (24, ">i", N, "itemCount 400 outside"),
        (24, ">i", -1, "itemCount -1 outside"),
        (20, ">i", 48, "hashSlotCount 48"),
        (0, ">I", 0xBCC50285, "magic END does not match"),
    ],
)
def test_garbage_local_header(
    tmp_path: Path, offset: int, fmt: str, value: int, message: str
) -> None:
    path = local_copy(tmp_path)
    poke(path, offset, fmt, value)
    for writable in (False, True):
        with pytest.raises(CorruptIndexError, match=message):
            TieredIndexFile.open(path, S, N, writable=writable)


def _slot_pos(topic: str, key: str) -> int:
    return 28 + 8 * (key_hash(topic, key) % S)


def test_cycle_in_next_ends_the_walk(tmp_path: Path) -> None:
    path = local_copy(tmp_path)
    with TieredIndexFile.open(path, S, N) as f:
        head = f.item_count
        (item,) = f.query("TopicTest", "key-00", 10, *ALL)
    assert item.next_index == 0 and item.hash_code == key_hash("TopicTest", "key-00")
    # the key-00 slot leads to the newest item, whose next leads back to itself via key-00's
    poke(path, _slot_pos("TopicTest", "key-00"), ">i", head)
    poke(path, 28 + 8 * S + 32 * head + 28, ">i", 1)
    poke(path, 28 + 8 * S + 32 * 1 + 28, ">i", head)
    with TieredIndexFile.open(path, S, N) as f:
        got = f.query("TopicTest", "key-00", 1000, *ALL)
        assert [x.offset for x in got] == [50597824]  # each item once, then the walk ends
        with pytest.raises(CorruptIndexError, match="reached twice"):
            f.compaction_bytes()


def test_slot_pointing_outside(tmp_path: Path) -> None:
    path = local_copy(tmp_path)
    slot_pos = _slot_pos("TopicTest", "key-00")
    for bad in (N + 5, (1 << 31) - 1):
        poke(path, slot_pos, ">i", bad)
        with TieredIndexFile.open(path, S, N) as f:
            assert f.query("TopicTest", "key-00", 10, *ALL) == []  # beyond itemCount: no walk
            with pytest.raises(CorruptIndexError, match="past the last item"):
                f.compaction_bytes()
    poke(path, slot_pos, ">i", N - 1)  # inside the file, past itemCount: RocketMQ copies it
    with TieredIndexFile.open(path, S, N) as f:
        assert f.query("TopicTest", "key-00", 10, *ALL) == []
        assert len(f.compaction_bytes()) <= 28 + 8 * S + 28 * f.item_count


def test_compacted_damage(tmp_path: Path) -> None:
    data = (BASIC / "compacted.bin").read_bytes()
    path = tmp_path / "c"
    path.write_bytes(data[:-5])
    with pytest.raises(GeometryError, match="28 \\+ 8\\*S"):
        CompactedIndexFile.open(path, S)
    path.write_bytes(b"\0" * 4 + data[4:])
    with pytest.raises(CorruptIndexError, match="magic"):
        CompactedIndexFile.open(path, S)
    slot_pos = _slot_pos("TopicTest", "key-00")
    bad = bytearray(data)
    struct.pack_into(">ii", bad, slot_pos, len(data) + 10, 28)  # points past the end
    path.write_bytes(bytes(bad))
    with CompactedIndexFile.open(path, S) as c, pytest.raises(TieredReadError, match="outside"):
        c.query("TopicTest", "key-00", 5, *ALL)
    struct.pack_into(">ii", bad, slot_pos, len(data) - 30, 56)  # shortened: not whole items
    path.write_bytes(bytes(bad))
    with CompactedIndexFile.open(path, S) as c:
        assert c.query("TopicTest", "key-00", 5, *ALL) == []


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    compacted=st.booleans(),
    damage=st.lists(
        st.tuples(st.integers(0, 13_627), st.integers(0, 255)), min_size=1, max_size=12
    ),
    cut=st.one_of(st.none(), st.integers(0, 13_628)),
    keys=st.lists(
        st.sampled_from(["key-00", "key-01", "order-1001", "", "Aa"]), min_size=1, max_size=3
    ),
)
def test_random_damage_never_crashes(
    tmp_path: Path,
    compacted: bool,
    damage: list[tuple[int, int]],
    cut: int | None,
    keys: list[str],
) -> None:
    src = BASIC / ("compacted.bin" if compacted else "unsealed.bin")
    data = bytearray(src.read_bytes())
    for pos, byte in damage:
        if pos < len(data):
            data[pos] = byte
    if cut is not None:
        data = data[:cut]
    path = tmp_path / ("c" if compacted else str(BEGIN))
    path.unlink(missing_ok=True)
    path.write_bytes(bytes(data))
    try:
        f: TieredIndexFile | CompactedIndexFile = (
            CompactedIndexFile.open(path, S) if compacted else TieredIndexFile.open(path, S, N)
        )
    except RmqArrowError:
        return
    with f:
        for key in keys:
            try:
                f.query("TopicTest", key, 3, *ALL)
            except TieredReadError:
                assert compacted
        if isinstance(f, TieredIndexFile):
            with contextlib.suppress(CorruptIndexError):
                f.compaction_bytes()
