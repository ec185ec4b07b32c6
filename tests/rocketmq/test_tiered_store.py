"""5.5.0 with tiered storage on its POSIX backend: rmqarrow reads the broker's tiered index.

One broker life, in four stages (each a module fixture, in the order the tests use them):

1. ``live``: the broker runs with ``TieredMessageStore`` (harness ``tiered_settings``: the
   POSIX backend in the test's folder, ``tieredStorageLevel=FORCE`` so that every key query
   is answered from the tier, small index files that roll over).  The workload is sent in
   two batches, the tier's dispatcher copies it and indexes it (local ``IndexStoreFile``s,
   full ones compacted and uploaded as segments), and the broker is asked every query.
2. ``crashed``: the broker is killed with SIGKILL; its newest index file stays local.
3. ``restarted``: a broker on the same store and tier folder; its recovery reopens the
   local file (where RocketMQ's recovery reads the end time from the begin field).
4. ``stopped``: that broker stopped cleanly; every index file is now an uploaded segment.

The broker's answer to a query is the list of (queue id, offset) of the messages RocketMQ's
client gets: with tiered storage, a message's offset is its position in its queue's tiered
CommitLog (the tier rewrites the stored physical offset), which is what a tiered index item
holds.  Answers are compared as sets.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from cli_run import run
from rocketmq.workload import HOT_KEY, NEWEST, Run, key_queries, processes_naming, workload

import rmqarrow
from rmqarrow.commitlog.record import Record, parse_record
from rmqarrow.testing.rocketmq import (
    Broker,
    BrokerAnswer,
    KeyQuery,
    Sent,
    query_broker,
    resolve_release,
    run_broker,
    send_messages,
    tiered_index_local,
    tiered_index_segments,
    tiered_settings,
)
from rmqarrow.tiered import TieredIndexStore, key_hash
from rmqarrow.tiered.layout.binary import HEADER_STRUCT, ITEM_DTYPE, items_position
from rmqarrow.tiered.layout.naming import parse_segment_name

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

#: the tiered index geometry of the run (``tiered_settings``' defaults)
SLOTS, ITEMS = 64, 256
#: how long the tier may take to index the workload: its dispatcher runs every 20 s and
#: needs two rounds for a new queue (one to start the queue, one to copy it)
INDEX_TIMEOUT = 150.0

Pair = tuple[int, int]  # (queue id, offset in the queue's tiered CommitLog)


@dataclass
class Tier:
    """What one stage of the broker's life left: its answers and the files' headers."""

    broker: Broker
    answers: list[BrokerAnswer] = field(default_factory=list)
    #: file name -> (magic, begin, end, hash slot count, item count), read from the bytes
    headers: dict[str, tuple[int, int, int, int, int]] = field(default_factory=dict)
    #: the local index files' bytes (name -> bytes) when the stage was recorded
    local_bytes: dict[str, bytes] = field(default_factory=dict)
    #: query position -> the broker's first answer, where it was short and asked again
    short: dict[int, BrokerAnswer] = field(default_factory=dict)

    @property
    def local(self) -> Path:
        return tiered_index_local(self.broker)

    @property
    def segments(self) -> Path:
        return tiered_index_segments(self.broker)


@dataclass
class TieredRun:
    workdir: Path
    sent: list[Sent]
    queries: list[KeyQuery]
    stages: dict[str, Tier] = field(default_factory=dict)

    @property
    def tier_folder(self) -> Path:
        return self.workdir / "tier"


def _headers(*folders: Path) -> dict[str, tuple[int, int, int, int, int]]:
    out = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            try:
                with open(p, "rb") as fh:
                    head = fh.read(HEADER_STRUCT.size)
            except (FileNotFoundError, IsADirectoryError):
                continue  # compacting/, or a local file deleted by its upload meanwhile
            if len(head) == HEADER_STRUCT.size:
                out[p.name] = HEADER_STRUCT.unpack(head)
    return out


def _local_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.isdigit())


def _record(tier: Tier) -> None:
    """Keep the stage's headers and local files' bytes."""
    tier.headers = _headers(tier.local, tier.segments)
    tier.local_bytes = {p.name: p.read_bytes() for p in _local_files(tier.local)}


def _wait_until_indexed(tier: Tier, expected: int) -> None:
    """Until the tier's index holds ``expected`` items and every full file is uploaded."""
    deadline = time.monotonic() + INDEX_TIMEOUT
    while True:
        headers = _headers(tier.local, tier.segments)
        held = sum(h[4] for h in headers.values())
        if held == expected and len(_local_files(tier.local)) == 1:
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"after {INDEX_TIMEOUT:.0f} s the tiered index holds {held} of {expected} "
                f"items; files: {headers}"
            )
        time.sleep(1.0)


