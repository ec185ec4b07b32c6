"""Spark Structured Streaming over a live store and a live CommitLog: every row exactly once.

A writer process appends (index entries through ``IndexService``, rolling to a new file
every 50 records; CommitLog records written in two halves, so the newest file often ends
in a partial record) while a streaming query in another process, with a 1 s trigger,
writes a Parquet file sink.  The query's driver is killed with SIGKILL after a few
batches, the writer finishes, and the query restarts from its checkpoint with
``Trigger.AvailableNow`` (in the test's own session: another driver).  The sink, read
through Spark (its metadata log names the committed files), must equal a batch read of
the final store row for row, no row twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SLOTS, INDEX = 8, 101  # 100 entries (50 records) a file: the store rolls every 50 records
RECORDS = 1_200
MAPPED = 32 * 1024  # CommitLog file size: a few dozen records a file

# The streaming query: 1 s trigger until a stop file appears; one line a finished batch
# (the test kills the process once a few with data have gone by).
DRIVER = """
import json, os, sys, time
from rmqarrow.converters.spark.session import get_spark
from rmqarrow.converters.spark.source import register
fmt, src, sink, ckpt, stop = sys.argv[1:6]
spark = get_spark("local[2]", conf={"spark.sql.shuffle.partitions": "2"})
register(spark)
df = spark.readStream.format(fmt).options(**json.loads(sys.argv[6])).load(src)
w = df.writeStream.format("parquet").option("path", sink).option("checkpointLocation", ckpt)
q = w.trigger(processingTime="1 second").start()
seen = -1
while not os.path.exists(stop):
    p = q.lastProgress
    if p is not None and p["batchId"] != seen:
        seen = p["batchId"]
        print("batch", seen, p["numInputRows"], flush=True)
    if q.exception() is not None:
        raise q.exception()
    time.sleep(0.1)
q.stop()
"""

INDEX_WRITER = f"""
import os, sys, time
import pyarrow as pa
from rmqarrow.index.service import IndexService
store, go = sys.argv[1:3]
def batch(a, b):
    return pa.table({{
        "topic": ["T"] * (b - a),
        "keys": [f"k{{i % 7}}" for i in range(a, b)],
        "uniq_key": [f"u{{i}}" for i in range(a, b)],
        "commit_log_offset": pa.array([1000 + 100 * i for i in range(a, b)], pa.int64()),
        "store_timestamp": pa.array([1_700_000_000_000 + i for i in range(a, b)], pa.int64()),
        "sys_flag": pa.array([0] * (b - a), pa.int32()),
    }})
s = IndexService(store, {SLOTS}, {INDEX}, 1 << 20)
s.load()
for a in range(0, {RECORDS}, 10):
    if a == 200:  # the rest while the query runs
        while not os.path.exists(go):
            time.sleep(0.05)
    s.build_index_batch(batch(a, a + 10))
    time.sleep(0.08)
s.close()
"""

COMMITLOG_WRITER = f"""
import os, struct, sys, time
from pathlib import Path
from rmqarrow.commitlog._layout import MAGIC_BLANK
from rmqarrow.commitlog.writer import Message, encode_record
log, go = Path(sys.argv[1]), sys.argv[2]
log.mkdir(parents=True, exist_ok=True)
start, pos, out = 0, 0, None
for i in range({RECORDS}):
    if i == 200:
        while not os.path.exists(go):
            time.sleep(0.05)
    rec = encode_record(Message(topic="T", body=b"x" * (i % 50), keys=f"k{{i % 7}}",
                                uniq_key=f"u{{i}}", store_timestamp=1_700_000_000_000 + i),
                        0)
    if len(rec) + 8 > {MAPPED} - pos:  # close the file as the broker does, roll
        out.write(struct.pack(">ii", {MAPPED} - pos, MAGIC_BLANK))
        out.truncate({MAPPED})
        out.close()
        start, pos, out = start + {MAPPED}, 0, None
    if out is None:
        out = open(log / f"{{start:020d}}", "xb", buffering=0)
    rec = rec[:28] + struct.pack(">q", start + pos) + rec[36:]
    half = len(rec) // 2  # a reader may find the first half alone
    out.write(rec[:half])
    time.sleep(0.005)
    out.write(rec[half:])
    pos += len(rec)
    time.sleep(0.01)
