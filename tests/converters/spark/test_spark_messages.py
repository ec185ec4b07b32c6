"""The ``messages`` temp view in Spark: from a CommitLog or a dataset's ``messages/``, and
exact-key joins (golden CommitLog store1 and its index)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from golden_data import GOLDEN, golden_set
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA, messages_table
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.spark.tables import register_tables

from rmqarrow import index_key_hash

pytestmark = pytest.mark.spark

G = golden_set("commitlog_store1")
COMMITLOG = GOLDEN / "commitlog" / "store1" / "commitlog"
GEOM = {"hash_slot_num": G.hash_slot_num, "index_num": G.index_num}

EXACT_SQL = """
SELECT q.topic, q.key, e.phy_offset
FROM _pairs q
JOIN entries e ON e.key_hash = q.key_hash
JOIN messages m ON m.physical_offset = e.phy_offset
WHERE m.topic = q.topic AND (m.uniq_key = q.key OR array_contains(m.keys, q.key))
"""


def _real_matches() -> dict[tuple[str, str], set[int]]:
    """(topic, key) -> offsets of indexed (non-rollback) messages that really carry it."""
    found: dict[tuple[str, str], set[int]] = defaultdict(set)
    for m in messages_table(COMMITLOG).to_pylist():
        if m["sys_flag"] & 12 == 12:
            continue
        keys = ([m["uniq_key"]] if m["uniq_key"] else []) + list(m["keys"] or [])
        for k in keys:
            found[(m["topic"], k)].add(m["physical_offset"])
    return found


@pytest.fixture(params=["store", "dataset"])
def registered(request: pytest.FixtureRequest, spark: Any, tmp_path: Path) -> Any:
    if request.param == "store":
        register_tables(spark, G.store_dir, commitlog=COMMITLOG, **GEOM)
    else:
        out = tmp_path / "dataset"
        export_store(G.store_dir, out, commitlog=COMMITLOG, **GEOM)
        register_tables(spark, out)
    return spark


def test_messages_view(registered: Any) -> None:
    df = registered.table("messages")
    assert df.columns == MESSAGES_SCHEMA.names
    got = df.orderBy("physical_offset").toArrow()
    assert got.num_rows == 300
    want = messages_table(COMMITLOG)
    for name in ("physical_offset", "topic", "keys", "uniq_key", "sys_flag", "store_timestamp"):
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_exact_key_join(registered: Any) -> None:
    want = _real_matches()
    # plus keys whose full index key has a real key's hash (Java: "Ab" ~ "B#"): the
    # hash-only join finds entries for them, the join on the real key none
    fakes = []
    for topic, key in sorted(want)[:40]:
        for i in range(len(key) - 1):
            a, b = ord(key[i]), ord(key[i + 1])
            if 33 <= b - 31 <= 126 and a < 126:
                fake = key[:i] + chr(a + 1) + chr(b - 31) + key[i + 2 :]
                if (topic, fake) not in want:
                    fakes.append((topic, fake))
                break
    assert fakes
    pairs = [*sorted(want), *fakes, ("TopicTest", "no-such-key"), ("NoSuchTopic", "k1")]
    table = pa.table(
        {
            "topic": [t for t, _ in pairs],
            "key": [k for _, k in pairs],
            "key_hash": pa.array([index_key_hash(f"{t}#{k}") for t, k in pairs], pa.int32()),
        }
    )
    registered.createDataFrame(table).createOrReplaceTempView("_pairs")
    got: dict[tuple[str, str], set[int]] = defaultdict(set)
    for row in registered.sql(EXACT_SQL).collect():
        got[(row["topic"], row["key"])].add(row["phy_offset"])
    assert dict(got) == dict(want)
    hash_only = registered.sql(
        "SELECT q.topic, q.key FROM _pairs q JOIN entries e ON e.key_hash = q.key_hash"
    ).collect()
    assert {(r["topic"], r["key"]) for r in hash_only} >= set(fakes)


def test_no_messages_source_drops_stale_view(spark: Any, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    register_tables(spark, G.store_dir, commitlog=COMMITLOG, **GEOM)
    assert spark.table("messages").count() == 300
    register_tables(spark, G.store_dir, **GEOM)
    with pytest.raises(AnalysisException):
        spark.table("messages").count()


def test_cli_sql_spark_commitlog(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from rmqarrow.cli import main

    status = main(
        [
            "sql",
            str(G.store_dir),
            "SELECT count(*) AS n FROM messages",
            "--engine",
            "spark",
            "--commitlog",
            str(COMMITLOG),
            "--json",
            "--hash-slot-num",
            str(G.hash_slot_num),
            "--index-num",
            str(G.index_num),
        ]
    )
    out, _ = capsys.readouterr()
    assert status == 0 and json.loads(out)["rows"] == [{"n": 300}]