def _ask(broker: Broker, queries: list[KeyQuery], tag: str) -> list[BrokerAnswer]:
    """The broker's answers; asked again while it still says a sent unique key is unknown
    (a restarted broker opens its tiered queues in the background after it boots)."""
    for _ in range(10):
        answers = query_broker(broker, queries, tag=tag)
        if all(a.offsets for a in answers if a.query.kind == "uniq"):
            break
        time.sleep(2.0)
    return answers


def _pairs(answer: BrokerAnswer) -> set[Pair]:
    return set(zip(answer.queue_ids, answer.offsets, strict=True))


def _store_queries(queries: list[KeyQuery]) -> list[tuple[str, str, int, int, int]]:
    return [(q.topic, q.key, q.max_num, q.begin, q.end) for q in queries]


@dataclass(frozen=True)
class Ours:
    """rmqarrow's answer to one query, and each selected file's RocketMQ answer."""

    merged: set[Pair]  #: rmqarrow's answer (files merged newest first)
    per_file: list[list[Pair]]  #: each selected file's answer, newest file first
    max_num: int

    @property
    def capped(self) -> bool:
        """Whether the files hold more hits than the query may return."""
        return len({p for f in self.per_file for p in f}) > self.max_num

    def allows(self, theirs: set[Pair]) -> bool:
        """Whether RocketMQ's merge can give ``theirs``: exactly ``merged`` when the cap
        does not bind.  When it binds, 5.5.0 (``IndexStoreService.queryAsync``) adds each
        file's hits on whichever thread finishes that file's read, checking that fewer
        than ``maxNum`` are held and then adding, not as one step; files read at the same
        time can so hold more than ``maxNum`` together, and it returns the first
        ``maxNum`` values of a ``ConcurrentHashMap``, in hash order.  The answer is then
        ``maxNum`` of the files' hits, any of them."""
        if not self.capped:
            return theirs == self.merged
        every = {p for f in self.per_file for p in f}
        return len(theirs) == self.max_num and theirs <= every

    def short(self, theirs: set[Pair]) -> bool:
        """Fewer hits than RocketMQ's merge gives, all of them hits of the files."""
        every = {p for f in self.per_file for p in f}
        return theirs < every and len(theirs) < min(self.max_num, len(every))


def _mismatches(
    answers: list[BrokerAnswer], ours: list[Ours]
) -> list[tuple[str, str, int, int, int, list[Pair], list[Pair]]]:
    return [
        (a.query.topic, a.query.key, a.query.max_num, a.query.begin, a.query.end,
         sorted(_pairs(a)), sorted(mine.merged))
        for a, mine in zip(answers, ours, strict=True)
        if not mine.allows(_pairs(a))
    ]  # fmt: skip


def _reask_short_answers(tier: Tier, ours: list[Ours]) -> None:
    """Ask the running broker again, up to six times a second apart, each query it
    answered short; keep its first answer in ``tier.short``.

    5.5.0 sometimes answers a query with many hits short: its tiered store finds every
    message (its tiered_store.log says how many), but RocketMQ's client gets only part
    of them.  The likely cause, read from the jar and not confirmed: the POSIX backend
    reads a file by setting the position of a channel that every reader shares and then
    reading, from several threads at once, so one message's bytes can come from another
    position and the client stops decoding there.
    """
    # three asks were once not enough on a loaded machine: the race below is timing's
    for attempt in range(6):
        if attempt:
            time.sleep(1)
        short = [
            i for i, (a, mine) in enumerate(zip(tier.answers, ours, strict=True))
            if mine.short(_pairs(a))
        ]  # fmt: skip
        if not short:
            return
        again = query_broker(tier.broker, [tier.answers[i].query for i in short], tag="again")
        for i, a in zip(short, again, strict=True):
            tier.short.setdefault(i, tier.answers[i])
            tier.answers[i] = a


def _store_found(tier: Tier, q: KeyQuery) -> list[int]:
    """How many messages the broker's tiered store found, each time it was asked ``q``
    (its tiered_store.log)."""
    log = tier.broker.home / "logs" / "rocketmqlogs" / "tiered_store.log"
    line = re.compile(
        rf"query result=(\d+), topic={re.escape(q.topic)}, topicId=\d+, "
        rf"key={re.escape(q.key)}, maxCount={q.max_num}, timestamp={q.begin}-{q.end}\b"
    )
    return [int(n) for n in line.findall(log.read_text("utf-8", errors="replace"))]


