"""The ``rocketmq-commitlog`` data source: the messages table, a task per CommitLog file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA, messages_table

pytestmark = pytest.mark.spark

GOLDEN_LOG = Path(__file__).parents[2] / "golden" / "commitlog" / "store1" / "commitlog"


def test_equals_the_single_process_reader(spark: Any, generated: Any) -> None:
    from rmqarrow.converters.spark.commitlog import messages_frame

    for log in (GOLDEN_LOG, generated.root / "commitlog"):
        files = [p for p in log.iterdir() if p.is_file()]
        df = messages_frame(spark, log)
        assert df.rdd.getNumPartitions() == len(files) > 1
        got = df.toArrow().sort_by("physical_offset")
        want = messages_table(log)
        assert got.column_names == MESSAGES_SCHEMA.names
        assert got.cast(want.schema).equals(want), log


def test_messages_view_of_register_tables(spark: Any, generated: Any) -> None:
    from rmqarrow.converters.spark.tables import register_tables

    log = generated.root / "commitlog"
    register_tables(
        spark,
        generated.store,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
        commitlog=log,
    )
    n = spark.sql("SELECT count(*) AS n FROM messages").collect()[0]["n"]
    assert n == messages_table(log).num_rows


def test_missing_directory_is_one_clear_error(spark: Any, tmp_path: Path) -> None:
    from rmqarrow.converters.spark.commitlog import messages_frame
    from rmqarrow.converters.spark.errors import spark_errors

    from rmqarrow.errors import StoreNotFoundError

    with pytest.raises(StoreNotFoundError, match="no such CommitLog directory"), spark_errors():
        messages_frame(spark, tmp_path / "nope").count()
