"""Spark equals the native engine on random stores with out-of-order store times.

``answer_queries`` over a store reads the queried slots' chains on the driver (few slots)
or in the data source's tasks (``MAX_DRIVER_SLOTS = 0`` here); both must answer as the
native walk, and the driver path must leave the session's views (``files``, ``entries``,
the file order ``lookup`` joins) describing whatever target they described before.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from rmqarrow.converters.spark import sql as spark_sql

from rmqarrow import IndexFile, Query
from rmqarrow.index.service import answer_queries as native_answers

pytestmark = pytest.mark.spark

SLOTS, ENTRIES = 7, 40
T0 = 1_700_000_000_000


def _random_store(root: Path, seed: int) -> tuple[Path, list[str]]:
    """Three small files; times jump back and forth, so chains hold entries older than
    later ones (the walk must stop early, unlike a plain time filter)."""
    rng = random.Random(seed)
    store = root / "store"
    store.mkdir(parents=True)
    keys = [f"TopicR#k{i}" for i in range(12)] + ["Aa", "BB"]  # Aa/BB: equal hashes
    end_phy = end_ts = 0
    phy = 0
    for n in range(3):
        path = store / f"2024010100000000{n}"
        with IndexFile.create(path, SLOTS, ENTRIES, end_phy, end_ts) as f:
            for _ in range(rng.randint(15, ENTRIES - 1)):
                phy += rng.randint(50, 500)
                ts = T0 + n * 60_000 + rng.randint(-20_000, 40_000)
                if not f.put_key(rng.choice(keys), phy, ts):
                    break
            end_phy, end_ts = f.end_phy_offset, f.end_timestamp
    return store, keys


def _random_queries(keys: list[str], seed: int, n: int = 300) -> list[Query]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        key = rng.choice([*keys, "TopicR#absent"])
        begin = T0 + rng.randint(-30_000, 200_000)
        end = begin + rng.randint(-10_000, 150_000)
        if rng.random() < 0.2:
            begin, end = 0, 2**63 - 1
        out.append(Query(key, rng.choice([0, 1, 2, 5, 64]), begin, end))
    return out


def _bulk_answers(spark: Any, queries: list[Query]) -> list[list[int]]:
    """``bulk_lookup`` over the session's current views (query/file pairs and hashes in
    Spark)."""
    rows = [(i, q.key, q.max_num, q.begin, q.end) for i, q in enumerate(queries)]
    df = spark.createDataFrame(rows, "i long, key string, max_num long, begin_ms long, end_ms long")
    got = {r["i"]: list(r["offsets"]) for r in spark_sql.bulk_lookup(spark, df).collect()}
    return [got[i] for i in range(len(queries))]


@pytest.mark.parametrize("reader", ["driver", "executors"])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_store_matches_native(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, reader: str
) -> None:
    """Chains read on the driver or by the data source: the native answers either way."""
    monkeypatch.setattr(spark_sql, "MAX_DRIVER_SLOTS", SLOTS if reader == "driver" else 0)
    store, keys = _random_store(tmp_path, seed)
    queries = _random_queries(keys, seed)
    kw = {"hash_slot_num": SLOTS, "index_num": ENTRIES}
    expected = native_answers(store, queries, **kw)
    assert sum(map(len, expected)) > 50  # the data exercises the walk
    spark.catalog.dropTempView("entries")
    assert spark_sql.answer_queries(store, queries, **kw) == expected
    # the driver path starts no data source: it registers no view of the store
    assert spark.catalog.tableExists("entries") == (reader == "executors")
    # the DataFrame path (query/file pairs and hashes computed in Spark) agrees too
    spark_sql.register_tables(spark, store, **kw)
    assert _bulk_answers(spark, queries) == expected


@pytest.mark.parametrize("seed", [3, 4])
def test_driver_chains_leave_the_views_alone(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """A driver-path query of one store between ``register_tables`` of another and a
    ``bulk_lookup``: the lookup still answers the registered store (the file order it
    joins is not swapped for the queried store's under the other store's entries)."""
    monkeypatch.setattr(spark_sql, "MAX_DRIVER_SLOTS", SLOTS)
    kw = {"hash_slot_num": SLOTS, "index_num": ENTRIES}
    registered, keys = _random_store(tmp_path / "registered", seed)
    queried, _ = _random_store(tmp_path / "queried", seed + 100)
    queries = _random_queries(keys, seed)
    want_registered = native_answers(registered, queries, **kw)
    want_queried = native_answers(queried, queries, **kw)
    assert want_registered != want_queried  # the two stores tell apart
    spark_sql.register_tables(spark, registered, **kw)
    assert spark_sql.answer_queries(queried, queries, **kw) == want_queried
    assert _bulk_answers(spark, queries) == want_registered
