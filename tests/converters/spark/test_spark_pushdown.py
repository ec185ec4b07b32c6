"""Filter pushdown in the ``rocketmq-index`` data source: same rows, far fewer read.

Spark >= 4.1 hands the reader the query's filters; the reader then reads only the
wanted slots' chains, files and position ranges.  Every test compares a query with
pushdown against the same query without it (and the plain numpy reference), on every
golden set and a generated store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from golden_data import ALL_SETS, GoldenSet
from rmqarrow.converters.spark.batches import piece_batches, plan_pieces
from rmqarrow.converters.spark.pushdown import Pushdown, chain_positions, from_filters
from rmqarrow.converters.spark.source import FORMAT, pushdown_supported, register

from rmqarrow.format.layout import GeometryHint, map_regions

pytestmark = pytest.mark.spark

_ORDER = [("file_name", "ascending"), ("position", "ascending")]


def _frame(spark: Any, store: Path, hsn: int, inum: int, push: bool) -> Any:
    register(spark)
    return (
        spark.read.format(FORMAT)
        .option("table", "entries")
        .option("hashSlotNum", str(hsn))
        .option("indexNum", str(inum))
        .option("pieceRows", "64")
        .option("pushdown", str(push).lower())
        .load(str(store))
    )


def _check(spark: Any, store: Path, hsn: int, inum: int, conds: list[str]) -> list[int]:
    """Each condition with pushdown (one Spark job for all) vs the full decode + DuckDB."""
    import duckdb
    import pyarrow.compute as pc
    from pyspark.sql import functions as F
    from rmqarrow.converters.arrow.tables import store_tables

    frames = [
        _frame(spark, store, hsn, inum, True).where(c).withColumn("_c", F.lit(i))
        for i, c in enumerate(conds)
    ]
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    got = union.toArrow()
    con = duckdb.connect()
    con.register("full_entries", store_tables(store, hsn, inum).entries)
    counts = []
    for i, cond in enumerate(conds):
        mine = got.filter(pc.equal(got["_c"], i)).drop_columns(["_c"])
        want = con.sql(f"SELECT * FROM full_entries WHERE {cond}").to_arrow_table()
        mine = mine.cast(want.schema).sort_by(_ORDER)
        assert mine.equals(want.sort_by(_ORDER)), (store, cond, mine.num_rows, want.num_rows)
        counts.append(mine.num_rows)
    con.close()
    return counts


def _conditions(g: GoldenSet, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    puts = g.puts
    from rmqarrow import index_key_hashes

    hashes = [int(h) for h in index_key_hashes([p.key for p in puts])]
    a, b, c = (hashes[int(i)] for i in rng.integers(0, len(hashes), 3))
    times = sorted(p.store_timestamp for p in puts)
    lo, hi = times[len(times) // 4], times[3 * len(times) // 4]
    name = g.files[0]
    return [
        f"key_hash = {a}",
        f"key_hash IN ({a}, {b}, {c})",
        f"slot = {a % g.hash_slot_num}",
        f"slot IN ({a % g.hash_slot_num}, {b % g.hash_slot_num})",
        f"key_hash = {a} AND store_timestamp BETWEEN {lo} AND {hi}",
        f"store_timestamp >= {lo} AND store_timestamp < {hi}",
        "position BETWEEN 2 AND 9",
        f"file_name = '{name}' AND key_hash IN ({a}, {b})",
        f"file_name > '{name}'",
        f"key_hash = {a} AND slot = {(a + 1) % g.hash_slot_num}",
        "key_hash = -5",
    ]


def test_pushdown_is_available_on_this_spark(spark: Any) -> None:
    import pyspark

    assert pushdown_supported() == (
        tuple(int(x) for x in pyspark.__version__.split(".")[:2]) >= (4, 1)
    )
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"


@pytest.mark.parametrize("g", ALL_SETS, ids=lambda s: s.name)
def test_same_rows_with_and_without_pushdown(spark: Any, g: GoldenSet) -> None:
    counts = _check(spark, g.store_dir, g.hash_slot_num, g.index_num, _conditions(g, 3))
    assert counts[0] > 0 and counts[2] > 0  # the key and its slot are found


def test_same_rows_on_a_generated_store(spark: Any, generated: Any) -> None:
    from rmqarrow import index_key_hashes

    keys = sorted(set(generated.keys))[:40]
    hashes = [int(h) for h in index_key_hashes(keys)]
    conds = [
        f"key_hash IN ({', '.join(map(str, hashes))})",
        f"key_hash = {hashes[0]} AND position > 100",
        f"slot IN ({hashes[1] % generated.hash_slot_num}, 0, 1)",
    ]
    counts = _check(spark, generated.store, generated.hash_slot_num, generated.index_num, conds)
    assert counts[0] >= 40 and counts[2] > 0


def test_register_tables_lookup_answers_unchanged(spark: Any) -> None:
    from rmqarrow.converters.spark.sql import answer_queries

    for g in ALL_SETS[:3]:
        assert (
            answer_queries(
                g.store_dir, g.queries, hash_slot_num=g.hash_slot_num, index_num=g.index_num
            )
            == g.expected
        ), g.name


def test_key_filter_reads_only_chains() -> None:
    g = next(s for s in ALL_SETS if s.name == "random_public")
    from rmqarrow import index_key_hashes

    h = int(index_key_hashes([g.puts[0].key])[0])
    push = Pushdown(key_hashes=frozenset([h]))
    pieces = plan_pieces(
        g.store_dir,
        "entries",
        geometry=GeometryHint(g.hash_slot_num, g.index_num),
        piece_rows=100,
        pushdown=push,
    )
    assert len(pieces) == len(g.files)  # one piece per file, not one per 100 positions
    mapped = map_regions(g.file_paths[0], pieces[0].geometry, writable=False)
    try:
        count = int(mapped.header[0]["index_count"])
        chain = chain_positions(mapped.slots, mapped.entries, count, h % g.hash_slot_num)
    finally:
        mapped.close()
    assert chain is not None and 0 < len(chain) < 20  # a chain, not 4,000 positions
    rows = sum(b.num_rows for p in pieces for b in piece_batches(p))
    assert rows == sum(1 for p in g.puts if int(index_key_hashes([p.key])[0]) == h)


def test_from_filters_reads_spark_filter_objects() -> None:
    from pyspark.sql import datasource as ds

    p = from_filters(
        [
            ds.EqualTo(("key_hash",), 5),
            ds.In(("slot",), (1, 2)),
            ds.GreaterThan(("position",), 3),
            ds.LessThanOrEqual(("position",), 9),
            ds.GreaterThanOrEqual(("store_timestamp",), 100),
            ds.EqualTo(("file_name",), "x"),
            ds.EqualTo(("phy_offset",), 1),
            ds.EqualTo(("key_hash",), "not-an-int"),
        ]
    )
    assert p == Pushdown(
        key_hashes=frozenset([5]),
        slots=frozenset([1, 2]),
        file_names=frozenset(["x"]),
        pos_min=4,
        pos_max=9,
        ts_min=100,
    )
    assert from_filters([]).empty