out.truncate({MAPPED})  # the zero tail a broker preallocates: the batch reader wants it
out.close()
"""


def _children(pid: int) -> list[int]:
    """Direct and indirect child processes of ``pid`` (the driver's JVM)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            text = Path(f"/proc/{p}/task/{p}/children").read_text()
        except OSError:
            continue
        kids = [int(k) for k in text.split()]
        found += kids
        todo += kids
    return found


def _wait_gone(pids: list[int], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            stat = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}").exists() else ""
            if ") Z" in stat:  # a zombie waiting for its parent: gone for our purpose
                break
            time.sleep(0.2)
        assert time.monotonic() < deadline, f"process {pid} still runs after its driver died"


def _driver(
    fmt: str, src: Path, tmp: Path, options: dict[str, str], log: IO[str] | None = None
) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-c",
        DRIVER,
        fmt,
        str(src),
        str(tmp / "sink"),
        str(tmp / "ckpt"),
        str(tmp / "stop"),
        json.dumps(options),
    ]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)


def _stream_with_a_crash(
    spark: Any, fmt: str, src: Path, tmp: Path, writer: str, options: dict[str, str]
) -> list[int]:
    """Writer + 1 s trigger query, kill -9 after batches, writer ends, AvailableNow (in
    this process's session: another driver, the same checkpoint).

    Returns the input rows of the batches seen before the kill.
    """
    go = tmp / "go"
    with open(tmp / "writer.err", "w") as werr, open(tmp / "driver.err", "w") as derr:
        wproc = subprocess.Popen([sys.executable, "-c", writer, str(src), str(go)], stderr=werr)
        try:
            while not src.exists() or not any(src.iterdir()):
                assert wproc.poll() is None, (tmp / "writer.err").read_text()
                time.sleep(0.05)
            driver = _driver(fmt, src, tmp, options, derr)
            rows: list[int] = []
            try:
                assert driver.stdout is not None
                for line in driver.stdout:
                    rows.append(int(line.split()[2]))
                    go.touch()  # the writer goes on once the query is running
                    if sum(1 for r in rows if r) >= 3:
                        break
                jvm = _children(driver.pid)
                os.kill(driver.pid, signal.SIGKILL)  # between batches, or in one: both fine
                driver.wait()
                _wait_gone(jvm)
            finally:
                if driver.poll() is None:
                    driver.kill()
                    driver.wait()
            assert sum(1 for r in rows if r) >= 3, (tmp / "driver.err").read_text()[-3000:]
            assert wproc.wait(timeout=300) == 0, (tmp / "writer.err").read_text()
        finally:
            if wproc.poll() is None:
                wproc.kill()
                wproc.wait()
    from rmqarrow.converters.spark.source import register

    register(spark)
    (
        spark.readStream.format(fmt)
        .options(**options)
        .load(str(src))
        .writeStream.format("parquet")
        .option("path", str(tmp / "sink"))
        .option("checkpointLocation", str(tmp / "ckpt"))
        .trigger(availableNow=True)
        .start()
        .awaitTermination()
    )
    return rows


def _same_rows(spark: Any, sink: Path, batch: Any, order: list[str]) -> None:
    got = spark.read.parquet(str(sink))
    assert got.count() == batch.count()
    assert got.distinct().count() == got.count()  # no row twice
    assert got.orderBy(*order).collect() == batch.select(*got.columns).orderBy(*order).collect()


def test_index_stream_of_a_live_store_survives_kill_9(spark: Any, tmp_path: Path) -> None:
    from rmqarrow.converters.spark.source import register

    store = tmp_path / "store"
    options = {"hashSlotNum": str(SLOTS), "indexNum": str(INDEX)}
    rows = _stream_with_a_crash(spark, "rocketmq_index", store, tmp_path, INDEX_WRITER, options)
    assert len(list(store.iterdir())) >= RECORDS * 2 // (INDEX - 1)  # it rolled
    register(spark)
    final = spark.read.format("rocketmq_index").options(**options).load(str(store))
    assert final.count() == 2 * RECORDS
    assert sum(rows) < 2 * RECORDS  # the kill came before the writer's end
    _same_rows(spark, tmp_path / "sink", final, ["file_name", "position"])


def test_commitlog_stream_of_a_live_log_survives_kill_9(spark: Any, tmp_path: Path) -> None:
    from rmqarrow.converters.spark.commitlog import register

    log = tmp_path / "commitlog"
    options = {"mappedFileSize": str(MAPPED)}
    rows = _stream_with_a_crash(
        spark, "rocketmq_commitlog", log, tmp_path, COMMITLOG_WRITER, options
    )
    assert len(list(log.iterdir())) > 3  # it rolled
    register(spark)
    final = spark.read.format("rocketmq_commitlog").load(str(log))
    assert final.count() == RECORDS
    assert sum(rows) < RECORDS
    _same_rows(spark, tmp_path / "sink", final, ["physical_offset"])


