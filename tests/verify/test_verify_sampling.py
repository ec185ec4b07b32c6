"""Probe keys and sampled queries."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqarrow import index_key_hash, index_key_hashes
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import GeometryHint
from rmqarrow.index.service import open_healthy
from rmqarrow.verify.sampling import probe_key, sample_queries


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31 - 1), st.text(max_size=8))
def test_probe_key_has_the_requested_hash(h: int, prefix: str) -> None:
    key = probe_key(h, prefix)
    assert key.startswith(prefix)
    assert index_key_hash(key) == h
    assert int(index_key_hashes([key])[0]) == h  # the vectorized hash every engine uses


def test_probe_key_edges() -> None:
    for h in (0, 1, 2**31 - 1):
        assert index_key_hash(probe_key(h)) == h
    assert probe_key(12345).isprintable()


def test_sampled_queries_mix_present_absent_and_windows(generated: Any) -> None:
    service, _ = open_healthy(
        generated.store, GeometryHint(generated.hash_slot_num, generated.index_num)
    )
    with service:
        qs = sample_queries(service.files, 200, seed=3)
        again = sample_queries(service.files, 200, seed=3)
        with_keys = sample_queries(service.files, 100, seed=3, keys=generated.keys)
        from rmqarrow.converters.arrow.tables import store_tables

        hashes = set(
            store_tables(generated.store, generated.hash_slot_num, generated.index_num)
            .entries.column("key_hash")
            .to_pylist()
        )
    assert qs == again
    assert len(qs) == 200
    present = [q for q in qs if index_key_hash(q.key) in hashes]
    absent = [q for q in qs if index_key_hash(q.key) not in hashes]
    assert len(absent) == 40 and len(present) == 160
    assert any(q.begin == 0 and q.end == JAVA_LONG_MAX for q in qs)
    assert any(q.begin > q.end for q in qs)
    assert len({q.max_num for q in qs}) > 4
    keys = set(generated.keys)
    assert all(q.key in keys or q.key.startswith("verify#absent-") for q in with_keys)
    assert sum(q.key in keys for q in with_keys) >= 70


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=40), st.integers(1, 9))
def test_late_positions_streamed_equal_whole_file(time_diffs: list[int], chunk: int) -> None:
    """The chunked pass finds exactly the entries the whole-file running maximum does."""
    import tempfile
    from pathlib import Path

    import numpy as np

    from rmqarrow.format.layout import Geometry, map_regions
    from rmqarrow.testing.stores import write_random_file
    from rmqarrow.verify.sampling import _late_positions

    n = len(time_diffs)
    g = Geometry(7, 64)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "00000"
        write_random_file(path, g, n, seed=1)
        m = map_regions(path, g, writable=True)
        m.entries["time_diff"][1 : n + 1] = time_diffs
        m.close()
        m = map_regions(path, g, writable=False)
        try:
            got = _late_positions(m, n, chunk).tolist()
        finally:
            m.close()
    t = np.array(time_diffs, dtype=np.int64)
    want = (np.flatnonzero(t[1:] < np.maximum.accumulate(t)[:-1]) + 1).tolist() if n else []
    assert got == want
