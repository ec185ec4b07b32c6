"""Bulk lookups give, query for query and in order, the per-key native answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from golden_data import GoldenSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rmqarrow
from rmqarrow import IndexFile, IndexService, InvalidValueError, Query
from rmqarrow.format.hashing import index_key_hash
from rmqarrow.index.service import query_files
from rmqarrow.kernels.lookup import answers_from_table

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
T0 = 1_700_000_000_000


def per_key_many(f: IndexFile, queries: list[Query]) -> list[list[int]]:
    return [f.select_phy_offsets(q.key, q.max_num, q.begin, q.end) for q in queries]


def columns(queries: list[Query]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    return (
        [q.key for q in queries],
        np.array([q.max_num for q in queries], np.int64),
        np.array([q.begin for q in queries], np.int64),
        np.array([q.end for q in queries], np.int64),
    )


def test_golden_service_query_offsets(golden: GoldenSet) -> None:
    with IndexService(
        golden.store_dir, golden.hash_slot_num, golden.index_num, read_only=True
    ) as s:
        s.load()
        table = s.query_offsets(*columns(golden.queries))
        assert table.schema.names == ["query", "phy_offset"]
        assert answers_from_table(table, len(golden.queries)) == golden.expected
    got = rmqarrow.answer_queries(
        golden.store_dir,
        golden.queries,
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    assert got == golden.expected


def test_golden_select_many_per_file(golden: GoldenSet) -> None:
    for path in golden.file_paths:
        with IndexFile.open(path, golden.hash_slot_num, golden.index_num) as f:
            table = f.select_phy_offsets_many(*columns(golden.queries))
            got = answers_from_table(table, len(golden.queries))
            assert got == per_key_many(f, golden.queries)


# -- damaged files: forward pointers, cycles, garbage -----------------------------------------


@st.composite
def damaged_store(draw: st.DrawFn) -> dict[str, object]:
    slots = draw(st.integers(1, 5))
    index_num = draw(st.integers(2, 12))
    keys = st.sampled_from(["Aa", "BB", "a", "b", "c", "polygenelubricants", "😀"])
    stamp = st.one_of(st.integers(T0 - 9000, T0 + 9000), st.sampled_from([0, -1, LONG_MAX]))
    files = draw(
        st.lists(
            st.lists(st.tuples(keys, st.integers(0, 99), stamp), max_size=12),
            min_size=1,
            max_size=3,
        )
    )
    slot_damage = draw(
        st.lists(st.tuples(st.integers(0, slots - 1), st.integers(-2, index_num + 2)), max_size=3)
    )
    entry_damage = draw(
        st.lists(
            st.tuples(
                st.integers(0, index_num - 1),
                st.sampled_from(["prev_index", "time_diff"]),
                st.integers(-2, index_num + 2),
            ),
            max_size=4,
        )
    )
    queries = draw(
        st.lists(
            st.builds(
                Query,
                keys,
                st.sampled_from([0, 1, 2, 3, 100]),
                st.one_of(
                    st.sampled_from([0, LONG_MIN, T0, T0 + 3000]), st.integers(T0 - 9000, T0 + 9000)
                ),
                st.one_of(st.sampled_from([LONG_MAX, T0, -1]), st.integers(T0 - 9000, T0 + 9000)),
            ),
            max_size=60,
        )
    )  # more than the compiled walk's 24 walkers
    return {
        "slots": slots,
        "index_num": index_num,
        "files": files,
        "slot_damage": slot_damage,
        "entry_damage": entry_damage,
        "queries": queries,
    }


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sc=damaged_store(),
    steps=st.sampled_from([None, 1]),
    block=st.sampled_from([3, 1 << 18]),
    numpy_walk=st.booleans(),
)
def test_bulk_lookup_equals_per_key_on_damaged_files(
    sc: dict[str, object],
    steps: int | None,
    block: int,
    numpy_walk: bool,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both walks (compiled chains, numpy steps) equal the scalar walk, damage included."""
    from rmqarrow.kernels import _compiled
    from rmqarrow.kernels import lookup as _bulk_lookup

    if numpy_walk:  # the pure-numpy kernels, as without numba
        monkeypatch.setenv("RMQARROW_NO_NUMBA", "1")
    else:
        monkeypatch.delenv("RMQARROW_NO_NUMBA", raising=False)
    _compiled.reset()
    monkeypatch.setattr(_bulk_lookup, "BLOCK", block)  # 3: blocks walked by two threads
    if steps is not None:  # hand every walk to the scalar finisher early
        monkeypatch.setattr(_bulk_lookup, "_SCALAR_AFTER_STEPS", steps)
        monkeypatch.setattr(_bulk_lookup, "_SCALAR_BELOW", 1000)
    d = tmp_path_factory.mktemp("look")
    files: list[IndexFile] = []
    slots, index_num = sc["slots"], sc["index_num"]
    for i, puts in enumerate(sc["files"]):  # type: ignore[arg-type]
        f = IndexFile.create(d / f"{i:05d}", slots, index_num)  # type: ignore[arg-type]
        for key, off, ts in puts:
            f.put_key(key, off, ts)
        files.append(f)
    last = files[-1]
    for slot, value in sc["slot_damage"]:  # type: ignore[attr-defined]
        last.regions.slots[slot] = value
    for pos, name, value in sc["entry_damage"]:  # type: ignore[attr-defined]
        last.regions.entries[name][pos] = value
    queries: list[Query] = sc["queries"]  # type: ignore[assignment]
    try:
        for f in files:
            got = answers_from_table(f.select_phy_offsets_many(*columns(queries)), len(queries))
            assert got == per_key_many(f, queries)
        expected = [
            query_files(files, index_key_hash(q.key), q.max_num, q.begin, q.end) for q in queries
        ]
        table = _bulk_lookup.query_offsets(files, *columns(queries))
        assert answers_from_table(table, len(queries)) == expected
    finally:
        for f in files:
            f.close()
        monkeypatch.undo()
        _compiled.reset()


