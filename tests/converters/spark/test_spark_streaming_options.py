"""Where a stream starts, how much a micro-batch takes, and what it does when the broker
expired what it had not read: ``startingOffsets``, ``maxEntriesPerTrigger`` /
``maxFilesPerTrigger`` and ``failOnDataLoss``, on real Spark streams
(``Trigger.AvailableNow`` into a Parquet sink) over stores written here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from index_appends import INDEX, SLOTS, append_records

from rmqarrow.errors import DataLossError

pytestmark = pytest.mark.spark

MAPPED = 4096  # CommitLog file size: a few records a file


def _run(spark: Any, fmt: str, src: Path, tmp: Path, options: dict[str, str]) -> list[int]:
    """One AvailableNow query on ``tmp``'s checkpoint; the input rows of its batches."""
    from rmqarrow.converters.spark.source import register

    register(spark)
    q = (
        spark.readStream.format(fmt)
        .options(**options)
        .load(str(src))
        .writeStream.format("parquet")
        .option("path", str(tmp / "sink"))
        .option("checkpointLocation", str(tmp / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return [int(p["numInputRows"]) for p in q.recentProgress]


def _sink(spark: Any, tmp: Path) -> set[tuple[str, int]]:
    rows = spark.read.parquet(str(tmp / "sink")).select("file_name", "position").collect()
    assert len(rows) == len(set(rows))  # no row twice
    return {(r[0], int(r[1])) for r in rows}


def _store(tmp: Path, records: int) -> Path:
    store = tmp / "store" / "index"
    store.mkdir(parents=True)
    for a in range(0, records, 25):
        append_records(store, a, min(a + 25, records))
    return store


def _all(store: Path) -> set[tuple[str, int]]:
    from rmqarrow.converters.arrow.tables import store_tables

    e = store_tables(store, SLOTS, INDEX).entries
    return set(
        zip(e.column("file_name").to_pylist(), e.column("position").to_pylist(), strict=True)
    )


GEO = {"hashSlotNum": str(SLOTS), "indexNum": str(INDEX)}


def test_index_starting_offsets_latest_then_only_new_entries(spark: Any, tmp_path: Path) -> None:
    store = _store(tmp_path, 120)  # 240 entries: two full files and a third begun
    before = _all(store)
    assert _run(spark, "rocketmq_index", store, tmp_path, {**GEO, "startingOffsets": "latest"})
    assert not (tmp_path / "sink").exists() or _sink(spark, tmp_path) == set()
    append_records(store, 120, 150)
    _run(spark, "rocketmq_index", store, tmp_path, {**GEO, "startingOffsets": "latest"})
    assert _sink(spark, tmp_path) == _all(store) - before
    assert len(_all(store) - before) == 60


def test_index_starting_offsets_per_file(spark: Any, tmp_path: Path) -> None:
    store = _store(tmp_path, 120)
    first, second, third = sorted(p.name for p in store.iterdir())
    start = {first: 30, second: -1, third: -2}
    _run(spark, "rocketmq_index", store, tmp_path, {**GEO, "startingOffsets": json.dumps(start)})
    want = {(f, p) for f, p in _all(store) if (f == first and p > 30) or f == third}
    assert _sink(spark, tmp_path) == want


def test_index_stream_options_refused_in_one_line(spark: Any, tmp_path: Path) -> None:
    """Refused as the stream starts, in one line (not PySpark's runner failing on the
    reader it never got)."""
    from rmqarrow.converters.spark.errors import translate

    store = _store(tmp_path, 30)
    (only,) = sorted(p.name for p in store.iterdir())
    for given, said in [
        ("newest", "option startingOffsets must be earliest, latest or a JSON object"),
        ('{"20991231235959999": 3}', "names 20991231235959999, not an index file of"),
        (json.dumps({only: 61}), f"starts {only} after entry 61; it holds 60 committed"),
    ]:
        with pytest.raises(Exception) as err:
            _run(spark, "rocketmq_index", store, tmp_path, {**GEO, "startingOffsets": given})
        line = str(translate(err.value))
        assert said in line and "\n" not in line, line
    with pytest.raises(Exception) as err:
        _run(spark, "rocketmq_index", store, tmp_path, {**GEO, "pushdown": "true"})
    line = str(translate(err.value))
    assert "rocketmq_index: option pushdown applies to spark.read only" in line, line


def test_index_max_entries_per_trigger(spark: Any, tmp_path: Path) -> None:
    store = _store(tmp_path, 120)  # 240 entries
    rows = _run(spark, "rocketmq_index", store, tmp_path, {**GEO, "maxEntriesPerTrigger": "70"})
    assert [r for r in rows if r] == [70, 70, 70, 30]
    assert _sink(spark, tmp_path) == _all(store)


def _expire_after_a_partial_read(spark: Any, tmp: Path) -> tuple[Path, str]:
    """The query reads 60 entries of the newest file; the broker then fills it, rolls,
    and expires it: 40 entries the query never saw."""
    store = _store(tmp, 30)
    (oldest,) = sorted(p.name for p in store.iterdir())
    assert sum(_run(spark, "rocketmq_index", store, tmp, GEO)) == 60
    append_records(store, 30, 80)  # 40 more fill it, 60 go to the next file
    (store / oldest).unlink()
    return store, oldest


def test_index_files_expired_before_read_fail_the_query(spark: Any, tmp_path: Path) -> None:
    from rmqarrow.converters.spark.errors import translate

    store, oldest = _expire_after_a_partial_read(spark, tmp_path)
    with pytest.raises(Exception) as err:
        _run(spark, "rocketmq_index", store, tmp_path, GEO)
    line = str(translate(err.value))
    assert isinstance(translate(err.value), DataLossError), line
    assert f"{store}/{oldest} was deleted from the store" in line
    assert "entries 61..100 (40 entries lost)" in line
    assert '.option("failOnDataLoss", "false")' in line and "\n" not in line
    # as the line says: the same checkpoint, failOnDataLoss=false, reads on
    _run(spark, "rocketmq_index", store, tmp_path, {**GEO, "failOnDataLoss": "false"})
    assert len(_sink(spark, tmp_path)) == 60 + 60
    assert {f for f, _ in _sink(spark, tmp_path)} == {oldest, *(p.name for p in store.iterdir())}


def test_an_expired_file_the_stream_had_finished_is_no_loss(spark: Any, tmp_path: Path) -> None:
    store = _store(tmp_path, 80)  # one full file, 60 in the next
    assert sum(_run(spark, "rocketmq_index", store, tmp_path, GEO)) == 160
    sorted(store.iterdir())[0].unlink()  # read to its end: the default reads on
    append_records(store, 80, 90)
    assert sum(_run(spark, "rocketmq_index", store, tmp_path, GEO)) == 20


def test_a_planned_file_expired_before_its_batch_ran(tmp_path: Path) -> None:
    """The offset a restarted batch re-plans names a file the broker then expired."""
    from rmqarrow.converters.spark.streaming import IndexStreamReader

    store = _store(tmp_path, 80)
    oldest = sorted(store.iterdir())[0]
    reader = IndexStreamReader({"path": str(store), **GEO})
    start = reader.initialOffset()
    end = reader.latestOffset(start)
    planned = reader.partitions(start, end)
    oldest.unlink()
    with pytest.raises(DataLossError, match=rf"{oldest} was deleted .* entries 1..100 \(100 "):
        reader.partitions(start, end)
    late = [p for p in planned if p.value.path == str(oldest)]
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        list(reader.read(late[0]))


def _commitlog(tmp: Path, records: int) -> Path:
    from rmqarrow.commitlog.writer import CommitLogWriter, Message

    log = tmp / "commitlog"
    with CommitLogWriter(log, mapped_file_size=MAPPED) as w:
        for i in range(records):
            w.append(Message(topic="T", keys=f"k{i}", body=b"x" * 100))
    return log


def test_commitlog_latest_and_max_files_per_trigger(spark: Any, tmp_path: Path) -> None:
    log = _commitlog(tmp_path, 60)
    files = len(list(log.iterdir()))
    assert files >= 3
    latest = tmp_path / "latest"
    assert sum(_run(spark, "rocketmq_commitlog", log, latest, {"startingOffsets": "latest"})) == 0
    rows = _run(spark, "rocketmq_commitlog", log, tmp_path, {"maxFilesPerTrigger": "1"})
    assert len([r for r in rows if r]) == files
    assert sum(rows) == 60
    got = spark.read.parquet(str(tmp_path / "sink")).select("physical_offset").collect()
    assert len({r[0] for r in got}) == 60


def test_commitlog_files_expired_before_read(tmp_path: Path) -> None:
    from rmqarrow.converters.spark.streaming import CommitLogStreamReader

    log = _commitlog(tmp_path, 60)
    reader = CommitLogStreamReader({"path": str(log)})
    start = reader.initialOffset()
    end = reader.latestOffset(start)
    sorted(log.iterdir())[0].unlink()
    with pytest.raises(DataLossError, match=f"log now starts at physical offset {MAPPED}; .*"):
        reader.latestOffset(start)
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        reader.partitions(start, end)
    lenient = CommitLogStreamReader({"path": str(log), "failOnDataLoss": "false"})
    assert lenient.latestOffset(start) == end
    assert lenient.partitions(start, end)[0].value.start == MAPPED
