"""The native lookup in Spark SQL equals RocketMQ's answers on every golden query."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from golden_data import ALL_SETS, GoldenSet, golden_set
from rmqarrow.converters.spark import sql as spark_sql

from rmqarrow import Query

pytestmark = pytest.mark.spark


def test_golden_over_parquet(
    spark: Any, golden: GoldenSet, make_dataset: Callable[..., Path]
) -> None:
    dataset = make_dataset(golden.store_dir, golden.hash_slot_num, golden.index_num)
    assert spark_sql.answer_queries(dataset, golden.queries) == golden.expected


def test_golden_over_native_source(spark: Any, golden: GoldenSet) -> None:
    got = spark_sql.answer_queries(
        golden.store_dir,
        golden.queries,
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    assert got == golden.expected


@pytest.mark.parametrize("name", ["collisions", "rolling"])
def test_bulk_equals_per_key(spark: Any, make_dataset: Callable[..., Path], name: str) -> None:
    """The DataFrame path (JVM hashes, query/file pairs in SQL) equals the golden answers."""
    g = golden_set(name)
    dataset = make_dataset(g.store_dir, g.hash_slot_num, g.index_num)
    spark_sql.register_tables(spark, dataset)
    queries = g.queries
    rows = [(i, q.key, q.max_num, q.begin, q.end) for i, q in enumerate(queries)]
    keys = spark.createDataFrame(
        rows, "i long, key string, max_num long, begin_ms long, end_ms long"
    )
    out = spark_sql.bulk_lookup(spark, keys).collect()
    got = {r["i"]: list(r["offsets"]) for r in out}
    assert len(got) == len(queries)
    assert [got[i] for i in range(len(queries))] == g.expected


def test_hashes_match_python(spark: Any) -> None:
    """The JVM hash and the Arrow UDF hash both equal rmqarrow.index_key_hash."""
    from rmqarrow import index_key_hash

    keys = ["polygenelubricants", "Aa", "BB", "", "topic#k€y", "t#\U0001f600"]
    keys += [q.key for q in golden_set("unicode").queries]
    df = spark.createDataFrame([(k,) for k in keys], "key string")
    got = df.select(
        spark_sql.jvm_key_hash("key").alias("jvm"), spark_sql.arrow_key_hash("key").alias("arrow")
    ).collect()
    expected = [index_key_hash(k) for k in keys]
    assert [r["jvm"] for r in got] == expected
    assert [r["arrow"] for r in got] == expected


def test_sql_returns_arrow(spark: Any) -> None:
    g = golden_set("basic")
    table = spark_sql.sql(
        g.store_dir,
        "SELECT count(*) AS n, max(file_name) AS newest FROM entries",
        hash_slot_num=g.hash_slot_num,
        index_num=g.index_num,
    )
    assert table.to_pylist() == [{"n": len(g.puts), "newest": g.files[-1]}]


def test_empty_and_zero_max_num(spark: Any) -> None:
    g = golden_set("basic")
    kw = {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num}
    assert spark_sql.answer_queries(g.store_dir, [], **kw) == []
    key = g.queries[0].key
    assert spark_sql.answer_queries(g.store_dir, [Query(key, 0)], **kw) == [[]]


def test_sets_are_all_checked() -> None:
    assert len(ALL_SETS) >= 7


def test_single_index_file_target(spark: Any, tmp_path: Path) -> None:
    """A target may be one index file: only that file is searched."""
    import shutil

    from rmqarrow.index.service import answer_queries as native_answers

    g = golden_set("rolling")
    path = g.file_paths[-1]
    alone = tmp_path / "store"
    alone.mkdir()
    shutil.copy(path, alone / path.name)
    kw = {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num}
    queries = g.queries[:50]
    got = spark_sql.answer_queries(path, queries, **kw)
    assert got == native_answers(alone, queries, **kw)
    assert any(got)