def test_cycle_in_damaged_file_is_bounded(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "f", 1, 8) as f:
        for i in range(5):
            f.put_key("Aa", 100 + i, T0)
        f.regions.entries["prev_index"][2] = 4  # 5 -> 4 -> 3 -> 2 -> 4 -> ...
        got = f.select_phy_offsets_many(["Aa", "BB"], 100)
        assert answers_from_table(got, 2) == [f.select_phy_offsets("Aa", 100)] * 2


def test_long_chain_and_scalars(tmp_path: Path) -> None:
    n = 3000
    with IndexFile.create(tmp_path / "f", 1, n + 1) as f:
        assert (
            f.put_keys(
                ["Aa" if i % 2 else "BB" for i in range(n)],
                range(n),
                [T0 + i * 10 for i in range(n)],
            )
            == n
        )
        keys = ["Aa", "BB", "x", "Aa"]
        table = f.select_phy_offsets_many(keys, 2500, T0 + 5000, LONG_MAX)
        assert answers_from_table(table, 4) == [
            f.select_phy_offsets(k, 2500, T0 + 5000, LONG_MAX) for k in keys
        ]


@pytest.mark.parametrize("numpy_walk", [False, True])
def test_many_hits_and_forward_chains_in_one_block(
    tmp_path: Path,
    numpy_walk: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """More hits and more chains turning forward than the compiled walk's first buffers
    hold (it grows them mid-walk and carries on), interleaved with queries on other
    slots; every answer equals the per-key walk."""
    from rmqarrow.kernels import _compiled

    if numpy_walk:
        monkeypatch.setenv("RMQARROW_NO_NUMBA", "1")
    _compiled.reset()
    try:
        with IndexFile.create(tmp_path / "f", 2, 64) as f:
            keys = ["Aa" if i % 3 else "c" for i in range(60)]  # "Aa" slot 0, "c" slot 1
            assert f.put_keys(keys, range(60), [T0 + 1000 * i for i in range(60)]) == 60
            broken = max(p for p in range(1, 61) if keys[p - 1] == "c")
            f.regions.entries["prev_index"][broken - 3] = broken  # "c": forward, then a cycle
            queries = ["Aa", "c", "zz"] * 40
            want = [f.select_phy_offsets(k, 50) for k in queries]
            assert sum(map(len, want)) > 16 * 40 and want[1]
            got = f.select_phy_offsets_many(queries, 50)
            assert answers_from_table(got, len(queries)) == want
            # time bounds: a scalar begin with one end per query, then both per query
            n = len(queries)
            ends = np.array([T0 + 20 + 9000 * (i % 7) for i in range(n)], dtype=np.int64)
            begins = np.array([T0 + 7000 * (i % 5) for i in range(n)], dtype=np.int64)
            for begin, end in ((T0 + 5000, ends), (begins, ends)):
                b = np.broadcast_to(np.asarray(begin, dtype=np.int64), (n,))
                want = [
                    f.select_phy_offsets(k, 7, int(b[i]), int(end[i]))
                    for i, k in enumerate(queries)
                ]
                got = f.select_phy_offsets_many(queries, 7, begin, end)
                assert answers_from_table(got, n) == want and any(want)
    finally:
        monkeypatch.undo()
        _compiled.reset()


def test_query_offsets_validates(tmp_path: Path) -> None:
    with IndexService(tmp_path, 4, 8) as s:
        with pytest.raises(InvalidValueError, match="max_num"):
            s.query_offsets(["a"], -1)
        with pytest.raises(InvalidValueError, match="expected 2"):
            s.query_offsets(["a", "b"], [1, 2, 3])
        with pytest.raises(InvalidValueError, match="Java long"):
            s.query_offsets(["a"], 1, 2**63)
        empty = s.query_offsets(pa.array([], pa.string()), 5)
        assert empty.num_rows == 0 and answers_from_table(empty, 0) == []
        assert answers_from_table(s.query_offsets(["a", "b"], 5), 2) == [[], []]


def test_extreme_offsets_and_times_round_trip(tmp_path: Path) -> None:
    offsets = [-1, LONG_MIN, LONG_MAX, 2**32, -(2**32) + 5, 0, 2**31]
    stamps = [T0, LONG_MAX, 0, -5, T0 + 10**12, LONG_MIN, T0 - 1]
    with IndexFile.create(tmp_path / "f", 2, 16, end_timestamp=T0) as f:
        assert f.put_keys(["Aa", "BB", "Aa", "c", "Aa", "BB", "d"], offsets, stamps) == 7
        keys = ["Aa", "BB", "c", "d", "zz"]
        for begin, end in ((0, LONG_MAX), (LONG_MIN, LONG_MAX), (T0, T0), (T0 - 10, LONG_MAX)):
            table = f.select_phy_offsets_many(keys, 10, begin, end)
            assert answers_from_table(table, 5) == [
                f.select_phy_offsets(k, 10, begin, end) for k in keys
            ]
