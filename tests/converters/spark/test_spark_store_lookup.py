"""``query --engine spark`` over a native store reads the queried keys' slot chains only.

An entry planted off a key's chain (another slot's entry given the key's hash) is never
found by RocketMQ's lookup, which walks the chain; a Spark lookup that scanned every entry
would find it, one that reads the chains (on the driver, or in the data source's tasks
through its pushdown) does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rmqarrow.converters.spark import sql as spark_sql

from rmqarrow import Query, answer_queries, index_key_hash
from rmqarrow.format.layout import Geometry, map_regions
from rmqarrow.index.service import IndexService

pytestmark = pytest.mark.spark

SLOTS, INDEX = 8, 400


def _store(root: Path) -> Path:
    import pyarrow as pa

    n = 150
    store = root / "store"
    with IndexService(store, SLOTS, INDEX) as s:
        s.build_index_batch(
            pa.table(
                {
                    "topic": ["T"] * n,
                    "keys": [f"k{i % 11}" for i in range(n)],
                    "uniq_key": [None] * n,
                    "commit_log_offset": pa.array([1000 + 100 * i for i in range(n)], pa.int64()),
                    "store_timestamp": pa.array(
                        [1_700_000_000_000 + i for i in range(n)], pa.int64()
                    ),
                    "sys_flag": pa.array([0] * n, pa.int32()),
                }
            )
        )
        s.flush()
    return store


@pytest.mark.parametrize("reader", ["driver", "executors"])
def test_key_query_reads_the_chain_not_the_entries(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """Few slots: the driver reads the chains; many: the data source's tasks do."""
    if reader == "executors":
        monkeypatch.setattr(spark_sql, "MAX_DRIVER_SLOTS", 0)
    store = _store(tmp_path)
    key = "T#k3"
    h = index_key_hash(key)
    (path,) = sorted(store.iterdir())
    m = map_regions(path, Geometry(SLOTS, INDEX), writable=True)
    try:
        slots = np.fmod(m.entries["key_hash"][1:151].astype(np.int64), SLOTS)
        planted = 1 + int(np.flatnonzero(slots != h % SLOTS)[-1])  # on another chain
        m.entries[planted]["key_hash"] = h
        planted_offset = int(m.entries[planted]["phy_offset"])
        m.mm.flush()
    finally:
        m.close()
    queries = [Query(key, 64), Query("T#k5", 64), Query("T#nothing", 64)]
    native = answer_queries(store, queries, hash_slot_num=SLOTS, index_num=INDEX)
    assert native[0] and planted_offset not in native[0]
    got = spark_sql.answer_queries(store, queries, hash_slot_num=SLOTS, index_num=INDEX)
    assert got == native
