"""A stream into a Delta table with ``foreachBatch(delta_batch_writer(...))``: each entry
exactly once, also when Spark replays a batch from its checkpoint (the batch's commit
marker lost, as when the driver is killed between the sink's commit and Spark's), and
the rows as delta-rs and DuckDB (over the table's files) read them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import duckdb
import pytest
from deltalake import DeltaTable, write_deltalake
from index_appends import INDEX, SLOTS, append_records

from rmqarrow.errors import InvalidValueError

pytestmark = pytest.mark.spark

GEO = {"hashSlotNum": str(SLOTS), "indexNum": str(INDEX), "maxEntriesPerTrigger": "70"}


def _all(store: Path) -> list[tuple[str, int]]:
    from rmqarrow.converters.arrow.tables import store_tables

    e = store_tables(store, SLOTS, INDEX).entries
    return sorted(
        zip(e.column("file_name").to_pylist(), e.column("position").to_pylist(), strict=True)
    )


def _rows(table: Path) -> list[tuple[str, int]]:
    t = DeltaTable(str(table)).to_pyarrow_table()
    return sorted(
        zip(t.column("file_name").to_pylist(), t.column("position").to_pylist(), strict=True)
    )


def _run(spark: Any, store: Path, tmp: Path, seen: list[int]) -> None:
    """One AvailableNow query on ``tmp``'s checkpoint into ``tmp/lake`` (the library's
    writer) and ``tmp/naive`` (a plain append of each batch, for contrast)."""
    from rmqarrow.converters.spark.delta_sink import delta_batch_writer
    from rmqarrow.converters.spark.source import register

    write = delta_batch_writer(tmp / "lake", "entries-stream")

    def both(batch: Any, batch_id: int) -> None:
        seen.append(batch_id)
        write(batch, batch_id)
        data = batch.toArrow()
        if data.num_rows:
            write_deltalake(str(tmp / "naive"), data, mode="append")

    register(spark)
    q = (
        spark.readStream.format("rocketmq_index")
        .options(**GEO)
        .load(str(store))
        .writeStream.foreachBatch(both)
        .option("checkpointLocation", str(tmp / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()


def test_a_replayed_batch_is_committed_once(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from rmqarrow.converters.spark.delta_sink import committed_batch

    store = tmp_path / "store" / "index"
    store.mkdir(parents=True)
    append_records(store, 0, 120)  # 240 entries: 4 batches of at most 70
    seen: list[int] = []
    _run(spark, store, tmp_path, seen)
    assert seen == [0, 1, 2, 3]
    assert _rows(tmp_path / "lake") == _all(store) == _rows(tmp_path / "naive")
    assert committed_batch(tmp_path / "lake", "entries-stream") == 3
    version = DeltaTable(str(tmp_path / "lake")).version()

    # the driver died after the sink committed batch 3 and before Spark recorded it:
    # on restart Spark runs batch 3 again, on the same offsets
    for marker in (tmp_path / "ckpt" / "commits").glob("*3*"):
        marker.unlink()
    with caplog.at_level(logging.WARNING, logger="rmqarrow.spark.delta"):
        _run(spark, store, tmp_path, seen)
    assert seen == [0, 1, 2, 3, 3]
    assert "batch 3 of entries-stream is in" in caplog.text and "skipped" in caplog.text
    assert _rows(tmp_path / "lake") == _all(store)  # once
    assert DeltaTable(str(tmp_path / "lake")).version() == version  # nothing committed
    assert len(_rows(tmp_path / "naive")) == 240 + 30  # the plain append took it twice

    # the broker wrote more: the next batches land, each once
    append_records(store, 120, 150)
    _run(spark, store, tmp_path, seen)
    assert seen[5:] == [4]
    lake = _rows(tmp_path / "lake")
    assert lake == _all(store) and len(lake) == 300
    assert committed_batch(tmp_path / "lake", "entries-stream") == 4
    # a reader of the table's files (not the folder) sees the same rows
    files = DeltaTable(str(tmp_path / "lake")).file_uris()
    got = duckdb.sql(
        "SELECT file_name, position FROM read_parquet($f) ORDER BY ALL", params={"f": files}
    ).fetchall()
    assert [(f, int(p)) for f, p in got] == lake


def test_an_app_id_is_required(tmp_path: Path) -> None:
    from rmqarrow.converters.spark.delta_sink import committed_batch, delta_batch_writer

    with pytest.raises(InvalidValueError):
        delta_batch_writer(tmp_path / "lake", " ")
    assert committed_batch(tmp_path / "none", "x") is None
