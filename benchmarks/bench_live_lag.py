"""Lag behind a real broker: from a send's acknowledgement to its rows in a followed dataset
and in a streaming sink.

A RocketMQ release's broker (``rmqarrow.testing.rocketmq``, 5.5.0 by default) gets one
message every ``--pace`` seconds through RocketMQ's own Java client (one driver JVM fed
line by line through a named pipe; its acknowledgements read back through another, so the
acknowledgement time is when the client got the broker's answer).  Each message has one
key, a unique key and tags: three index entries.  Meanwhile:

``store``     the broker's own index dispatch: the index files' header counts, polled
              every 5 ms (what any reader of the store can see at the earliest);
``follower``  ``rmqarrow export STORE DS --follow --interval I --json`` in its own process:
              a message is in the dataset when the round whose JSON line brings the
              dataset's entry count past the message's entries has been printed (the
              line comes after the round's commit);
``stream``    ``spark.readStream.format("rocketmq-index")`` with a ``--trigger`` second
              processing-time trigger into a Parquet sink, in its own driver: a message is
              in the sink when the sink's ``_spark_metadata`` log (polled every 20 ms)
              commits rows past the message's entries.

Entries are dispatched in CommitLog order, which is send order (one synchronous
producer), so "past the message's entries" is a running count.  Median, p90 and max lag
over the messages; the goal is <= 2 s at a 1 s interval and trigger.

Run alone: ``python benchmarks/bench_live_lag.py [--messages N] [--pace S] [--out FILE]``
(Java 17 and Maven, as the RocketMQ tests).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).parent))

from _report import print_rows, write_record

from rmqarrow.testing.rocketmq import (
    Broker,
    Message,
    resolve_release,
    run_broker,
    send_line,
    send_messages,
)

#: entries a message puts: its key, its unique key, its tags (5.4.0 and later)
ENTRIES_PER_MESSAGE = 3

STREAM_DRIVER = """
import json, os, sys, time
from rmqarrow.converters.spark.session import get_spark
from rmqarrow.converters.spark.source import register
src, sink, ckpt, stop, trigger = sys.argv[1:6]
spark = get_spark("local[2]", conf={"spark.sql.shuffle.partitions": "2",
                                    "spark.ui.enabled": "false"})
register(spark)
df = spark.readStream.format("rocketmq-index").load(src)
w = df.writeStream.format("parquet").option("path", sink).option("checkpointLocation", ckpt)
q = w.trigger(processingTime=trigger).start()
seen = -1
while not os.path.exists(stop):
    for p in q.recentProgress:
        if p["batchId"] > seen:
            seen = p["batchId"]
            print(json.dumps({"rows": p["numInputRows"], **p["durationMs"]}), flush=True)
    if q.exception() is not None:
        raise q.exception()
    time.sleep(0.1)
q.stop()
"""


def message(i: int) -> Message:
    return Message("Lag", f"lag message {i} " + "x" * 200, tags="TagA", keys=(f"lag-{i}",))


class Counter:
    """A running count of entries seen somewhere, with the time each new total was seen."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, int]] = []

    def add(self, at: float, total: int) -> None:
        if not self.seen or total > self.seen[-1][1]:
            self.seen.append((at, total))

    def first_at(self, total: int) -> float | None:
        return next((t for t, n in self.seen if n >= total), None)


def _store_entries(index_dir: Path) -> int:
    total = 0
    for f in index_dir.iterdir():
        try:
            with open(f, "rb") as fh:
                head = fh.read(40)
        except OSError:  # expired or renamed meanwhile
            continue
        if len(head) == 40:
            total += max(0, struct.unpack_from(">i", head, 36)[0] - 1)
    return total


def _poll_store(index_dir: Path, counter: Counter, stop: threading.Event) -> None:
    while not stop.is_set():
        counter.add(time.time(), _store_entries(index_dir))
        time.sleep(0.005)


def _poll_sink(sink: Path, counter: Counter, stop: threading.Event) -> None:
    import pyarrow.parquet as pq

    rows: dict[str, int] = {}
    log = sink / "_spark_metadata"
    while not stop.is_set():
        now = time.time()
        if log.is_dir():
            for p in list(log.iterdir()):
                if not p.name[0].isdigit():
                    continue
                for line in p.read_text().splitlines()[1:]:
                    path = json.loads(line)["path"].removeprefix("file:")
                    if path not in rows:
                        rows[path] = pq.ParquetFile(path).metadata.num_rows
            counter.add(now, sum(rows.values()))
        time.sleep(0.02)


