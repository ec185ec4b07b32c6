"""Readers that keep up with a live 5.5.0 broker: ``export --follow`` and the Spark stream.

One broker run for the module.  A first batch is sent; then ``rmqarrow export STORE DS
--follow --interval 1 --json`` (a real process, ended with SIGTERM as an operator would)
and a Spark Structured Streaming query (``rocketmq-index`` with a 1 s trigger into a
Parquet sink, in its own driver process) start on the broker's store, and two more batches
are sent through RocketMQ's client while both read, the index files rolling under them.
Once both have caught up with the last acknowledged message, the broker is asked every
query (keys, unique keys, tags, the 64-result cap, time ranges split between batches), and
each reader's answers must equal its answers as sets:

* the followed dataset through ``rmqarrow query DATASET --engine duckdb``;
* the streaming sink: its committed rows, looked up as RocketMQ does (the key's hash, the
  time range, newest file first, newest entry first, the first ``min(maxNum, 64)``);
* ``rmqarrow query STORE --engine duckdb`` and ``--engine spark`` on the live store root.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from cli_run import one_error, run
from rocketmq.workload import (
    NEWEST,
    SLOTS,
    Run,
    expected_kinds,
    index_key,
    key_queries,
    processes_naming,
    rmqarrow_answers,
    workload,
)

from rmqarrow.cli import main
from rmqarrow.format.hashing import index_key_hash
from rmqarrow.testing.rocketmq import (
    BrokerAnswer,
    KeyQuery,
    query_broker,
    resolve_release,
    run_broker,
    send_messages,
)

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow, pytest.mark.spark]

#: messages of each batch; the first is in the store before the readers start
SIZES = (120, 100, 80)
#: RocketMQ's maxMsgsNumBatch: no query returns more
CAP = 64

# The streaming query's driver: a 1 s trigger until a stop file appears; one line a
# finished batch with data (its id, input rows, wall-clock time), flushed at once.
STREAM_DRIVER = """
import json, os, sys, time
from rmqarrow.converters.spark.session import get_spark
from rmqarrow.converters.spark.source import register
src, sink, ckpt, stop, trigger = sys.argv[1:6]
while not os.path.isdir(os.path.join(src, "index")):  # started with the broker
    if os.path.exists(stop):
        sys.exit(0)
    time.sleep(0.1)
spark = get_spark("local[2]", conf={"spark.sql.shuffle.partitions": "2",
                                    "spark.ui.enabled": "false"})
register(spark)
df = spark.readStream.format("rocketmq-index").load(src)
w = df.writeStream.format("parquet").option("path", sink).option("checkpointLocation", ckpt)
q = w.trigger(processingTime=trigger).start()
seen = -1
print(json.dumps({"started": time.time()}), flush=True)
while not os.path.exists(stop):
    for p in q.recentProgress:
        if p["batchId"] > seen:
            seen = p["batchId"]
            print(json.dumps({"batch": seen, "rows": p["numInputRows"], "at": time.time()}),
                  flush=True)
    if q.exception() is not None:
        raise q.exception()
    time.sleep(0.02)
q.stop()
"""


class Lines:
    """A child's stdout read by a thread: each JSON line with the time it arrived."""

    def __init__(self, stream: IO[str]) -> None:
        self.rows: list[tuple[float, dict[str, Any]]] = []
        self.other: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                self.rows.append((time.time(), json.loads(line)))
            except json.JSONDecodeError:
                self.other.append(line)

    def total(self, key: str) -> int:
        return sum(int(r.get(key, 0)) for _, r in list(self.rows))


def start_follower(
    store: Path, dataset: Path, interval: str, log: IO[str]
) -> subprocess.Popen[str]:
    """``rmqarrow export STORE DATASET --follow --interval S --commitlog STORE/commitlog
    --json`` in its own process."""
    exe = Path(sys.executable).with_name("rmqarrow")
    args = [str(exe), "export", str(store), str(dataset), "--follow", "--interval", interval]
    args += ["--commitlog", str(store / "commitlog")]
    return subprocess.Popen([*args, "--json"], stdout=subprocess.PIPE, stderr=log, text=True)