def _check_short_answers(tier: Tier) -> None:
    """Each short first answer: the store found the whole answer every time it was asked;
    only the client's reply held less."""
    for i, first in tier.short.items():
        final = _pairs(tier.answers[i])
        assert len(_pairs(first)) < len(final)
        found = _store_found(tier, first.query)
        # the log may not yet hold the line of the last ask (it is written as it comes)
        assert found and set(found) == {len(final)}, (first.query, found)


def _both_folders(tier: Tier) -> list[Ours]:
    """rmqarrow's answers over the local files and the uploaded segments together, as
    RocketMQ's IndexStoreService holds them, and each selected file's answer."""
    queries = [a.query for a in tier.answers]
    with TieredIndexStore.open(tier.broker.store, SLOTS, ITEMS, segment_dir=tier.segments) as st:
        merged = st.query_many(_store_queries(queries))
        out = []
        for q, m in zip(queries, merged, strict=True):
            assert not isinstance(m, Exception), m
            per_file = [
                [(i.queue_id, i.offset) for i in f.query(q.topic, q.key, q.max_num, q.begin, q.end)]
                for f in st.select(q.begin, q.end)
            ]
            out.append(Ours({(i.queue_id, i.offset) for i in m}, per_file, q.max_num))
    return out


def _cli_answers(
    capsys: pytest.CaptureFixture[str], folder: Path, queries: list[KeyQuery], tmp: Path
) -> list[set[Pair]]:
    """``rmqarrow query FOLDER --queries FILE --json``: each query's (queue id, offset)."""
    tsv = tmp / "queries.tsv"
    tsv.write_text(
        "".join(f"{q.topic}#{q.key}\t{q.max_num}\t{q.begin}\t{q.end}\n" for q in queries),
        encoding="utf-8",
    )
    status, out, err = run(capsys, "query", str(folder), "--queries", str(tsv), "--json")
    assert status == 0, err
    rows = json.loads(out)["answers"]
    assert len(rows) == len(queries)
    return [{(r["queue_id"], r["offset"]) for r in row["items"]} for row in rows]


def _items(path: Path) -> list[tuple[int, int, int, int]]:
    """A local file's items (hash code, queue id, offset, time diff), from the bytes."""
    data = path.read_bytes()
    count = HEADER_STRUCT.unpack_from(data, 0)[4]
    table = np.frombuffer(data, ITEM_DTYPE, count, items_position(SLOTS) + ITEM_DTYPE.itemsize)
    return [
        (int(r["hash_code"]), int(r["queue_id"]), int(r["offset"]), int(r["time_diff"]))
        for r in table
    ]


def _message_of(
    item: tuple[int, int, int, int], records: dict[tuple[str, int, int], Record]
) -> Record:
    """The message an item indexes: at its queue and offset in a topic's tiered CommitLog,
    with a key or unique key of that topic whose hash is the item's."""
    h, queue, offset, _ = item
    found = [
        r
        for (topic, q, off), r in records.items()
        if (q, off) == (queue, offset)
        and h in {key_hash(topic, k) for k in [*r.key_list, r.uniq_key or ""]}
    ]
    assert len(found) == 1, (item, found)
    return found[0]


# ---- the broker's life ----------------------------------------------------------------


@pytest.fixture(scope="module")
def tiered_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TieredRun]:
    workdir = tmp_path_factory.mktemp(f"rocketmq-{NEWEST}-tiered")
    release = resolve_release(NEWEST)
    settings = tiered_settings(workdir / "tier", hash_slot_num=SLOTS, index_num=ITEMS)
    with run_broker(release, workdir / "first", settings) as broker:
        sent = send_messages(broker, workload(0, 120), tag="batch0")
        # the index keeps whole seconds from each file's begin timestamp
        time.sleep(2.2)
        split_ms = int(time.time() * 1000)
        time.sleep(1.2)
        sent += send_messages(broker, workload(1, 80), tag="batch1")
        assert {s.status for s in sent} == {"SEND_OK"}
        queries = key_queries(Run(broker, sent, split_ms, tags=False))
        run_ = TieredRun(workdir, sent, queries)
        first = Tier(broker)
        # one item per unique key and one per key of each message
        _wait_until_indexed(first, sum(1 + len(s.message.keys) for s in sent))
        first.answers = _ask(broker, queries, "live")
        _record(first)
        run_.stages["live"] = first
        yield run_
    assert processes_naming(workdir) == [], "a process of the run outlived it"