def test_a_store_that_went_backwards_stops_the_stream(spark: Any, tmp_path: Path) -> None:
    """A file replaced by a shorter one under the same name: one line naming the file."""
    import shutil

    from golden_data import golden_set
    from rmqarrow.converters.spark.source import register
    from rmqarrow.converters.spark.streaming import StoreWentBackwardsError

    g = golden_set("rolling")
    store = tmp_path / "store"
    shutil.copytree(g.store_dir, store)
    register(spark)
    options = {"hashSlotNum": str(g.hash_slot_num), "indexNum": str(g.index_num)}

    def run() -> None:
        df = spark.readStream.format("rocketmq_index").options(**options).load(str(store))
        (
            df.writeStream.format("parquet")
            .option("path", str(tmp_path / "sink"))
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
            .awaitTermination()
        )

    run()
    assert spark.read.parquet(str(tmp_path / "sink")).count() == len(g.puts)
    newest = sorted(store.iterdir())[-1]
    older = sorted(store.iterdir())[0]
    shutil.copyfile(older, newest)  # same name, other entries
    with pytest.raises(Exception) as err:
        run()
    text = str(err.value)
    assert StoreWentBackwardsError.__name__ in text
    assert f"{newest}" in text and "start the query on a new checkpoint" in text


def test_the_commitlog_offset_stops_before_a_record_being_written(tmp_path: Path) -> None:
    """Half a record at the tail of the newest file is not read; the whole one is."""
    from rmqarrow.commitlog import complete_end_offset as commitlog_end_offset
    from rmqarrow.commitlog.writer import CommitLogWriter, Message, encode_record

    log = tmp_path / "commitlog"
    with CommitLogWriter(log, mapped_file_size=MAPPED) as w:
        ends = [w.append(Message(topic="T", keys=f"k{i}")).physical_offset for i in range(5)]
        tail = w.write_offset
    assert ends[0] == 0
    assert commitlog_end_offset(log, 0) == tail
    assert commitlog_end_offset(log, ends[3]) == tail
    rec = encode_record(Message(topic="T", keys="late"), 0)
    rec = rec[:28] + tail.to_bytes(8, "big") + rec[36:]
    path = log / f"{0:020d}"
    for cut in (4, 30, len(rec) - 1):  # a preallocated file: the rest is still zeros
        with open(path, "r+b") as f:
            f.seek(tail)
            f.write(rec[:cut])
        assert commitlog_end_offset(log, 0) == tail, cut
    with open(path, "r+b") as f:
        f.seek(tail)
        f.write(rec)
    assert commitlog_end_offset(log, 0) == tail + len(rec)
    # a writer that does not preallocate: the newest file ends inside the record
    with open(path, "r+b") as f:
        f.truncate(tail + len(rec) // 2)
    assert commitlog_end_offset(log, 0, mapped_file_size=MAPPED) == tail


def test_a_file_deleted_before_it_was_read_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The offset a query took names a file the broker then expired: with
    failOnDataLoss=false, planning (and a task that comes too late) warns how many
    entries are lost and reads on (the default fails: test_spark_streaming_options)."""
    import logging
    import shutil

    from golden_data import golden_set
    from rmqarrow.converters.spark.streaming import IndexStreamReader

    g = golden_set("rolling")
    store = tmp_path / "store"
    shutil.copytree(g.store_dir, store)
    reader = IndexStreamReader(
        {
            "path": str(store),
            "hashSlotNum": str(g.hash_slot_num),
            "indexNum": str(g.index_num),
            "failOnDataLoss": "false",
        }
    )
    start = reader.initialOffset()
    end = reader.latestOffset(start)
    planned = reader.partitions(start, end)
    oldest = sorted(store.iterdir())[0]
    lost = end["files"][oldest.name]["entries"]
    assert lost > 0
    oldest.unlink()
    with caplog.at_level(logging.WARNING, logger="rmqarrow"):
        again = reader.partitions(start, end)  # a restart re-plans the same batch
        late = [p for p in planned if p.value.path == str(oldest)]
        assert late and all(list(reader.read(p)) == [] for p in late)
    assert len(again) == len(planned) - len(late)
    assert all(p.value.path != str(oldest) for p in again)
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"{oldest}" in m and f"{lost} entries lost" in m for m in said), said
    rows = sum(b.num_rows for p in again for b in reader.read(p))
    assert rows == sum(v["entries"] for v in end["files"].values()) - lost
