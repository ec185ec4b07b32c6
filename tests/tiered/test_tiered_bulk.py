"""Bulk and exact queries, the two forms compared, and recognising tiered paths."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pytest
from tiered_golden_data import TIERED, TieredSet

from rmqarrow.errors import CorruptIndexError, TieredReadError, UsageError
from rmqarrow.format.detect import detect
from rmqarrow.format.layout import GeometryHint
from rmqarrow.tiered import (
    CompactedIndexFile,
    TieredIndexFile,
    TieredIndexStore,
    form_differences,
    local_geometry,
    open_tiered,
    segment_file_name,
)

GOLDEN = TIERED.parent


def local(ts: TieredSet, tmp_path: Path) -> Path:
    path = tmp_path / str(ts.file_timestamp)
    shutil.copyfile(ts.dir / "unsealed.bin", path)
    return path


def qtuples(ts: TieredSet) -> list[tuple[str, str, int, int, int]]:
    return [(q.topic, q.key, q.max_count, q.begin, q.end) for q in ts.queries]


def strip(items: list[object]) -> list[tuple[object, ...]]:
    return [
        (i.hash_code, i.topic_id, i.queue_id, i.offset, i.size, i.time_diff)  # type: ignore[attr-defined]
        for i in items
    ]


@pytest.mark.parametrize("exact", [False, True])
def test_query_many_equals_query(tiered_set: TieredSet, tmp_path: Path, exact: bool) -> None:
    qs = qtuples(tiered_set)
    with TieredIndexFile.open(
        local(tiered_set, tmp_path), tiered_set.hash_slot_num, tiered_set.index_num
    ) as f:
        assert f.query_many(qs, exact=exact) == [f.query(*q, exact=exact) for q in qs]
    with CompactedIndexFile.open(tiered_set.dir / "compacted.bin", tiered_set.hash_slot_num) as c:
        many = c.query_many(qs, exact=exact, errors="return")
        for q, got in zip(qs, many, strict=True):
            if isinstance(got, TieredReadError):
                assert not exact
                with pytest.raises(TieredReadError):
                    c.query(*q)
            else:
                assert got == c.query(*q, exact=exact)


def test_query_many_matches_golden(tiered_set: TieredSet, tmp_path: Path) -> None:
    qs = qtuples(tiered_set)
    with TieredIndexFile.open(
        local(tiered_set, tmp_path), tiered_set.hash_slot_num, tiered_set.index_num
    ) as f:
        got = [
            [
                (i.hash_code, i.topic_id, i.queue_id, i.offset, i.size, i.time_diff, i.next_index)
                for i in a
            ]
            for a in f.query_many(qs)
        ]
    assert got == [a.items for a in tiered_set.expected["unsealed"]]


def test_exact_mode_forms_agree_and_contain_rocketmq(tiered_set: TieredSet, tmp_path: Path) -> None:
    qs = qtuples(tiered_set)
    with (
        TieredIndexFile.open(
            local(tiered_set, tmp_path), tiered_set.hash_slot_num, tiered_set.index_num
        ) as f,
        CompactedIndexFile.open(tiered_set.dir / "compacted.bin", tiered_set.hash_slot_num) as c,
    ):
        exact_local = f.query_many(qs, exact=True)
        exact_comp = c.query_many(qs, exact=True)
        rocketmq = f.query_many(qs)
    for q, a, b, r in zip(qs, exact_local, exact_comp, rocketmq, strict=True):
        assert strip(a) == strip(b)
        assert len(a) <= max(q[2], 0)
        # RocketMQ's local answer is the exact one, cut by its caps (or one longer)
        n = min(len(a), len(r))
        assert strip(r)[:n] == strip(a)[:n]


def test_form_differences_counts(tmp_path: Path) -> None:
    """The README's figure: 68 of 130 collisions queries change on upload."""
    from tiered_golden_data import TieredSet as TS

    ts = TS("tiered_collisions")
    with TieredIndexFile.open(local(ts, tmp_path), ts.hash_slot_num, ts.index_num) as f:
        diffs = form_differences(f, qtuples(ts))
        assert f.status.name == "UNSEALED"  # comparing does not seal the file
    assert len(diffs) == 68
    reasons = {d.reason() for d in diffs}
    assert "local form returns maxCount + 1 items" in reasons
    for d in diffs:
        want = ts.expected["compacted"][d.index]
        if isinstance(d.compacted, TieredReadError):
            assert want.outcome.startswith("error:")
        else:
            assert strip(d.compacted) == [it[:6] for it in want.items]


def test_query_many_on_cycle_falls_back_to_scalar(tmp_path: Path) -> None:
    """A damaged next pointer that points forward: bulk equals scalar, and stops."""
    ts = TieredSet("tiered_collisions")
    path = local(ts, tmp_path)
    data = bytearray(path.read_bytes())
    base = 28 + 8 * ts.hash_slot_num
    rng = random.Random(7)
    for _ in range(40):  # point random items' next at newer items (cycles)
        k = rng.randrange(2, 1288)
        struct.pack_into(">i", data, base + 32 * k + 28, rng.randrange(k, 1289))
    path.write_bytes(bytes(data))
    qs = qtuples(ts)
    with TieredIndexFile.open(path, ts.hash_slot_num, ts.index_num) as f:
        for exact in (False, True):
            assert f.query_many(qs, exact=exact) == [f.query(*q, exact=exact) for q in qs]