@pytest.fixture(scope="module")
def live(tiered_run: TieredRun) -> Tier:
    return tiered_run.stages["live"]


@pytest.fixture(scope="module")
def crashed(tiered_run: TieredRun) -> Tier:
    """The first broker killed with SIGKILL (then its name server stopped)."""
    first = tiered_run.stages["live"]
    first.broker.kill()
    first.broker.stop()
    tier = Tier(first.broker, first.answers)
    _record(tier)
    tiered_run.stages["crashed"] = tier
    return tier


@pytest.fixture(scope="module")
def restarted(tiered_run: TieredRun, crashed: Tier) -> Iterator[Tier]:
    """A second broker on the crashed broker's store and tier folder, running."""
    release = crashed.broker.release
    settings = {
        **crashed.broker.settings,
        "storePathRootDir": str(crashed.broker.store),
        "storePathCommitLog": str(crashed.broker.store / "commitlog"),
    }
    for k in ("listenPort", "namesrvAddr"):
        del settings[k]
    with run_broker(release, tiered_run.workdir / "second", settings) as broker:
        tier = Tier(broker)
        _record(tier)  # before any query: what the recovery alone wrote
        tier.answers = _ask(broker, tiered_run.queries, "restarted")
        tiered_run.stages["restarted"] = tier
        yield tier


@pytest.fixture(scope="module")
def stopped(restarted: Tier) -> Tier:
    """The restarted broker after a clean shutdown (SIGTERM): every file uploaded."""
    restarted.broker.stop()
    assert not (restarted.broker.store / "abort").exists(), "no clean shutdown"
    tier = Tier(restarted.broker, restarted.answers)
    _record(tier)
    return tier


def _tiered_records(run_: TieredRun) -> dict[tuple[str, int, int], Record]:
    """(topic, queue id, offset) -> the message at that offset of the queue's tiered
    CommitLog, read from the POSIX backend's files."""
    found: dict[tuple[str, int, int], Record] = {}
    cluster = next(run_.tier_folder.iterdir())
    for log in sorted(cluster.glob("*/*/*/COMMIT_LOG")):
        topic, queue = log.parent.parent.name, int(log.parent.name)
        for seg in sorted(log.iterdir()):
            base = parse_segment_name(seg.name)
            assert base is not None, seg
            data = seg.read_bytes()
            pos = 0
            while pos < len(data):
                r = parse_record(data, pos, seg, base)
                found[(topic, queue, base + pos)] = r
                pos += r.total_size
    return found


# ---- 1. while the broker runs ---------------------------------------------------------


def test_the_tier_indexes_every_key_and_unique_key(live: Tier, tiered_run: TieredRun) -> None:
    """The index files the broker wrote: some uploaded (compacted segments), the newest
    local; one item per unique key and per key (no tag items in the tiered index)."""
    segments = sorted(live.segments.iterdir())
    assert len(segments) >= 2 and all(parse_segment_name(p.name) is not None for p in segments)
    assert len(_local_files(live.local)) == 1
    items = sum(h[4] for h in live.headers.values())
    assert items == sum(1 + len(s.message.keys) for s in tiered_run.sent)
    # files the dispatcher begins while it copies messages stored before: end < begin
    assert any(end < begin for _, begin, end, _, _ in live.headers.values())


def test_broker_answers_from_the_tier(live: Tier, tiered_run: TieredRun) -> None:
    """The ground the comparisons stand on: each unique key answers one message, at the
    offset where the tier's CommitLog holds that very message."""
    records = _tiered_records(tiered_run)
    by_uniq = {a.query.key: a for a in live.answers if a.query.kind == "uniq"}
    assert len(by_uniq) == len(tiered_run.sent) == 200
    moved = 0
    for s in tiered_run.sent:
        ((queue, offset),) = _pairs(by_uniq[s.msg_id])
        assert queue == s.queue_id
        record = records[(s.message.topic, queue, offset)]
        assert record.uniq_key == s.msg_id
        # the tier stores the message with its offset in the tier, not the broker's
        assert record.physical_offset == offset
        moved += offset != s.phy_offset
    assert moved >= len(tiered_run.sent) - 1


