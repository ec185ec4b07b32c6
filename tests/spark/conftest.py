"""One local SparkSession for every Spark test (starting one takes 10-20 s)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """``local[2]``, quiet logs, two shuffle partitions, no UI."""
    from converters.spark_session import get_spark

    session = get_spark(
        "local[2]",
        app_name="rmqarrow-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.sql.adaptive.enabled": "true",
        },
    )
    yield session
    session.stop()


@pytest.fixture
def make_dataset(tmp_path: Path) -> Callable[..., Path]:
    """Write a store's three tables as a Parquet dataset (files/, slots/, entries/)."""

    def write(store_dir: Path, hash_slot_num: int, index_num: int) -> Path:
        import pyarrow.parquet as pq

        from converters.tables import store_tables

        out = tmp_path / f"dataset-{store_dir.name}"
        tables = store_tables(store_dir, hash_slot_num, index_num)
        for name in ("files", "slots", "entries"):
            (out / name).mkdir(parents=True)
            pq.write_table(getattr(tables, name), out / name / "part-0.parquet")
        return out

    return write
