"""The SQL lookup reproduces the native answers: golden sets, out-of-order times, bulk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from golden_data import GoldenSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rmqarrow.converters.arrow.tables import store_tables
from rmqarrow.converters.duckdb import sql as duckdb_sql

import rmqarrow
from rmqarrow.format.detect import detect
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query

DatasetMaker = Callable[..., Path]


def _single(con: Any, q: Query) -> list[int]:
    rows = con.execute(
        "SELECT phy_offset FROM index_lookup(?, ?, ?, ?) ORDER BY ordinal",
        [q.key, q.max_num, q.begin, q.end],
    ).fetchall()
    return [r[0] for r in rows]


def test_golden_bulk_native_store(golden: GoldenSet) -> None:
    got = duckdb_sql.answer_queries(
        golden.store_dir,
        golden.queries,
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    assert got == golden.expected


def test_golden_bulk_dataset(golden: GoldenSet, make_dataset: DatasetMaker) -> None:
    dataset = make_dataset(golden.store_dir, golden.hash_slot_num, golden.index_num)
    assert detect(dataset).kind == "dataset"
    assert duckdb_sql.answer_queries(dataset, golden.queries) == golden.expected
    # the ``dataset`` keyword reads the export instead of the store
    got = duckdb_sql.answer_queries(Path("/nonexistent"), golden.queries, dataset=dataset)
    assert got == golden.expected


def test_golden_single_key_macro_store(golden: GoldenSet) -> None:
    # every query of the small sets; a sample of the large ones (the bulk tests above
    # answer every query with the same SQL); not under make_dataset, whose two kinds
    # would run the same store twice
    _single_key_macro(golden, golden.store_dir, 1 if len(golden.queries) <= 400 else 4)


def test_golden_single_key_macro_dataset(golden: GoldenSet, make_dataset: DatasetMaker) -> None:
    target = make_dataset(golden.store_dir, golden.hash_slot_num, golden.index_num)
    _single_key_macro(golden, target, 13)  # a sample, as of the large stores


def _single_key_macro(golden: GoldenSet, target: Path, step: int) -> None:
    """Every ``step``-th golden query, one ``index_lookup`` call each, answers as expected."""
    con = duckdb_sql.connect(target, hash_slot_num=golden.hash_slot_num, index_num=golden.index_num)
    with con:
        queries, expected = golden.queries, golden.expected
        for q, want in list(zip(queries, expected, strict=True))[::step]:
            assert _single(con, q) == want, q


def test_two_argument_macro_is_all_time(golden: GoldenSet) -> None:
    con = duckdb_sql.connect(
        golden.store_dir, hash_slot_num=golden.hash_slot_num, index_num=golden.index_num
    )
    with con:
        for q in golden.queries[:40]:
            rows = con.execute(
                "SELECT phy_offset FROM index_lookup(?, ?) ORDER BY ordinal", [q.key, q.max_num]
            ).fetchall()
            assert [r[0] for r in rows] == _single(con, Query(q.key, q.max_num, 0, JAVA_LONG_MAX))


def test_lookup_columns_and_order(golden: GoldenSet) -> None:
    con = duckdb_sql.connect(
        golden.store_dir, hash_slot_num=golden.hash_slot_num, index_num=golden.index_num
    )
    with con:
        q, _ = max(zip(golden.queries, golden.expected, strict=True), key=lambda p: len(p[1]))
        rel = con.sql("SELECT * FROM index_lookup(?, ?, ?, ?)", params=list(q))
        assert tuple(rel.columns) == duckdb_sql.LOOKUP_COLUMNS
        rows = rel.fetchall()
        assert [r[0] for r in rows] == list(range(1, len(rows) + 1))
        assert all(r[5] == rmqarrow.index_key_hash(q.key) for r in rows)


def _build_store(
    root: Path,
    puts: list[tuple[str, int, int]],
    hash_slot_num: int,
    index_num: int,
) -> Path:
    """Puts through the native writer, rolling to a new file when one is full."""
    root.mkdir()
    names = iter(f"{i:05d}" for i in range(10_000))
    f = rmqarrow.IndexFile.create(root / next(names), hash_slot_num, index_num)
    for key, offset, ts in puts:
        if not f.put_key(key, offset, ts):
            end_offset, end_ts = f.end_phy_offset, f.end_timestamp
            f.close()
            f = rmqarrow.IndexFile.create(
                root / next(names), hash_slot_num, index_num, end_offset, end_ts
            )
            assert f.put_key(key, offset, ts)
    f.close()
    return root


def test_out_of_order_times_give_the_native_answer(tmp_path: Path) -> None:
    # key k is put at t=10s, 50s, then 20s (older than the previous put), then 60s.
    base = 1_700_000_000_000
    puts = [
        ("t#k", 100, base),
        ("t#k", 200, base + 50_000),
        ("t#other", 250, base + 55_000),
        ("t#k", 300, base + 20_000),
        ("t#k", 400, base + 60_000),
    ]
    store = _build_store(tmp_path / "s", puts, hash_slot_num=1, index_num=64)
    q = Query("t#k", 10, base + 30_000, base + 100_000)
    native = rmqarrow.answer_queries(store, [q], hash_slot_num=1, index_num=64)
    # the walk stops at the entry put at 20s: 200 (50s) is not reached
    assert native == [[400]]
    assert duckdb_sql.answer_queries(store, [q], hash_slot_num=1, index_num=64) == native
    # a plain hash-and-time filter would also have found 200
    h = rmqarrow.index_key_hash(q.key)
    plain = [
        e["phy_offset"]
        for e in store_tables(store, 1, 64).entries.to_pylist()
        if e["key_hash"] == h and q.begin <= e["store_timestamp"] <= q.end
    ]
    assert sorted(plain) == [200, 400]


_KEYS = ["t#a", "t#b", "Aa", "BB", "t#😀", "polygenelubricants", "t#c"]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.data(),
    hash_slot_num=st.integers(1, 5),
    index_num=st.integers(2, 9),
)
def test_random_stores_match_native(
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
    hash_slot_num: int,
    index_num: int,
) -> None:
    base = 1_700_000_000_000
    puts = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from(_KEYS),
                st.integers(0, 10**6),
                st.integers(base - 5_000, base + 60_000),
            ),
            min_size=0,
            max_size=30,
        )
    )
    root = tmp_path_factory.mktemp("prop") / "store"
    if not puts:
        root.mkdir()
        return
    store = _build_store(root, puts, hash_slot_num, index_num)
    times = st.integers(base - 10_000, base + 70_000)
    queries = data.draw(
        st.lists(
            st.builds(Query, st.sampled_from(_KEYS), st.integers(0, 6), times, times),
            min_size=1,
            max_size=12,
        )
    )
    queries.append(Query(_KEYS[0], 100))
    native = rmqarrow.answer_queries(
        store, queries, hash_slot_num=hash_slot_num, index_num=index_num
    )
    got = duckdb_sql.answer_queries(
        store, queries, hash_slot_num=hash_slot_num, index_num=index_num
    )
    assert got == native


def test_bulk_equals_per_key_and_accepts_topic_key_tables(golden: GoldenSet) -> None:
    con = duckdb_sql.connect(
        golden.store_dir, hash_slot_num=golden.hash_slot_num, index_num=golden.index_num
    )
    with con:
        queries = golden.queries[:60]
        bulk = duckdb_sql.answer_queries(con, queries)
        assert bulk == [_single(con, q) for q in queries]
        # topic + key columns, ids of our own, optional columns left null
        keyed = [q for q in queries if "#" in q.key]
        if not keyed:
            return
        topics, keys = zip(*(q.key.split("#", 1) for q in keyed), strict=True)
        table = pa.table(
            {
                "query_id": [1000 + i for i in range(len(keyed))],
                "topic": list(topics),
                "key": list(keys),
                "max_num": [q.max_num for q in keyed],
                "begin": [None if q.begin == 0 else q.begin for q in keyed],
                "end": [None if q.end == JAVA_LONG_MAX else q.end for q in keyed],
            }
        )
        result = duckdb_sql.lookup_table(con, table)
        for i, q in enumerate(keyed):
            mask = [qid == 1000 + i for qid in result.column("query_id").to_pylist()]
            got = result.filter(pa.array(mask)).column("phy_offset").to_pylist()
            assert got == _single(con, q)


def test_default_max_num_and_empty_query_list(golden: GoldenSet) -> None:
    con = duckdb_sql.connect(
        golden.store_dir, hash_slot_num=golden.hash_slot_num, index_num=golden.index_num
    )
    with con:
        assert duckdb_sql.answer_queries(con, []) == []
        q = golden.queries[0]
        table = duckdb_sql.queries_table(pa.table({"key": [q.key]}))
        assert table.column("max_num").to_pylist() == [64]
        assert table.column("begin_ms").to_pylist() == [0]
        assert table.column("end_ms").to_pylist() == [JAVA_LONG_MAX]


def test_precomputed_key_hashes_and_input_checks(golden: GoldenSet) -> None:
    from rmqarrow.errors import DatasetError, InvalidKeyError, InvalidValueError

    queries = golden.queries[:50]
    hashes = [rmqarrow.index_key_hash(q.key) for q in queries]
    table = pa.table(
        {
            "key_hash": hashes,
            "max_num": [q.max_num for q in queries],
            "begin": [q.begin for q in queries],
            "end": [q.end for q in queries],
        }
    )
    con = duckdb_sql.connect(
        golden.store_dir, hash_slot_num=golden.hash_slot_num, index_num=golden.index_num
    )
    with con:
        result = duckdb_sql.lookup_table(con, table)
        got: list[list[int]] = [[] for _ in queries]
        for qid, off in zip(
            result.column("query_id").to_pylist(),
            result.column("phy_offset").to_pylist(),
            strict=True,
        ):
            got[qid].append(off)
        assert got == golden.expected[:50]
        with pytest.raises(DatasetError, match="unique"):
            duckdb_sql.lookup_table(con, pa.table({"key": ["a", "b"], "query_id": [1, 1]}))
        with pytest.raises(DatasetError, match="needs a 'key'"):
            duckdb_sql.lookup_table(con, pa.table({"k": ["a"]}))
        with pytest.raises(InvalidValueError, match="max_num"):
            duckdb_sql.answer_queries(con, [Query("a", -1)])
        with pytest.raises(InvalidKeyError):
            duckdb_sql.answer_queries(con, [Query(None, 1)])  # type: ignore[arg-type]


def test_out_of_range_values_are_refused(golden: GoldenSet) -> None:
    from rmqarrow.errors import InvalidValueError

    with pytest.raises(InvalidValueError, match="Java long"):
        duckdb_sql.answer_queries(
            golden.store_dir,
            [Query("a", 1, 0, 2**70)],
            hash_slot_num=golden.hash_slot_num,
            index_num=golden.index_num,
        )
    with pytest.raises(InvalidValueError, match="must be an int"):
        duckdb_sql.queries_table([Query("a", 1.5)])  # type: ignore[arg-type]
