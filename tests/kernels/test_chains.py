"""The whole-file passes of :mod:`rmqarrow.kernels.chains`: compiled equals numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow import IndexFile
from rmqarrow.format.layout import Geometry, map_regions
from rmqarrow.kernels import _compiled, chains
from rmqarrow.verify.diagnose import check_chains


def _store(d: Path, keys: list[int], damage: list[tuple[int, str, int]]) -> IndexFile:
    f = IndexFile.create(d / "00000", 7, 64)
    for i, k in enumerate(keys):
        f.put_key(f"T#{k}", 100 + i, 1_700_000_000_000 + i)
    for pos, name, value in damage:
        if 1 <= pos < f.state.index_count:
            f.regions.entries[name][pos] = value
    f.regions.mm.flush()
    return f


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(st.integers(0, 30), min_size=1, max_size=60),
    damage=st.lists(
        st.tuples(
            st.integers(1, 60),
            st.sampled_from(["prev_index", "key_hash"]),
            st.integers(-(2**31), 2**31 - 1),
        ),
        max_size=3,
    ),
    wanted=st.lists(st.integers(0, 6), min_size=1, max_size=4),
)
def test_compiled_passes_equal_numpy(
    keys: list[int],
    damage: list[tuple[int, str, int]],
    wanted: list[int],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    f = _store(tmp_path_factory.mktemp("c"), keys, damage)
    try:
        found = {}
        for numpy in (False, True):
            if numpy:
                monkeypatch.setenv("RMQARROW_NO_NUMBA", "1")
            _compiled.reset()
            m = map_regions(f.path, Geometry(7, 64), writable=False)
            try:
                n = f.state.index_count - 1
                positions = chains.slot_positions(m, np.array(wanted), n).tolist()
                h = m.entries["key_hash"][1 : n + 1].astype(np.int64)
                expected = [p + 1 for p in range(n) if h[p] >= 0 and h[p] % 7 in wanted]
                assert positions == expected
            finally:
                m.close()
            damaged = check_chains([f])
            found[numpy] = [(d.file_name, d.bad_entries, d.bad_heads, d.examples) for d in damaged]
        assert found[False] == found[True]
    finally:
        monkeypatch.delenv("RMQARROW_NO_NUMBA", raising=False)
        _compiled.reset()
        f.close()
