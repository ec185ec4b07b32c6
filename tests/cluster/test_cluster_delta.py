"""A Delta dataset after incremental runs, read on the real standalone cluster by plain
Spark (no Delta connector, no rmqarrow in the query): each table from the pinned
snapshot's file list (``DatasetStore.parts``), answering as rmqarrow does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cluster.conftest import run_driver
from delta_lake import TABLES, build_lake

import rmqarrow

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def test_plain_spark_on_the_cluster_reads_the_snapshot_file_list(
    spark_cluster: Any, tmp_path: Path
) -> None:
    lake = build_lake(tmp_path / "lake")
    store = rmqarrow.open(lake.ds)
    step = {
        "kind": "parquet_sql",
        "statements": lake.statements,
        "tables": {t: [str(p) for p in store.parts(t)] for t in TABLES},
    }
    old = {
        "kind": "parquet_sql",
        "statements": {"rows_entries": "SELECT count(*) FROM entries"},
        "tables": {"entries": [str(p) for p in store.parts("entries", as_of=0)]},
    }
    result = run_driver(
        spark_cluster,
        tmp_path,
        "delta-parts",
        [{"name": "latest", **step}, {"name": "first", **old}],
        {},
    )
    got = {name: [tuple(r) for r in rows] for name, rows in result["latest"].items()}
    assert got == lake.want, result
    assert result["first"] == {"rows_entries": [[lake.first_entries]]}, result
