"""IndexFile.put_keys leaves exactly the bytes of put_key on each key, in order."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from golden_data import GoldenSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow import IndexFile, InvalidKeyError, InvalidValueError, ReadOnlyIndexError
from rmqarrow.kernels import put as _bulk

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
T0 = 1_700_000_000_000


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_golden_bulk_writer_is_byte_identical(
    golden: GoldenSet,
    tmp_path: Path,
    chunk: int | None,
    monkeypatch: pytest.MonkeyPatch,
    bulk_writer: Callable[[GoldenSet, Path], list[Path]],
) -> None:
    if chunk is not None:
        monkeypatch.setattr(_bulk, "CHUNK", chunk)
    paths = bulk_writer(golden, tmp_path)
    assert [p.name for p in paths] == list(golden.files)
    for mine, theirs in zip(paths, golden.file_paths, strict=True):
        assert mine.read_bytes() == theirs.read_bytes(), f"{golden.name}/{theirs.name} differs"


# -- property: bulk == sequential ------------------------------------------------------------

KEYS = st.one_of(
    st.sampled_from(
        [
            "Aa",
            "BB",
            "AaAa",
            "BBBB",
            "AaBB",
            "",
            "a",
            "polygenelubricants",
            "😀",
            "é",
            "T#k1",
            "T#k2",
        ]
    ),
    st.text(max_size=12),
)
STAMPS = st.one_of(
    st.sampled_from(
        [
            0,
            -1,
            1,
            999,
            1000,
            1001,
            LONG_MIN,
            LONG_MAX,
            T0,
            T0 + 1,
            T0 - 1,
            T0 + 2**31 * 1000,
            LONG_MAX - 1,
        ]
    ),
    st.integers(T0 - 10**7, T0 + 10**7),
    st.integers(LONG_MIN, LONG_MAX),
)
OFFSETS = st.one_of(st.integers(LONG_MIN, LONG_MAX), st.integers(-5, 10**6))
PUT = st.tuples(KEYS, OFFSETS, STAMPS)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    slots = draw(st.integers(1, 6))
    index_num = draw(st.integers(1, 14))
    seed = (draw(st.sampled_from([0, -7, 500])), draw(st.sampled_from([0, -3, T0, LONG_MAX])))
    before = draw(st.lists(PUT, max_size=6))
    batch = draw(st.lists(PUT, max_size=20))
    damage = draw(
        st.lists(st.tuples(st.integers(0, slots - 1), st.integers(-3, index_num + 3)), max_size=4)
    )
    return {
        "slots": slots,
        "index_num": index_num,
        "seed": seed,
        "before": before,
        "batch": batch,
        "damage": damage,
    }


def _prepare(path: Path, sc: dict[str, object]) -> IndexFile:
    f = IndexFile.create(path, sc["slots"], sc["index_num"], *sc["seed"])  # type: ignore[misc]
    for key, off, ts in sc["before"]:  # type: ignore[attr-defined]
        f.put_key(key, off, ts)
    for slot, value in sc["damage"]:  # type: ignore[attr-defined]
        f.regions.slots[slot] = value
    return f


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sc=scenarios(), chunk=st.sampled_from([1, 2, 3, 1 << 20]), arrow=st.booleans())
def test_put_keys_equals_put_key(
    sc: dict[str, object],
    chunk: int,
    arrow: bool,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    d = tmp_path_factory.mktemp("put")
    batch: list[tuple[str, int, int]] = sc["batch"]  # type: ignore[assignment]
    seq = _prepare(d / "seq", sc)
    expected = 0
    for key, off, ts in batch:
        if not seq.put_key(key, off, ts):
            break
        expected += 1
    seq_header = (
        seq.index_count,
        seq.hash_slot_count,
        seq.begin_timestamp,
        seq.end_timestamp,
        seq.begin_phy_offset,
        seq.end_phy_offset,
    )
    seq.close()
    bulk = _prepare(d / "bulk", sc)
    keys = [k for k, _, _ in batch]
    old = _bulk.CHUNK
    _bulk.CHUNK = chunk
    try:
        got = bulk.put_keys(
            pa.array(keys, pa.string()) if arrow else keys,
            np.array([o for _, o, _ in batch], dtype=np.int64),
            [t for _, _, t in batch],
        )
    finally:
        _bulk.CHUNK = old
    header = (
        bulk.index_count,
        bulk.hash_slot_count,
        bulk.begin_timestamp,
        bulk.end_timestamp,
        bulk.begin_phy_offset,
        bulk.end_phy_offset,
    )
    bulk.close()
    assert got == expected
    assert (d / "bulk").read_bytes() == (d / "seq").read_bytes()
    assert header == seq_header


def test_damaged_head_becomes_valid_later_in_the_batch(tmp_path: Path) -> None:
    """A slot head of 3 is invalid for the put at position 1 but valid at position 3."""
    for name in ("seq", "bulk"):
        with IndexFile.create(tmp_path / name, 1, 8) as f:
            f.regions.slots[0] = 3
            if name == "seq":
                for i in range(5):
                    f.put_key(f"k{i}", i, T0 + i)
            else:
                keys = [f"k{i}" for i in range(5)]
                assert f.put_keys(keys, range(5), [T0 + i for i in range(5)]) == 5
    assert (tmp_path / "seq").read_bytes() == (tmp_path / "bulk").read_bytes()
    with IndexFile.open(tmp_path / "bulk", 1, 8) as f:
        assert f.regions.entries["prev_index"][1:6].tolist() == [0, 1, 2, 3, 4]
        assert f.hash_slot_count == 1


def test_large_batch_fills_and_reports_what_fit(tmp_path: Path) -> None:
    n = 5000
    keys = pa.array([f"TopicA#key-{i % 977}" for i in range(n)])
    with IndexFile.create(tmp_path / "b", 97, 3001) as f:
        assert f.put_keys(keys, np.arange(n), np.full(n, T0)) == 3000
        assert f.is_write_full() and f.put_keys(["x"], [1], [2]) == 0
    with IndexFile.create(tmp_path / "s", 97, 3001) as f:
        for i in range(3000):
            f.put_key(f"TopicA#key-{i % 977}", i, T0)
    assert (tmp_path / "b").read_bytes() == (tmp_path / "s").read_bytes()


# -- validation -----------------------------------------------------------------------------


def test_put_keys_validates_before_writing(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 4, 8) as f:
        before = (tmp_path / "f").read_bytes()
        with pytest.raises(InvalidValueError, match="expected 2"):
            f.put_keys(["a", "b"], [1], [1, 2])
        with pytest.raises(InvalidKeyError, match="null"):
            f.put_keys(pa.array(["a", None]), [1, 2], [1, 2])
        with pytest.raises(InvalidKeyError, match="must be str"):
            f.put_keys(["a", 3], [1, 2], [1, 2])  # type: ignore[list-item]
        with pytest.raises(InvalidValueError, match="Java long"):
            f.put_keys(["a"], [2**63], [1])
        with pytest.raises(InvalidValueError, match="Java long"):
            f.put_keys(["a"], np.array([2**63], dtype=np.uint64), [1])
        with pytest.raises(InvalidValueError, match="integers"):
            f.put_keys(["a"], np.array([1.5]), [1])
        with pytest.raises(InvalidValueError, match="nulls"):
            f.put_keys(["a"], pa.array([None], pa.int64()), [1])
        with pytest.raises(InvalidValueError, match="ints"):
            f.put_keys(["a"], [True], [1])
        with pytest.raises(InvalidKeyError, match="string"):
            f.put_keys(pa.array([1, 2]), [1, 2], [1, 2])
        assert f.put_keys([], [], []) == 0
        assert f.put_keys(pa.chunked_array([], pa.string()), [], []) == 0
        assert f.index_count == 1
    assert (tmp_path / "f").read_bytes() == before


def test_put_keys_refuses_read_only(tmp_path: Path) -> None:
    IndexFile.create(tmp_path / "f", 4, 8).close()
    with IndexFile.open(tmp_path / "f", 4, 8) as f, pytest.raises(ReadOnlyIndexError):
        f.put_keys(["a"], [1], [1])


def test_chunked_and_sliced_inputs(tmp_path: Path) -> None:
    keys = ["a", "b😀", "Aa", "BB", "c"]
    chunked = pa.chunked_array([keys[:2], keys[2:]])
    for name, ks in (("s", keys), ("c", chunked), ("l", pa.array(["z", *keys]).slice(1))):
        with IndexFile.create(tmp_path / name, 3, 9) as f:
            assert f.put_keys(ks, pa.array(range(5), pa.int64()), pa.chunked_array([[T0] * 5])) == 5
    assert (tmp_path / "s").read_bytes() == (tmp_path / "c").read_bytes()
    assert (tmp_path / "s").read_bytes() == (tmp_path / "l").read_bytes()


def test_many_chunked_input_is_hashed_in_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bulk, "CHUNK", 3)
    keys = [f"k{i}" if i % 3 else "é😀" for i in range(20)]
    chunked = pa.chunked_array([keys[:4], keys[4:5], keys[5:13], [], keys[13:]])
    with IndexFile.create(tmp_path / "c", 4, 40) as f:
        assert f.put_keys(chunked, range(20), [T0 + i for i in range(20)]) == 20
    with IndexFile.create(tmp_path / "s", 4, 40) as f:
        for i, k in enumerate(keys):
            f.put_key(k, i, T0 + i)
    assert (tmp_path / "c").read_bytes() == (tmp_path / "s").read_bytes()


@settings(max_examples=200, deadline=None)
@given(
    hashes=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=64),
    slot_num=st.one_of(
        st.sampled_from([1, 2, 3, 7, 65536, 5_000_000, 2**31 - 1]), st.integers(1, 2**31 - 1)
    ),
)
def test_compiled_slot_is_the_remainder(hashes: list[int], slot_num: int) -> None:
    """The compiled kernels find a hash's slot by multiplication; it is ``hash % slot_num``
    for every index hash and slot count (edges of both included)."""
    from rmqarrow.kernels import _compiled

    module = _compiled.compiled()
    assert module is not None
    edges = [0, 1, slot_num - 1, slot_num, 2**31 - 1, (2**31 - 1) // slot_num * slot_num]
    h = np.array(hashes + [e for e in edges if 0 <= e < 2**31], dtype=np.int32)
    magic = np.uint64(module._remainder_magic(np.int64(slot_num)))
    slot = [int(module._remainder(np.uint32(x), np.int64(slot_num), magic)) for x in h]
    assert slot == [int(x) % slot_num for x in h]
    if slot_num <= 1 << 16:  # a slot table this size: the lookup's head reads agree
        table = np.arange(slot_num, dtype=">i4").view(np.uint32)
        heads = np.empty(h.size, dtype=np.int64)
        module.slot_heads(h, table, np.int64(slot_num), heads)
        assert (heads == h.astype(np.int64) % slot_num).all()


class _Stopped(Exception):
    """The writer stopped at a crash point (in-process stand-in for a kill)."""


def _written_past(path: Path, position: int) -> bool:
    """Whether any entry at ``position`` or later holds a byte (a writer's mapping is
    shared: another mapping of the file sees its stores)."""
    from rmqarrow.format.layout import Geometry, map_regions

    raw = map_regions(path, Geometry(7, 100), writable=False)
    try:
        return bool(raw.entries[position:].view(np.uint8).any())
    finally:
        raw.close()


def test_fields_written_ahead_are_rolled_back_with_the_chunk_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hashing thread writes the next chunk's fields before the current chunk is
    chained: stopped halfway through a chunk, the file holds entries past the header
    beyond that chunk, and reopening it gives the bytes of the committed puts alone."""
    from rmqarrow.format.layout import Geometry, map_regions
    from rmqarrow.kernels import _compiled
    from rmqarrow.kernels import put as put_mod

    if _compiled.compiled() is None:
        pytest.skip("the compiled kernels write fields ahead; numpy writes a chunk at once")
    monkeypatch.setattr(put_mod, "CHUNK", 8)
    visits = []

    def stop_in_third_chunk(step: str) -> None:
        visits.append(step)
        if step == "put:some-heads" and visits.count(step) == 3:
            # The hashing thread has room for the fourth chunk once the second is
            # chained, but when it gets there is up to the scheduler: wait for its
            # fields (a kill at this instant would find them), then stop.
            deadline = time.monotonic() + 60
            while not _written_past(path, 17 + 8) and time.monotonic() < deadline:
                time.sleep(0.01)
            raise _Stopped

    monkeypatch.setattr(put_mod, "crash_point", stop_in_third_chunk)
    keys = [f"T#k{i % 23}" for i in range(60)]
    path = tmp_path / "f"
    f = IndexFile.create(path, 7, 100)
    with pytest.raises(_Stopped):
        f.put_keys(keys, list(range(60)), [T0 + 1000 * i for i in range(60)])
    raw = map_regions(path, Geometry(7, 100), writable=False)
    count = int(raw.header["index_count"][0])
    ahead = raw.entries[count + 8 :].view(np.uint8).any()  # past the chunk in flight
    raw.close()
    assert count == 17 and ahead
    again = IndexFile.open(path, 7, 100, writable=True)
    assert again.repaired is not None and "rolled back" in again.repaired
    again.close()
    ref = IndexFile.create(tmp_path / "ref", 7, 100)
    for i in range(count - 1):
        ref.put_key(keys[i], i, T0 + 1000 * i)
    ref.close()
    assert path.read_bytes() == (tmp_path / "ref").read_bytes()