def test_rmqarrow_on_the_live_tier_equals_the_broker(live: Tier) -> None:
    """Local files and uploaded segments read together (``TieredIndexStore.open`` with
    ``segment_dir``): every query, key by key, the 64 cap, a lower ``maxNum`` and the
    time ranges included.  Where the cap binds across files the broker's pick is one its
    merge can make (:meth:`Ours.allows`), and so is rmqarrow's (newest file first)."""
    assert live.broker.pids, "the broker stopped before the live comparison"
    ours = _both_folders(live)
    _reask_short_answers(live, ours)
    assert _mismatches(live.answers, ours) == []
    _check_short_answers(live)
    capped = [mine for mine in ours if mine.capped]
    assert len(capped) == 2 and all(mine.allows(mine.merged) for mine in capped)
    hot = [a for a in live.answers if a.query.key == HOT_KEY and a.query.begin == 0]
    assert sorted(len(a.offsets) for a in hot if a.query.end == 2**62) == [10, 64]
    split = [a for a in live.answers if a.query.kind == "key" and a.query.begin > 0]
    assert any(a.offsets for a in split)


def test_rmqarrow_answers_the_messages_that_carry_the_key(
    live: Tier, tiered_run: TieredRun
) -> None:
    """Beyond matching the broker: each uncapped key query over all time answers exactly
    the sent messages with that key, traced through the tier's CommitLog."""
    records = _tiered_records(tiered_run)
    ours = _both_folders(live)
    checked = 0
    for a, mine in zip(live.answers, ours, strict=True):
        q = a.query
        if q.kind != "key" or (q.begin, q.end) != (0, 2**62) or q.key == HOT_KEY:
            continue
        carriers = {
            s.msg_id
            for s in tiered_run.sent
            if s.message.topic == q.topic and q.key in s.message.keys
        }
        assert not mine.capped
        assert {records[(q.topic, qid, off)].uniq_key for qid, off in mine.merged} == carriers
        checked += 1
    assert checked > 100


def test_cli_and_check_on_the_live_segments(live: Tier, capsys: pytest.CaptureFixture[str]) -> None:
    """The segment folder alone (what the broker has uploaded so far) is a tiered store
    for ``rmqarrow.open``, ``info`` and ``check``; the local folder too."""
    for folder, form in ((live.segments, "compacted"), (live.local, "unsealed")):
        status, out, err = run(capsys, "info", str(folder), "--json")
        assert status == 0, err
        files = json.loads(out)["files"]
        assert files and all(f["form"].startswith(form) for f in files)
        status, out, err = run(capsys, "check", str(folder))
        assert status == 0, out + err
        assert "note:" not in err  # every end timestamp is the newest store time
        with rmqarrow.open(folder) as store:
            assert store.kind == "tiered"


# ---- 2. killed with SIGKILL -----------------------------------------------------------


def test_after_the_crash_the_local_file_holds_its_true_end_time(
    crashed: Tier, tiered_run: TieredRun
) -> None:
    """The newest file stays local (only a clean shutdown uploads it); its header's end
    timestamp is the newest store time of the messages it indexes, traced through the
    tier's CommitLog, and nothing changed since the live comparison."""
    (local,) = _local_files(crashed.local)
    records = _tiered_records(tiered_run)
    newest = max(_message_of(i, records).store_timestamp for i in _items(local))
    _, begin, end, _, count = crashed.headers[local.name]
    assert (begin, end) == (int(local.name), newest)
    assert count == len(_items(local)) > 0
    assert crashed.headers == tiered_run.stages["live"].headers


def test_rmqarrow_on_the_crashed_tier_equals_the_broker_before_the_crash(crashed: Tier) -> None:
    assert crashed.broker.pids == []
    assert _mismatches(crashed.answers, _both_folders(crashed)) == []


# ---- 3. restarted on the same store and tier folder ----------------------------------