def start_stream(store: Path, work: Path, trigger: str, log: IO[str]) -> subprocess.Popen[str]:
    """The Spark streaming query over ``store`` into ``work/sink`` in its own driver."""
    args = [sys.executable, "-c", STREAM_DRIVER, str(store)]
    args += [str(work / "sink"), str(work / "ckpt"), str(work / "stop"), trigger]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)


def wait_for(what: str, done: Any, timeout: float, proc: subprocess.Popen[str], log: Path) -> None:
    """Until ``done()``; a reader that exits, or the timeout, fails with its log's tail."""
    deadline = time.monotonic() + timeout
    while not done():
        tail = "\n".join(log.read_text(encoding="utf-8").splitlines()[-15:])
        assert proc.poll() is None, f"{what}: the reader exited ({proc.returncode}):\n{tail}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s:\n{tail}"
        time.sleep(0.1)


def committed_sink_files(sink: Path) -> list[Path]:
    """The Parquet files a Spark file sink committed: its ``_spark_metadata`` log's newest
    ``N.compact`` file (every batch up to N, written every 10 batches) and the batches
    after it."""
    log = sink / "_spark_metadata"
    batches = {int(p.name.split(".")[0]): p for p in log.iterdir() if p.name[0].isdigit()}
    compact = max((b for b, p in batches.items() if p.name.endswith(".compact")), default=-1)
    files: list[Path] = []
    for b in sorted(batches):
        if b >= compact:
            for line in batches[b].read_text(encoding="utf-8").splitlines()[1:]:
                files.append(Path(json.loads(line)["path"].removeprefix("file:")))
    return files


@dataclass
class Followed:
    run: Run
    dataset: Path
    sink: Path
    total_entries: int
    #: ``export --follow`` started before the broker's first message: status, stderr
    early: tuple[int, str]
    follower_rounds: list[dict[str, Any]] = field(default_factory=list)
    stream_batches: list[dict[str, Any]] = field(default_factory=list)
    follower_status: int | None = None
    stream_status: int | None = None
    logs: dict[str, str] = field(default_factory=dict)


def _follow_before_the_first_message(store: Path, dataset: Path) -> tuple[int, str]:
    """``rmqarrow export STORE DATASET --follow`` (in this process) on the store root of a
    broker that has no message yet."""
    assert not (store / "index").exists()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["export", str(store), str(dataset), "--follow", "--interval", "1"])
    return status, err.getvalue()


