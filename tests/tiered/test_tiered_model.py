"""Property tests against a small list-scanning model of the rules (no slots, no chains)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow.format.java import java_div as trunc_div
from rmqarrow.format.java import java_int, java_long, java_rem
from rmqarrow.tiered import (
    AppendResult,
    CompactedIndexFile,
    IndexItem,
    TieredIndexFile,
    key_hash,
)

BEGIN = 1_732_000_000_000
KEYS = ["a", "b", "Aa", "BB", "", "k#1", "ключ", "😀"]
TOPICS = ["T", "U", " ", "T#k"]
TIMES = [BEGIN - 1_500, BEGIN - 999, BEGIN, BEGIN + 1, BEGIN + 2_000, BEGIN + 3_600_000]


@dataclass
class Model:
    """The file as a plain list of items; a slot's items are found by scanning it."""

    slots: int
    capacity: int
    items: list[tuple[int, int, int, int, int, int, int]] = field(default_factory=list)
    sealed: bool = False

    def put(
        self, topic: str, tid: int, qid: int, keys: list[str], off: int, size: int, ts: int
    ) -> AppendResult:
        if topic.strip(" ") == "":
            return AppendResult.UNKNOWN_ERROR
        if not keys:
            return AppendResult.SUCCESS
        if self.sealed:
            return AppendResult.FILE_FULL
        if len(self.items) + len(keys) >= self.capacity:
            self.sealed = True
            return AppendResult.FILE_FULL
        for k in keys:
            h = key_hash(topic, k)
            diff = java_int(trunc_div(java_long(ts - BEGIN), 1000))
            self.items.append((h, tid, qid, off, size, diff, java_rem(h, self.slots)))
        return AppendResult.SUCCESS

    def chain(self, h: int) -> list[int]:
        """1-based indices of the slot's items, newest first."""
        slot = java_rem(h, self.slots)
        return [i + 1 for i in reversed(range(len(self.items))) if self.items[i][6] == slot]

    def matches(self, i: int, h: int, begin: int, end: int) -> bool:
        it = self.items[i - 1]
        return it[0] == h and begin <= java_long(it[5] * 1000 + BEGIN) <= end

    def local(self, topic: str, key: str, n: int, begin: int, end: int) -> list[tuple[int, ...]]:
        h = key_hash(topic, key)
        chain = self.chain(h)
        out: list[tuple[int, ...]] = []
        for pos, i in enumerate(chain[:512]):
            if self.matches(i, h, begin, end):
                nxt = chain[pos + 1] if pos + 1 < len(chain) else 0
                out.append((*self.items[i - 1][:6], nxt))
                if len(out) > n:
                    break
        return out

    def compacted(
        self, topic: str, key: str, n: int, begin: int, end: int
    ) -> list[tuple[int, ...]]:
        h = key_hash(topic, key)
        hits = [i for i in self.chain(h)[:1024] if self.matches(i, h, begin, end)]
        return [(*self.items[i - 1][:6], 0) for i in hits[: max(n, 0)]]


put_st = st.tuples(
    st.sampled_from(TOPICS),
    st.integers(-2, 2),
    st.integers(0, 3),
    st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.integers(0, 100),
    st.sampled_from(TIMES),
)
query_st = st.tuples(
    st.sampled_from(TOPICS),
    st.sampled_from(KEYS),
    st.integers(-1, 4),
    st.sampled_from([-(1 << 63), BEGIN - 1_000, BEGIN]),
    st.sampled_from([BEGIN - 1_000, BEGIN + 2_000, (1 << 63) - 1]),
)


def fields(items: list[IndexItem]) -> list[tuple[int, ...]]:
    return [
        (x.hash_code, x.topic_id, x.queue_id, x.offset, x.size, x.time_diff, x.next_index)
        for x in items
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    slots=st.sampled_from([1, 2, 4, 7]),
    capacity=st.integers(2, 24),
    puts=st.lists(put_st, max_size=20),
    queries=st.lists(query_st, min_size=1, max_size=8),
)
def test_file_equals_model(
    slots: int,
    capacity: int,
    puts: list[tuple[str, int, int, list[str], int, int, int]],
    queries: list[tuple[str, str, int, int, int]],
) -> None:
    model = Model(slots, capacity)
    with tempfile.TemporaryDirectory() as tmp:
        with TieredIndexFile.create(Path(tmp) / "f", BEGIN, slots, capacity) as f:
            for p in puts:
                assert f.put_key(*p) is model.put(*p)
                assert f.item_count == len(model.items)
            for q in queries:
                assert fields(f.query(*q)) == model.local(*q)
            f.compact(Path(tmp) / "c")
        size = (Path(tmp) / "c").stat().st_size
        assert size == (28 + 8 * slots + 28 * len(model.items) if model.items else 0)
        with CompactedIndexFile.open(Path(tmp) / "c", slots, begin_timestamp=BEGIN) as c:
            for q in queries:
                assert fields(c.query(*q)) == model.compacted(*q)