def _form(path: Path) -> str | None:
    return detect(path).form


def test_detect_tiered_forms(tiered_set: TieredSet, tmp_path: Path) -> None:
    assert _form(tiered_set.dir / "unsealed.bin") == "unsealed"
    assert _form(tiered_set.dir / "compacted.bin") == "compacted"
    assert local_geometry(tiered_set.dir / "unsealed.bin")[:2] == (
        tiered_set.hash_slot_num,
        tiered_set.index_num,
    )
    root = tmp_path / "store"
    (root / "tiered_index_file").mkdir(parents=True)
    local(tiered_set, root / "tiered_index_file")
    assert _form(root) == "local-dir"
    assert _form(root / "tiered_index_file") == "local-dir"
    with TieredIndexStore.open(root, tiered_set.hash_slot_num, tiered_set.index_num) as st:
        assert st.files()
    up = tmp_path / "segments"
    up.mkdir()
    shutil.copyfile(tiered_set.dir / "compacted.bin", up / segment_file_name(0))
    assert _form(up) == "segment-dir"
    opened, _ = open_tiered(up)
    with opened as o:
        assert isinstance(o, TieredIndexStore) and len(o.files()) == 1


def test_detect_rejects_other_files(tmp_path: Path) -> None:
    classic = next(p for p in sorted((GOLDEN / "basic").rglob("*")) if p.is_file())
    assert _form(classic) is None
    assert _form(GOLDEN / "basic") is None
    assert _form(tmp_path / "missing") is None
    (tmp_path / "empty").write_bytes(b"")
    assert _form(tmp_path / "empty") is None
    with pytest.raises(UsageError, match="not a RocketMQ tiered index"):
        open_tiered(classic)


def test_geometry_cannot_be_told(tmp_path: Path) -> None:
    empty = tmp_path / "1700000000000"
    TieredIndexFile.create(empty, 1_700_000_000_000, 10, 40).close()
    with pytest.raises(UsageError, match="as hash_slot_num= and index_num=") as caught:
        local_geometry(empty)
    assert "--" not in str(caught.value)  # the library's own terms, not the CLI's
    assert local_geometry(empty, GeometryHint(10))[:2] == (10, 40)
    with pytest.raises(UsageError, match="do not fit"):
        local_geometry(empty, GeometryHint(11))
    short = tmp_path / "short"
    short.write_bytes(b"\xbc\xc5\x02\x89" + b"\0" * 10)
    with pytest.raises(CorruptIndexError):
        local_geometry(short)


def test_vectorized_chains_equal_the_walk(tiered_set: TieredSet) -> None:
    """The pointer-jumping chains equal slot-by-slot walks (healthy golden files)."""
    import numpy as np

    from rmqarrow.tiered._chains import _walk_chains, is_healthy, slot_chains

    data = (tiered_set.dir / "unsealed.bin").read_bytes()
    s, c = tiered_set.hash_slot_num, int.from_bytes(data[24:28], "big", signed=True)
    heads = np.frombuffer(data, ">i4", s * 2, 28)[::2].astype(np.int64)
    nexts = np.frombuffer(data, ">i4", (c + 1) * 8, 28 + 8 * s)[7::8].astype(np.int64)
    assert is_healthy(heads, nexts, c)
    for cap in (512, c + 1):
        fast = slot_chains(heads, nexts, c, cap)
        slow = _walk_chains(heads, nexts, c, cap, None)
        for a, b in zip(fast, slow, strict=True):
            assert a.tolist() == b.tolist()
    broken = nexts.copy()
    broken[c] = c  # a self-loop: not healthy, falls back to the walk
    assert not is_healthy(heads, broken, c)


def test_store_query_many_equals_query(tiered_set: TieredSet, tmp_path: Path) -> None:
    """A folder with two local files and a segment: bulk answers equal per-query ones."""
    import struct

    root = tmp_path / "store"
    local_dir = root / "tiered_index_file"
    local_dir.mkdir(parents=True)
    local(tiered_set, local_dir)
    older = local_dir / str(tiered_set.file_timestamp - 5000)  # begin from its name
    shutil.copyfile(tiered_set.dir / "unsealed.bin", older)
    data = bytearray((tiered_set.dir / "compacted.bin").read_bytes())
    struct.pack_into(">q", data, 4, tiered_set.file_timestamp - 9000)
    (root / segment_file_name(0)).write_bytes(bytes(data))
    qs = qtuples(tiered_set)
    with TieredIndexStore.open_folder(root, tiered_set.hash_slot_num, tiered_set.index_num) as st:
        assert len(st.files()) == 3
        for exact in (False, True):
            bulk = st.query_many(qs, exact=exact)
            for q, got in zip(qs, bulk, strict=True):
                if isinstance(got, Exception):
                    with pytest.raises(type(got)):
                        st.query(*q, exact=exact)
                else:
                    assert got == st.query(*q, exact=exact)