def _ended(proc: subprocess.Popen[str], timeout: float) -> int:
    """``proc``'s status once it stopped; killed (status -9) when it does not in time, so a
    failing run never leaves a reader behind."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Followed]:
    release = resolve_release(NEWEST)
    workdir = tmp_path_factory.mktemp(f"rocketmq-{NEWEST}-follow")
    dataset, stream = workdir / "dataset", workdir / "stream"
    stream.mkdir()
    batches = [workload(b, n) for b, n in enumerate(SIZES)]
    with (
        run_broker(release, workdir) as broker,
        (workdir / "follower.log").open("w") as flog,
        (workdir / "stream.log").open("w") as slog,
    ):
        # Spark starts while the first batch is sent (its query waits for the index)
        driver = start_stream(broker.store, stream, "1 second", slog)
        follower = None
        try:
            early = _follow_before_the_first_message(broker.store, workdir / "early")
            sent = send_messages(broker, batches[0], tag="batch0")
            follower = start_follower(broker.store, dataset, "1", flog)
            f_lines = Lines(follower.stdout)  # type: ignore[arg-type]
            s_lines = Lines(driver.stdout)  # type: ignore[arg-type]
            # both readers have read the first batch before the next is sent
            flog_path, slog_path = workdir / "follower.log", workdir / "stream.log"
            wait_for("first round", lambda: f_lines.total("entries") > 0, 120, follower, flog_path)
            wait_for("first batch", lambda: s_lines.total("rows") > 0, 180, driver, slog_path)
            # the index keeps store times in whole seconds from its file's first message
            time.sleep(1.2)
            split_ms = int(time.time() * 1000)
            time.sleep(1.2)
            for b in (1, 2):
                sent += send_messages(broker, batches[b], tag=f"batch{b}")
                time.sleep(1.5)
            assert {s.status for s in sent} == {"SEND_OK"}
            total = sum(expected_kinds(sent, tags=True).values())
            wait_for("follower", lambda: f_lines.total("entries") >= total, 60, follower, flog_path)
            n = len(sent)
            wait_for(
                f"{n} messages (rounds: {f_lines.rows})",
                lambda: f_lines.total("messages") >= n,
                60,
                follower,
                flog_path,
            )
            wait_for("stream", lambda: s_lines.total("rows") >= total, 90, driver, slog_path)
            run_ = Run(broker, sent, split_ms, tags=True)
            run_.answers = query_broker(broker, key_queries(run_))
        finally:
            if follower is not None:
                follower.send_signal(signal.SIGTERM)
            (stream / "stop").touch()
            s_status = _ended(driver, 120)
            f_status = None if follower is None else _ended(follower, 60)
        out = Followed(run_, dataset, stream / "sink", total, early)
        out.follower_rounds = [r for _, r in f_lines.rows]
        out.stream_batches = [r for _, r in s_lines.rows if "batch" in r]
        out.follower_status, out.stream_status = f_status, s_status
        yield out
    assert processes_naming(workdir) == [], "a process of the run outlived it"


def differences(answers: list[BrokerAnswer], ours: list[list[int]]) -> list[tuple[object, ...]]:
    return [
        (index_key(a.query), a.query.max_num, a.query.begin, a.query.end, a.offsets, mine)
        for a, mine in zip(answers, ours, strict=True)
        if sorted(a.offsets) != sorted(mine)
    ]


def test_the_readers_read_while_the_broker_wrote(followed: Followed) -> None:
    """Both readers took the store in several steps, ended cleanly, and the broker's
    answers span every batch (the ground of the comparisons below)."""
    assert followed.follower_status == 0 and followed.stream_status == 0
    rounds = [r for r in followed.follower_rounds if r["entries"]]
    assert len(rounds) >= 3, followed.follower_rounds  # the first batch, then more
    assert rounds[0]["entries"] < followed.total_entries
    assert sum(r["added"] for r in followed.follower_rounds) >= 3  # files rolled under it
    with_rows = [b for b in followed.stream_batches if b["rows"]]
    assert len(with_rows) >= 2 and with_rows[0]["rows"] < followed.total_entries
    by_uniq = {a.query.key: a for a in followed.run.answers if a.query.kind == "uniq"}
    assert len(by_uniq) == len(followed.run.sent) == sum(SIZES)
    assert all(by_uniq[s.msg_id].offsets == (s.phy_offset,) for s in followed.run.sent)
    tags = [a for a in followed.run.answers if a.query.kind == "tag"]
    assert tags and all(a.offsets for a in tags)


def test_a_follower_started_before_the_first_message_says_when_to_start(
    followed: Followed,
) -> None:
    """5.5.0 keeps ``rocksdbstore/`` from its start and makes ``index/`` at its first
    message: a follower started before that refuses with one line (it used to export the
    RocksDB database once and exit 0)."""
    status, err = followed.early
    assert status == 2
    one_error(err, "--follow", "no index/ yet", "once index/ exists")
    assert not (followed.dataset.parent / "early").exists()


def test_the_followed_dataset_equals_the_broker(
    followed: Followed, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    answers = followed.run.answers
    ours = rmqarrow_answers_on(capsys, followed.dataset, answers, tmp_path, "duckdb")
    assert differences(answers, ours) == []
    assert any(len(a.offsets) == CAP for a in answers)  # the cap is exercised


def test_the_followed_dataset_holds_every_acknowledged_message(followed: Followed) -> None:
    """``--commitlog``: the dataset's messages table has each message the client was told
    of, at the offset it was told, with its keys and tags, once."""
    import duckdb
    from rmqarrow.converters.parquet.parts import table_parts

    con = duckdb.connect()
    con.read_parquet([str(p) for p in table_parts(followed.dataset, "messages")]).create_view("m")
    rows = con.execute(
        "SELECT topic, uniq_key, physical_offset, coalesce(tags, ''), coalesce(keys_raw, '') "
        "FROM m WHERE topic IN ('Orders', 'Payments', 'Audit_log')"
    ).fetchall()
    sent = [
        (s.message.topic, s.msg_id, s.phy_offset, s.message.tags, " ".join(s.message.keys))
        for s in followed.run.sent
    ]
    assert sorted(rows) == sorted(sent)


def sink_answer(con: Any, q: KeyQuery) -> list[int]:
    """RocketMQ's lookup over the sink's entries: the key's hash within the time range,
    newest file first (names are the files' creation times), newest entry first, the
    first ``min(maxNum, 64)``.  (The broker's walk also stops at the first entry older
    than ``begin``; store times only grow here, so no older entry of the key follows.)"""
    rows = con.execute(
        "SELECT phy_offset FROM sink WHERE key_hash = ? AND store_timestamp BETWEEN ? AND ? "
        "ORDER BY file_name DESC, position DESC LIMIT ?",
        [index_key_hash(index_key(q)), q.begin, q.end, min(q.max_num, CAP)],
    ).fetchall()
    return [r[0] for r in rows]


def test_the_streaming_sink_equals_the_broker(followed: Followed) -> None:
    import duckdb

    files = committed_sink_files(followed.sink)
    assert files
    con = duckdb.connect()
    con.read_parquet([str(f) for f in files]).create_view("sink")
    count, distinct = con.execute(
        "SELECT count(*), count(DISTINCT (file_name, position)) FROM sink"
    ).fetchone()  # type: ignore[misc]
    assert count == distinct == followed.total_entries  # every entry once
    assert con.execute("SELECT max(slot) FROM sink").fetchone() < (SLOTS,)  # type: ignore[operator]
    answers = followed.run.answers
    ours = [sink_answer(con, a.query) for a in answers]
    assert differences(answers, ours) == []


def rmqarrow_answers_on(
    capsys: pytest.CaptureFixture[str],
    target: Path,
    answers: list[BrokerAnswer],
    tmp: Path,
    engine: str,
) -> list[list[int]]:
    """``rmqarrow query TARGET --engine ENGINE --queries FILE --json``."""
    queries = [a.query for a in answers]
    tsv = tmp / "queries.tsv"
    tsv.write_text(
        "".join(f"{index_key(q)}\t{q.max_num}\t{q.begin}\t{q.end}\n" for q in queries),
        encoding="utf-8",
    )
    status, out, err = run(
        capsys, "query", str(target), "--engine", engine, "--queries", str(tsv), "--json"
    )
    assert status == 0, err
    rows = json.loads(out)["answers"]
    assert [r["key"] for r in rows] == [index_key(q) for q in queries]
    return [list(r["phy_offsets"]) for r in rows]


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_sql_engines_on_the_live_store_equal_the_broker(
    followed: Followed,
    engine: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    if engine == "spark":
        request.getfixturevalue("spark")  # the test run's one session
    assert followed.run.broker.pids, "the broker stopped before the live comparison"
    answers = followed.run.answers
    ours = rmqarrow_answers_on(capsys, followed.run.store, answers, tmp_path, engine)
    assert differences(answers, ours) == []
    native = rmqarrow_answers(capsys, followed.run.store, [a.query for a in answers], tmp_path)
    assert [sorted(o) for o in ours] == [sorted(n) for n in native]
