"""The (slot, position) order of :mod:`rmqarrow.kernels.order`: the compiled counting sort
gives exactly the rows of the numpy sort, damaged (negative) hashes included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow.format.layout import Geometry, map_regions
from rmqarrow.kernels import _compiled, order
from rmqarrow.testing.stores import write_random_file

FIELDS = ("position", "key_hash", "slot", "phy_offset", "time_diff", "prev_index")
INT32 = st.integers(-(2**31), 2**31 - 1)


def _rows(
    path: Path,
    g: Geometry,
    n: int,
    numpy: bool,
    monkeypatch: pytest.MonkeyPatch,
    step: int,
    threads: int = 1,
) -> dict[str, np.ndarray]:
    monkeypatch.setenv("RMQARROW_NO_NUMBA", "1" if numpy else "0")
    _compiled.reset()
    m = map_regions(path, g, writable=False)
    try:
        o = order.SlotOrder(m, n, threads=threads)
        parts = [o.rows(a, min(a + step, n)) for a in range(0, n, step)]
    finally:
        m.close()
        _compiled.reset()
    return {
        f: np.concatenate([getattr(p, f) for p in parts]) if parts else np.empty(0) for f in FIELDS
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    slot_num=st.sampled_from([1, 3, 7, 4096, 4097, 9000]),
    n=st.integers(0, 300),
    seed=st.integers(0, 2**16),
    damage=st.lists(st.tuples(st.integers(1, 300), INT32), max_size=4),
    step=st.sampled_from([1, 7, 64, 1000]),
    threads=st.sampled_from([1, 2]),
)
def test_counting_sort_equals_numpy(
    slot_num: int,
    n: int,
    seed: int,
    damage: list[tuple[int, int]],
    step: int,
    threads: int,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Also spread by two threads over many chunks of the map (CHUNK made small)."""
    monkeypatch.setenv("RMQARROW_NO_NUMBA", "0")
    monkeypatch.setattr(order, "CHUNK", 64)
    _compiled.reset()
    if order.compiled_kernels(order.COMPILED) is None:
        pytest.skip("numba not installed")
    g = Geometry(slot_num, 320)
    path = tmp_path_factory.mktemp("o") / "00000"
    write_random_file(path, g, n, seed=seed)
    m = map_regions(path, g, writable=True)
    for pos, value in damage:  # any hash, negative (damaged) ones included
        if pos <= n:
            m.entries["key_hash"][pos] = value
    m.close()
    numba_rows = _rows(path, g, n, False, monkeypatch, step, threads)
    numpy_rows = _rows(path, g, n, True, monkeypatch, step)
    for f in FIELDS:
        assert numba_rows[f].dtype == numpy_rows[f].dtype or n == 0, f
        assert np.array_equal(numba_rows[f], numpy_rows[f]), f
    # and the order is (slot, position) with Java's remainder as the slot
    m = map_regions(path, g, writable=False)
    try:
        h = m.entries["key_hash"][1 : n + 1].astype(np.int64)
    finally:
        m.close()
    slots = np.fmod(h, slot_num)
    want = np.lexsort((np.arange(1, n + 1), slots)) + 1
    assert numpy_rows["position"].tolist() == want.tolist()
    assert numpy_rows["slot"].tolist() == slots[want - 1].tolist()


def test_spare_buffer_gives_the_same_rows(tmp_path: Path) -> None:
    """A buffer left by a larger file's order is reused, and changes nothing."""
    big, small = tmp_path / "big", tmp_path / "small"
    g = Geometry(5, 400)
    write_random_file(big, g, 300, seed=1)
    write_random_file(small, g, 120, seed=2)
    if order.compiled_kernels(order.COMPILED) is None:
        pytest.skip("numba not installed")
    maps = [map_regions(p, g, writable=False) for p in (big, small)]
    try:
        first = order.SlotOrder(maps[0], 300)
        spare = first.buffer()
        assert spare is not None
        again = order.SlotOrder(maps[1], 120, spare)
        fresh = order.SlotOrder(maps[1], 120)
        assert again.buffer() is spare
        for f in FIELDS:
            assert np.array_equal(getattr(again.rows(0, 120), f), getattr(fresh.rows(0, 120), f))
    finally:
        for m in maps:
            m.close()


def test_ranges_asked_for_in_any_order_give_the_same_rows(tmp_path: Path) -> None:
    """Buckets are sorted when a range first needs them: ranges asked for backwards, or
    twice, give the rows of one pass in order."""
    if order.compiled_kernels(order.COMPILED) is None:
        pytest.skip("numba not installed")
    g = Geometry(20_000, 3_000)  # five buckets of 4,096 slots
    path = tmp_path / "00000"
    write_random_file(path, g, 2_999, seed=4)
    m = map_regions(path, g, writable=False)
    try:
        forward = order.SlotOrder(m, 2_999)
        want = forward.rows(0, 2_999)
        backward = order.SlotOrder(m, 2_999)
        starts = list(range(0, 2_999, 500))[::-1]
        parts = {a: backward.rows(a, min(a + 500, 2_999)) for a in starts}
        again = backward.rows(1_000, 1_500)
        upfront = order.SlotOrder(m, 2_999)
        upfront.rows(0, 10)  # the first bucket sorted lazily, the rest on three threads
        upfront.sort_all(3)
        eager = upfront.rows(0, 2_999)
    finally:
        m.close()
    for f in FIELDS:
        got = np.concatenate([getattr(parts[a], f) for a in sorted(parts)])
        assert np.array_equal(got, getattr(want, f)), f
        assert np.array_equal(getattr(again, f), getattr(want, f)[1_000:1_500]), f
        assert np.array_equal(getattr(eager, f), getattr(want, f)), f
