"""TieredIndexStore: RocketMQ's folder layout, file selection, merging, rolling, upload."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from tiered_golden_data import TIERED

from rmqarrow.errors import ReadOnlyIndexError, StoreNotFoundError
from rmqarrow.tiered import (
    AppendResult,
    CompactedIndexFile,
    TieredIndexFile,
    TieredIndexStore,
    segment_file_name,
)

S, N = 100, 400
ALL = (-(1 << 63), (1 << 63) - 1)
T0 = 1_732_000_000_000


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def make_store(root: Path) -> Path:
    """Two local files and one uploaded segment, keys in all three."""
    local = root / "tiered_index_file"
    local.mkdir(parents=True)
    (local / "compacting").mkdir()
    (local / "notes.txt").write_text("ignored")
    (local / str(T0)).write_bytes((TIERED / "tiered_basic" / "unsealed.bin").read_bytes())
    seg = root / "segments"
    seg.mkdir()
    (seg / segment_file_name(0)).write_bytes(
        (TIERED / "tiered_basic" / "compacted.bin").read_bytes()
    )
    for ts in (T0 + 10_000, T0 + 20_000):
        with TieredIndexFile.create(local / str(ts), ts, S, N) as f:
            f.put_key("TopicTest", 1, 1, ["key-00", f"only-{ts}"], ts, 10, ts + 500)
    return root


def test_files_newest_first_and_segment_replaces_local(tmp_path: Path) -> None:
    root = make_store(tmp_path)
    before = tree_hash(root)
    with TieredIndexStore.open(root, S, N, segment_dir=root / "segments") as store:
        files = store.files()
        assert [f.begin_timestamp for f in files] == [T0 + 20_000, T0 + 10_000, T0]
        assert isinstance(files[-1], CompactedIndexFile)
        assert [f.begin_timestamp for f in store.select(T0 + 1, T0 + 10_000)] == [T0 + 10_000]
        assert store.select(T0 + 1, T0) == []
        # a file begun before `begin` is not asked at all (RocketMQ issue #10268)
        assert [x.offset for x in store.query("TopicTest", "key-00", 10, T0 + 1, ALL[1])] == [
            T0 + 20_000,
            T0 + 10_000,
        ]
        got = store.query("TopicTest", "key-00", 10, *ALL)
        assert [x.offset for x in got] == [T0 + 20_000, T0 + 10_000, 50597824]
        assert [x.offset for x in store.query("TopicTest", "key-00", 2, *ALL)] == [
            T0 + 20_000,
            T0 + 10_000,
        ]
        assert store.query("TopicTest", "key-00", 0, *ALL) == []
        with pytest.raises(ReadOnlyIndexError):
            store.put_key("TopicTest", 1, 1, ["k"], 0, 1, T0)
    assert tree_hash(root) == before


def test_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        TieredIndexStore.open(tmp_path / "absent", S, N)


def test_put_rolls_and_upload(tmp_path: Path) -> None:
    clock = iter(range(T0, T0 + 100_000, 1_000))
    with TieredIndexStore.open(
        tmp_path, 4, 4, segment_dir=tmp_path / "seg", writable=True, clock=lambda: next(clock)
    ) as store:
        assert store.put_key(" ", 1, 1, ["k"], 0, 1, T0) is AppendResult.UNKNOWN_ERROR
        assert store.put_key("T", 1, 1, [], 0, 1, T0) is AppendResult.SUCCESS
        assert store.write_file is None
        for i in range(5):
            assert store.put_key("T", 1, 1, [f"k{i}"], i, 1, T0 + i) is AppendResult.SUCCESS
        stamps = [f.begin_timestamp for f in store.files()]
        assert stamps == [T0 + 1_000, T0]  # 3 items filled the first file, then it rolled
        assert store.write_file is not None and store.write_file.begin_timestamp == T0 + 1_000
        path = store.upload(T0)
        assert path.name == segment_file_name(0)
        assert not (tmp_path / "tiered_index_file" / str(T0)).exists()
        got = store.query("T", "k0", 5, T0, T0 + 10_000)
        assert [(x.offset, x.next_index) for x in got] == [(0, 0)]
        # a put of more keys than fit in a fresh file fails three times and still says SUCCESS
        assert store.put_key("T", 1, 1, ["a", "b", "c", "d"], 9, 1, T0) is AppendResult.SUCCESS
    with TieredIndexStore.open(tmp_path, 4, 4, segment_dir=tmp_path / "seg") as store:
        assert isinstance(store.files()[-1], CompactedIndexFile)
        assert [x.offset for x in store.query("T", "k4", 5, T0, T0 + 10_000)] == [4]
