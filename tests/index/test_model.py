"""Property test: random put/query sequences against a small, obviously correct model.

The model keeps each file as a plain list of entries and answers a query by scanning the
entries of the key's slot newest-first, with RocketMQ's rules spelled out directly; no
slots table, no chain pointers.  The engine must agree on every answer and header field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow import IndexFile
from rmqarrow.index.service import query_files

LONG_MIN, LONG_MAX, INT_MAX = -(2**63), 2**63 - 1, 2**31 - 1


def wrap64(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def java_hash(key: str) -> int:
    h = 0
    for ch in key.encode("utf-16-be", "surrogatepass").hex(" ", 2).split():
        h = (31 * h + int(ch, 16)) & 0xFFFFFFFF
    h = h - 2**32 if h >= 2**31 else h
    return 0 if h == -(2**31) else abs(h)


@dataclass
class ModelFile:
    slots: int
    positions: int
    begin_ts: int = 0
    end_ts: int = 0
    begin_phy: int = 0
    end_phy: int = 0
    entries: list[tuple[int, int, int]] = field(default_factory=list)  # hash, phy, diff

    def put(self, key: str, phy: int, ts: int) -> bool:
        if len(self.entries) + 1 >= self.positions:
            return False
        h = java_hash(key)
        if self.begin_ts <= 0:
            diff = 0
        else:
            delta = wrap64(ts - self.begin_ts)
            truncated = abs(delta) // 1000 * (1 if delta >= 0 else -1)  # Java's long division
            diff = min(max(truncated, 0), INT_MAX)
        self.entries.append((h, phy, diff))
        if len(self.entries) == 1:
            self.begin_ts, self.begin_phy = ts, phy
        self.end_ts, self.end_phy = ts, phy
        return True

    @property
    def used_slots(self) -> int:
        return len({h % self.slots for h, _, _ in self.entries})

    def select(self, h: int, max_num: int, begin: int, end: int, out: list[int]) -> None:
        for eh, phy, diff in reversed(self.entries):
            if eh % self.slots != h % self.slots:
                continue
            if len(out) >= max_num:
                return
            t = wrap64(self.begin_ts + diff * 1000)
            if eh == h and begin <= t <= end:
                out.append(phy)
            if t < begin:
                return

    def time_matched(self, begin: int, end: int) -> bool:
        b, e = self.begin_ts, self.end_ts
        return (begin < b and end > e) or b <= begin <= e or b <= end <= e


def model_query(files: list[ModelFile], key: str, max_num: int, begin: int, end: int) -> list[int]:
    out: list[int] = []
    for f in reversed(files):
        if f.time_matched(begin, end):
            f.select(java_hash(key), max_num, begin, end, out)
        if f.begin_ts < begin or len(out) >= max_num:
            break
    return out


KEYS = st.sampled_from(["Aa", "BB", "a", "b", "polygenelubricants", "", "😀"])
BASE = 1_700_000_000_000
TIMES = st.one_of(
    # second-aligned times on a small grid, so equal and out-of-order times are common
    st.builds(lambda s, ms: BASE + s * 1000 + ms, st.integers(0, 30), st.sampled_from([0, 1, 999])),
    st.sampled_from([0, -1, -5000, 1, 999, 1000, LONG_MIN, LONG_MAX, 2**62, -(2**62)]),
)
PUTS = st.lists(st.tuples(KEYS, st.integers(LONG_MIN, LONG_MAX), TIMES), max_size=60)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    slots=st.integers(1, 7),
    positions=st.integers(2, 12),
    puts=PUTS,
    data=st.data(),
)
def test_engine_agrees_with_model(
    tmp_path_factory: pytest.TempPathFactory,
    slots: int,
    positions: int,
    puts: list[tuple[str, int, int]],
    data: st.DataObject,
) -> None:
    directory: Path = tmp_path_factory.mktemp("model")
    model: list[ModelFile] = []
    files: list[IndexFile] = []
    try:
        for key, phy, ts in puts:
            while not files or not files[-1].put_key(key, phy, ts):
                seed = (files[-1].end_phy_offset, files[-1].end_timestamp) if files else (0, 0)
                files.append(
                    IndexFile.create(directory / f"{len(files):05d}", slots, positions, *seed)
                )
                m = ModelFile(slots, positions)
                if seed[0] > 0:
                    m.begin_phy = m.end_phy = seed[0]
                if seed[1] > 0:
                    m.begin_ts = m.end_ts = seed[1]
                model.append(m)
            assert model[-1].put(key, phy, ts)
        for f, m in zip(files, model, strict=True):
            assert (f.begin_timestamp, f.end_timestamp) == (m.begin_ts, m.end_ts)
            assert (f.begin_phy_offset, f.end_phy_offset) == (m.begin_phy, m.end_phy)
            assert f.index_count == len(m.entries) + 1
            assert f.hash_slot_count == m.used_slots
            stored = f.regions.entries[1 : f.index_count]
            assert [e.item()[:3] for e in stored] == [(h, phy, diff) for h, phy, diff in m.entries]
        # Query bounds on and next to the stored times hit every boundary rule.
        times = {
            wrap64(m.begin_ts + d * 1000) + k
            for m in model
            for _, _, d in m.entries
            for k in (-1, 0, 1)
        }
        on_grid = st.sampled_from(sorted(times)) if times else TIMES
        bounds = st.one_of(on_grid, on_grid, on_grid, TIMES)
        queries = data.draw(
            st.lists(st.tuples(KEYS, st.integers(0, 12), bounds, bounds), min_size=1, max_size=25)
        )
        for key, max_num, a, b in queries:
            expected = model_query(model, key, max_num, a, b)
            assert query_files(files, java_hash(key), max_num, a, b) == expected
    finally:
        for f in files:
            f.close()