def _read_follower(stream: IO[str], counter: Counter, rounds: list[float]) -> None:
    total = 0
    for line in stream:
        try:
            doc = json.loads(line)
            total += int(doc["entries"])
        except (json.JSONDecodeError, KeyError):
            continue
        counter.add(time.time(), total)
        rounds.append(float(doc["seconds"]))


def _read_batches(stream: IO[str], batches: list[dict[str, int]]) -> None:
    for line in stream:
        try:
            batches.append(json.loads(line))
        except json.JSONDecodeError:
            continue


#: the parts of a micro-batch's time Spark reports (``durationMs``): ``latestOffset`` is
#: the source's scan for new entries, ``addBatch`` reading them and writing the sink,
#: ``walCommit``/``commitOffsets`` Spark's own checkpoint writes
BATCH_PARTS = ("triggerExecution", "latestOffset", "addBatch", "walCommit", "commitOffsets")


def _reader_ms(store: Path, rows: int) -> dict[str, float]:
    """rmqarrow's own part of a micro-batch, timed in this process on the same store: the
    stream reader's ``latestOffset`` (a scan of the index headers) and the read of the
    newest ``rows`` entries (``partitions`` and ``read``, what a Spark task runs); best
    of 5."""
    from rmqarrow.converters.spark.streaming import IndexStreamReader

    reader = IndexStreamReader({"path": str(store)})
    times: dict[str, list[float]] = {"latest_offset_ms": [], "read_ms": []}
    for _ in range(5):
        t = time.perf_counter()
        end = reader.latestOffset()
        times["latest_offset_ms"].append(time.perf_counter() - t)
        start = json.loads(json.dumps(end))
        newest = max(start["files"])
        start["files"][newest]["entries"] = max(0, end["files"][newest]["entries"] - rows)
        t = time.perf_counter()
        got = sum(b.num_rows for p in reader.partitions(start, end) for b in reader.read(p))
        times["read_ms"].append(time.perf_counter() - t)
        assert got == end["files"][newest]["entries"] - start["files"][newest]["entries"]
    return {k: round(min(v) * 1000, 1) for k, v in times.items()}