def test_recovery_writes_the_begin_time_as_the_end_time(
    restarted: Tier, crashed: Tier, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where RocketMQ's recovery reads the end time from the begin field: on reopening the
    local file it rewrites the header with ``end = begin``; the items stay as they were.
    rmqarrow reads the header as it is."""
    (name,) = crashed.local_bytes
    before, after = crashed.local_bytes[name], restarted.local_bytes[name]
    magic, begin, end, slots, count = crashed.headers[name]
    assert end != begin
    assert restarted.headers[name] == (magic, begin, begin, slots, count)
    assert after[HEADER_STRUCT.size :] == before[HEADER_STRUCT.size :]
    status, out, err = run(capsys, "info", str(restarted.local / name), "--json")
    assert status == 0, err
    info = json.loads(out)
    assert (info["begin_timestamp"], info["end_timestamp"]) == (begin, begin)
    # check: healthy, with a note that the end timestamp is not the newest store time
    status, out, err = run(capsys, "check", str(restarted.local))
    assert status == 0, out + err
    assert f"note: {restarted.local / name}: the header's end timestamp {begin} " in err


def test_restarted_broker_answers_as_before_and_as_rmqarrow(restarted: Tier, crashed: Tier) -> None:
    """The end time plays no part in a 5.5.0 query (files are chosen by begin time and
    items by begin + time diff), so the restarted broker gives its answers of before the
    crash (where the cap binds, another pick its merge can make), and rmqarrow, reading
    the recovered file's bytes, gives the same."""
    assert restarted.broker.pids, "the restarted broker is not running"
    ours = _both_folders(restarted)
    _reask_short_answers(restarted, ours)
    assert _mismatches(restarted.answers, ours) == []
    _check_short_answers(restarted)
    assert _mismatches(crashed.answers, ours) == []
    for a, b, mine in zip(restarted.answers, crashed.answers, ours, strict=True):
        assert mine.capped or _pairs(a) == _pairs(b)


# ---- 4. the restarted broker stopped cleanly -----------------------------------------


def test_the_upload_keeps_the_wrong_end_time(stopped: Tier, crashed: Tier) -> None:
    """A clean shutdown compacts and uploads the recovered file: the new segment's header,
    and the segment's end time in the broker's tiered metadata (by which RocketMQ expires
    index segments), say ``end = begin``; the other segments keep their true end times."""
    assert _local_files(stopped.local) == []
    (name,) = crashed.local_bytes
    _, begin, _, slots, count = crashed.headers[name]
    new = [n for n in stopped.headers if n not in crashed.headers]
    assert len(new) == 1
    assert stopped.headers[new[0]][1:] == (begin, begin, slots, count)
    for n, h in crashed.headers.items():
        if n != name:
            assert stopped.headers[n] == h
    meta = (stopped.broker.store / "config" / "tieredStoreMetadata.json").read_text("utf-8")
    ends = dict(
        (int(b), int(e))
        for b, e in re.findall(r'"beginTimestamp":(\d+),\s*"endTimestamp":(\d+)', meta)
    )
    assert ends[begin] == begin


def test_rmqarrow_on_the_uploaded_tier_equals_the_restarted_broker(
    stopped: Tier, tiered_run: TieredRun, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The segment folder now holds the whole index: ``rmqarrow query`` (CLI) and
    ``rmqarrow.open`` on it give the restarted broker's answers, and ``check`` finds it
    healthy."""
    queries = [a.query for a in stopped.answers]
    cli = _cli_answers(capsys, stopped.segments, queries, tmp_path)
    ours = _both_folders(stopped)
    assert cli == [mine.merged for mine in ours]
    assert _mismatches(stopped.answers, ours) == []
    with rmqarrow.open(stopped.segments) as store:
        assert store.kind == "tiered"
        q = next(q for q in queries if q.key == HOT_KEY and q.max_num == 10)
        items = store.query(q.topic, q.key, max_num=q.max_num)
        assert {(i.queue_id, i.offset) for i in items} == cli[queries.index(q)]
    status, out, err = run(capsys, "check", str(stopped.segments), "--json")
    assert status == 0, out + err
    noted = {Path(f["file"]).name for f in json.loads(out)["files"] if f["notes"]}
    recovered = {n for n, h in stopped.headers.items() if h[1] == h[2]}
    assert noted == recovered and len(noted) == 1


def test_export_of_the_uploaded_tier(
    stopped: Tier, crashed: Tier, tiered_run: TieredRun,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:  # fmt: skip
    """``rmqarrow export`` writes the tiered dataset: every item, and each file's header
    as the bytes say (the recovered file's end time equal to its begin time)."""
    out_dir = tmp_path / "lake"
    status, out, err = run(capsys, "export", str(stopped.segments), str(out_dir), "--json")
    assert status == 0, err
    summary = json.loads(out)
    assert summary["kind"] == "tiered"
    assert summary["tiered_items"] == sum(1 + len(s.message.keys) for s in tiered_run.sent)
    files = pq.read_table(out_dir / "tiered_files").to_pylist()
    assert len(files) == len(stopped.headers)
    (name,) = crashed.local_bytes
    begin = int(name)
    (recovered,) = [f for f in files if f["begin_timestamp"] == begin]
    assert recovered["end_timestamp"] == begin