def test_failure_on_the_hashing_thread_stops_the_batch_at_the_chunks_chained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second thread hashes ahead and faults pages in while it waits: its failure
    reaches the caller (no hang), and the file holds the chunks chained before it."""
    from rmqarrow.kernels import _compiled
    from rmqarrow.kernels import put as put_mod

    if _compiled.compiled() is None:
        pytest.skip("the numpy form hashes on its helper thread with no pages to fault")
    monkeypatch.setattr(put_mod, "CHUNK", 8)
    hashed = put_mod.index_key_hashes
    calls = []

    def fail_third(keys: pa.Array) -> np.ndarray:
        calls.append(len(keys))
        if len(calls) == 3:
            raise _Stopped
        return hashed(keys)

    monkeypatch.setattr(put_mod, "index_key_hashes", fail_third)
    keys = [f"T#k{i % 23}" for i in range(60)]
    path = tmp_path / "f"
    with IndexFile.create(path, 7, 100) as f, pytest.raises(_Stopped):
        f.put_keys(keys, list(range(60)), [T0 + 1000 * i for i in range(60)])
    again = IndexFile.open(path, 7, 100, writable=True)
    assert again.index_count == 17 and again.repaired is None  # two chunks of 8, after put 0
    again.close()
    ref = IndexFile.create(tmp_path / "ref", 7, 100)
    for i in range(16):
        ref.put_key(keys[i], i, T0 + 1000 * i)
    ref.close()
    assert path.read_bytes() == (tmp_path / "ref").read_bytes()