def _paced_send(broker: Broker, n: int, first: int, pace: float, work: Path) -> list[float]:
    """Send ``n`` messages one every ``pace`` s through one driver JVM; the time each
    acknowledgement reached this process."""
    spec, out = work / "paced.fifo", work / "acks.fifo"
    for p in (spec, out):
        os.mkfifo(p)
    driver = subprocess.Popen(
        [*broker.java(), "RmqDriver", "send", broker.namesrv_addr, str(spec), str(out)],
        env=broker.env(),
        cwd=broker.workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    acks: list[float] = []

    def feed() -> None:
        with open(spec, "w", encoding="utf-8") as fh:
            for i in range(first, first + n):
                fh.write(send_line(message(i)) + "\n")
                fh.flush()
                time.sleep(pace)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    with open(out, encoding="utf-8") as fh:
        for line in fh:
            acks.append(time.time())
            assert json.loads(line)["status"] == "SEND_OK", line
    feeder.join()
    assert driver.wait(60) == 0, "the sending driver failed"
    assert len(acks) == n, f"{len(acks)} acknowledgements of {n}"
    return acks


def _stats(lags: list[float]) -> dict[str, float]:
    ordered = sorted(lags)
    return {
        "median_s": round(statistics.median(ordered), 3),
        "p90_s": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
        "max_s": round(ordered[-1], 3),
    }


def lag_rows(
    workdir: Path, *, messages: int, pace: float, interval: float, trigger: float, version: str
) -> list[dict[str, Any]]:
    release = resolve_release(version)
    warm = 5
    counters = {"store": Counter(), "follower": Counter(), "stream": Counter()}
    stop = threading.Event()
    batches: list[dict[str, int]] = []
    rounds: list[float] = []  # the follower's round times (s), rounds that changed something
    with run_broker(release, workdir / "broker") as broker:
        # routes, the store's first index file, and the readers' first rounds: not timed
        send_messages(broker, [message(i) for i in range(warm)], tag="warm")
        exe = Path(sys.executable).with_name("rmqarrow")
        dataset, stream = workdir / "dataset", workdir / "stream"
        stream.mkdir()
        follow = ["--follow", "--interval", str(interval), "--json"]
        follower = subprocess.Popen(
            [str(exe), "export", str(broker.store), str(dataset), *follow],
            stdout=subprocess.PIPE,
            text=True,
        )
        paths = [str(stream / n) for n in ("sink", "ckpt", "stop")]
        driver = subprocess.Popen(
            [sys.executable, "-c", STREAM_DRIVER, str(broker.store), *paths, f"{trigger} seconds"],
            stdout=subprocess.PIPE,
            text=True,
        )
        threads = [
            threading.Thread(
                target=_read_follower, args=(follower.stdout, counters["follower"], rounds)
            ),
            threading.Thread(
                target=_poll_store, args=(broker.store / "index", counters["store"], stop)
            ),
            threading.Thread(target=_poll_sink, args=(stream / "sink", counters["stream"], stop)),
            threading.Thread(target=_read_batches, args=(driver.stdout, batches)),
        ]
        for t in threads:
            t.daemon = True
            t.start()
        try:
            deadline = time.monotonic() + 300
            while any(c.first_at(warm * ENTRIES_PER_MESSAGE) is None for c in counters.values()):
                assert follower.poll() is None and driver.poll() is None, "a reader exited"
                assert time.monotonic() < deadline, "the readers never caught up with warm-up"
                time.sleep(0.1)
            time.sleep(2 * max(interval, trigger))  # settled: the first batches are done
            timed_from, rounds_from = len(batches), len(rounds)
            acks = _paced_send(broker, messages, warm, pace, workdir)
            total = (warm + messages) * ENTRIES_PER_MESSAGE
            while any(c.first_at(total) is None for c in counters.values()):
                assert follower.poll() is None and driver.poll() is None, "a reader exited"
                assert time.monotonic() < deadline + 120, "the readers never caught up"
                time.sleep(0.1)
            timed = [b for b in batches[timed_from:] if b.get("rows")]
            mean_rows = round(statistics.mean(b["rows"] for b in timed)) if timed else 1
            own = _reader_ms(broker.store, mean_rows)
        finally:
            stop.set()
            follower.send_signal(signal.SIGTERM)
            (stream / "stop").touch()
            for proc, timeout in ((follower, 60), (driver, 120)):
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:  # never leave a reader behind
                    proc.kill()
                    proc.wait()
    load = os.getloadavg()
    rows = []
    for name, what in (
        ("store", "broker's index dispatch (header counts)"),
        ("follower", f"export --follow --interval {interval:g}"),
        ("stream", f"Spark stream, {trigger:g} s trigger, Parquet sink"),
    ):
        lags = []
        for i, acked in enumerate(acks):
            seen = counters[name].first_at((warm + i + 1) * ENTRIES_PER_MESSAGE)
            assert seen is not None
            lags.append(seen - acked)
        rows.append(
            {
                "benchmark": f"lag after the send's ack, RocketMQ {version}",
                "variant": what,
                "items": len(lags),
                **_stats(lags),
                "pace_s": pace,
                "note": f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
            }
        )
    follow_rounds = rounds[rounds_from:]
    rows[1]["rounds"] = len(follow_rounds)
    rows[1]["round_mean_s"] = round(statistics.mean(follow_rounds), 3) if follow_rounds else None
    if timed:  # where a micro-batch's time goes, mean ms over the timed batches with rows
        rows[-1]["batches"] = len(timed)
        rows[-1]["rows_per_batch"] = mean_rows
        for part in BATCH_PARTS:
            rows[-1][f"{part}_ms"] = round(statistics.mean(b.get(part, 0) for b in timed))
        rows[-1].update({f"rmqarrow_{k}": v for k, v in own.items()})
    return rows


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    """``benchmarks/run.py``'s entry: 40 messages (``full``: 100), one every 0.3 s."""
    return lag_rows(
        workdir, messages=100 if full else 40, pace=0.3, interval=1.0, trigger=1.0, version="5.5.0"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=80)
    parser.add_argument("--pace", type=float, default=0.3, help="seconds between sends")
    parser.add_argument("--interval", type=float, default=1.0, help="--follow's --interval")
    parser.add_argument("--trigger", type=float, default=1.0, help="the stream's trigger (s)")
    parser.add_argument("--version", default="5.5.0", help="the RocketMQ release")
    parser.add_argument("--out", type=Path, help="JSON results file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = lag_rows(
            Path(tmp),
            messages=args.messages,
            pace=args.pace,
            interval=args.interval,
            trigger=args.trigger,
            version=args.version,
        )
    print_rows(rows)
    if args.out is not None:
        write_record(args.out, rows)


if __name__ == "__main__":
    main()
