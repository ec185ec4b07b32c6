"""Spark on a live store (``local[2]``): the streaming source's lag, and a key query's cost
next to Spark's bare start-up, measured side by side in one run.

``streaming lag``  a writer process puts one record (two index entries) every
                   ``--interval`` seconds into a store (``IndexService``, small geometry,
                   rolling to new files) while ``spark.readStream.format("rocketmq-index")``
                   with a 1 s processing-time trigger writes a Parquet file sink.  The lag of
                   a put is the moment its rows are committed in the sink (a new entry in
                   the sink's ``_spark_metadata`` log, polled every 20 ms) minus the put's
                   time (the writer's wall clock in microseconds, written as the put's
                   CommitLog offset: an index entry keeps store times in whole seconds).
                   Median and max over the run.  Expected: about the trigger interval
                   (<= 1 s waiting for the next trigger) plus one micro-batch.
``key query``      fresh processes, each timed from launch to answer: baseline ``bare
                   start-up`` (a session's first trivial query, ``spark.range(1).count()``);
                   ``one key, slot chains`` (``converters.spark.sql.answer_queries`` over the
                   native store, as ``rmqarrow query --engine spark``: the driver reads the
                   key's slot chains); ``one key, full scan`` (the same with the chain reads
                   off, as before: the data source decodes every entry).
                   Target: the chain query within a few seconds of the bare start-up.

Stores: ``--quick`` (what ``make bench`` runs): 6 files of 400,000 x 1,600,000 geometry
with 1,000,000 entries each, 15 s of puts; default: 6 full default-geometry files
(5,000,000 x 20,000,000, 2.5 GB, written to the work directory), 30 s of puts.

Run alone: ``python benchmarks/bench_streaming.py [--quick] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _report import print_rows, row, set_ratios

from rmqarrow import Geometry
from rmqarrow.testing.stores import write_random_store

MASTER = "local[2]"
SLOTS, INDEX = 64, 1_001  # the streamed store: a new file every 500 puts

WRITER = f"""
import sys, time
import pyarrow as pa
from rmqarrow.index.service import IndexService
store, seconds, interval = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = IndexService(store, {SLOTS}, {INDEX}, 1 << 20)
s.load()
i, end = 0, time.time() + seconds
while i == 0 or time.time() < end:
    now = int(time.time() * 1000)
    s.build_index_batch(pa.table({{  # the put's time, in microseconds, as its offset
        "topic": ["T"], "keys": [f"k{{i}}"], "uniq_key": [f"u{{i}}"],
        "commit_log_offset": pa.array([time.time_ns() // 1000], pa.int64()),
        "store_timestamp": pa.array([now], pa.int64()),
        "sys_flag": pa.array([0], pa.int32()),
    }}))
    i += 1
    time.sleep(interval)
s.close()
print(i)
"""

# One timed process: launch to answer, Spark start-up included (as a CLI run).
KEY_QUERY = """
import sys, time
from rmqarrow.converters.spark.session import get_spark
mode, store, hsn, inum, key = sys.argv[1:6]
spark = get_spark("local[2]", conf={"spark.sql.shuffle.partitions": "2"})
if mode == "startup":
    spark.range(1).count()
else:
    from rmqarrow import Query
    from rmqarrow.converters.spark import sql
    if mode == "scan":
        sql.MAX_DRIVER_SLOTS = sql.MAX_PUSHED_SLOTS = -1  # as it was: every entry read
    print(sql.answer_queries(store, [Query(key, 64)], hash_slot_num=int(hsn),
                             index_num=int(inum)), file=sys.stderr)
"""


def _timed_process(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", KEY_QUERY, *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def _key_query_rows(workdir: Path, quick: bool) -> list[dict[str, Any]]:
    geometry = Geometry(400_000, 1_600_000) if quick else Geometry()
    per_file = 1_000_000 if quick else geometry.index_num - 1
    store = workdir / ("key-store-quick" if quick else "key-store-full")
    if not store.exists():
        tmp = store.with_name(store.name + ".tmp")
        write_random_store(tmp, geometry, [per_file] * 6, seed=21)
        tmp.rename(store)
    entries = 6 * per_file
    args = [str(store), str(geometry.hash_slot_num), str(geometry.index_num), "TopicTest#K1"]
    _timed_process(["startup", *args])  # the JVM's and Python's files into the page cache
    times: dict[str, list[float]] = {"startup": [], "chains": [], "scan": []}
    for _ in range(1 if quick else 2):  # interleaved, best of: the machine is shared
        for mode, seen in times.items():
            seen.append(_timed_process([mode, *args]))
    startup, chains, scan = (min(times[m]) for m in ("startup", "chains", "scan"))
    note = f"6 files, {entries:,} entries"
    return [
        row("key query", "bare start-up: range(1).count()", 1, startup, "baseline"),
        row(
            "key query",
            "one key, slot chains",
            1,
            chains,
            f"{note}; target: within a few s of start-up",
        ),
        row("key query", "one key, full scan (before)", 1, scan, note),
    ]


def _committed_parts(log: Path) -> list[str]:
    """The Parquet parts the sink's metadata log has committed (batch files, and the
    ``N.compact`` files Spark rolls every 10 batches into)."""
    parts: list[str] = []
    for p in log.iterdir():
        if p.name.split(".")[0].isdigit() and not p.name.startswith("."):
            lines = p.read_text().splitlines()[1:]
            parts += [json.loads(line)["path"].removeprefix("file://") for line in lines]
    return parts


def _sink_lags(sink: Path, skip: set[str], stop: threading.Event, lags: list[float]) -> None:
    """Poll the sink's commit log; each new part's rows: now - their store timestamp."""
    import pyarrow.parquet as pq

    seen = set(skip)
    while not stop.is_set():
        now = time.time() * 1000
        for part in _committed_parts(sink / "_spark_metadata"):
            if part in seen:
                continue
            seen.add(part)
            # the writer's wall clock in microseconds (store times have whole seconds in an
            # index entry); two entries a put: one lag per put
            put_us = pq.read_table(part, columns=["phy_offset"]).column(0).to_pylist()
            lags.extend((now - t / 1000) / 1000 for t in sorted(set(put_us)))
        time.sleep(0.02)


def _lag_rows(workdir: Path, quick: bool, interval: float) -> list[dict[str, Any]]:
    from rmqarrow.converters.spark.session import get_spark
    from rmqarrow.converters.spark.source import register

    seconds = 15.0 if quick else 30.0
    run_dir = Path(tempfile.mkdtemp(dir=workdir, prefix="lag-"))
    store, sink = run_dir / "store", run_dir / "sink"
    spark = get_spark(MASTER, conf={"spark.sql.shuffle.partitions": "2"})
    register(spark)
    # a first put, so the query has a store to start on; its batch is not timed
    subprocess.run(
        [sys.executable, "-c", WRITER, str(store), "0", "0"], check=True, stdout=subprocess.DEVNULL
    )
    df = (
        spark.readStream.format("rocketmq-index")
        .option("hash_slot_num", SLOTS)
        .option("index_num", INDEX)
        .load(str(store))
    )
    query = (
        df.writeStream.format("parquet")
        .option("path", str(sink))
        .option("checkpointLocation", str(run_dir / "ckpt"))
        .trigger(processingTime="1 second")
        .start()
    )
    meta = sink / "_spark_metadata"
    while not meta.is_dir() or not any(p.name.isdigit() for p in meta.iterdir()):
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        time.sleep(0.1)
    lags: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(
        target=_sink_lags, args=(sink, set(_committed_parts(meta)), stop, lags)
    )
    poller.start()
    try:
        done = subprocess.run(
            [sys.executable, "-c", WRITER, str(store), str(seconds), str(interval)],
            check=True,
            capture_output=True,
            text=True,
        )
        puts = int(done.stdout.strip())
        deadline = time.time() + 60
        while len(lags) < puts and time.time() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        poller.join()
        query.stop()
    median, worst = statistics.median(lags), max(lags)
    return [
        row("streaming lag", "trigger interval", 1, 1.0, "baseline"),
        row(
            "streaming lag",
            "put -> row in the Parquet sink, median",
            1,
            median,
            f"{len(lags)} of {puts} puts seen",
            lag_max_s=round(worst, 3),
        ),
    ]


def run(full: bool, workdir: Path, interval: float = 0.1) -> list[dict[str, Any]]:
    """The rows; ``benchmarks/run.py`` passes ``full`` (default-geometry files) or not
    (``--quick``)."""
    quick = not full
    rows = _lag_rows(workdir, quick, interval) + _key_query_rows(workdir, quick)
    return set_ratios(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small files, 15 s of puts")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between puts")
    parser.add_argument("--workdir", type=Path, help="where the stores are kept")
    args = parser.parse_args(argv)
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            print_rows(run(not args.quick, Path(tmp), args.interval))
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        print_rows(run(not args.quick, args.workdir, args.interval))
    print(f"load average (1, 5, 15 min): {os.getloadavg()}, cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
