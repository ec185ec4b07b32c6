"""The workload every release gets, and one release's run: broker, messages, answers.

Imported by the tests as ``rocketmq.workload`` (``tests`` is on the test path).
"""

from __future__ import annotations

import json
import struct
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_run import run

import rmqarrow
from rmqarrow.commitlog import iter_records
from rmqarrow.format.hashing import index_key_hash
from rmqarrow.testing.rocketmq import (
    Broker,
    BrokerAnswer,
    KeyQuery,
    Message,
    Sent,
    query_broker,
    resolve_release,
    run_broker,
    send_messages,
)

#: the newest release whose jars resolve from Maven Central here (5.5.1's client, namesrv,
#: tools, srvutil, filter and auth jars are not served; see docs/releases.md)
NEWEST = "5.5.0"

TOPICS = ("Orders", "Payments", "Audit_log")
#: keys beyond ASCII: Cyrillic, CJK, and one outside the BMP (a UTF-16 surrogate pair,
#: which Java's String.hashCode sees as two chars)
WIDE_KEYS = ("ключ-7", "键-42", "clé-é", "key-\U0001f511")
#: a key on every "Orders" message: more than a query may return (RocketMQ's
#: maxMsgsNumBatch, 64)
HOT_KEY = "hot"


def workload(batch: int, n: int) -> list[Message]:
    """``n`` messages of ``batch``: several topics, tags (or none), one to three keys."""
    out = []
    for i in range(n):
        g = batch * 1000 + i
        topic = TOPICS[i % len(TOPICS)]
        keys = [f"order-{g % 97}"]
        if i % 3 == 0:
            keys.append(f"user-{g % 13}")
        if i % 5 == 0:
            keys.append(WIDE_KEYS[g % len(WIDE_KEYS)])
        if topic == "Orders":
            keys.append(HOT_KEY)
        tags = ("", "TagA", "TagB", "TagA||TagB")[i % 4]
        body = f"message {g} " + "x" * (200 + (g * 37) % 1800)
        out.append(Message(topic, body, tags=tags, keys=tuple(dict.fromkeys(keys))))
    return out


@dataclass
class Run:
    """One release's broker and what was sent to it and asked of it."""

    broker: Broker
    sent: list[Sent]
    #: wall-clock ms between the two batches (a time range boundary), None for one batch
    split_ms: int | None
    #: whether the release indexes topic#T#tags (and answers tag queries)
    tags: bool
    answers: list[BrokerAnswer] = field(default_factory=list)

    @property
    def store(self) -> Path:
        return self.broker.store


def key_queries(run: Run) -> list[KeyQuery]:
    """Every (topic, key) once with the default cap, the hot key capped lower and split
    in time, and every unique key."""
    pairs = sorted({(s.message.topic, k) for s in run.sent for k in s.message.keys})
    queries = [KeyQuery(t, k) for t, k in pairs]
    queries.append(KeyQuery("Orders", HOT_KEY, max_num=10))
    if run.split_ms is not None:
        for t, k in [("Orders", HOT_KEY), *pairs[:: max(1, len(pairs) // 25)]]:
            queries.append(KeyQuery(t, k, begin=run.split_ms))
            queries.append(KeyQuery(t, k, end=run.split_ms))
    queries.extend(KeyQuery(s.message.topic, s.msg_id, kind="uniq") for s in run.sent)
    if run.tags:
        tagged = sorted({(s.message.topic, s.message.tags) for s in run.sent if s.message.tags})
        queries.extend(KeyQuery(t, tags, kind="tag") for t, tags in tagged)
    return queries


def start_run(
    version: str, workdir: Path, *, tags: bool, sizes: tuple[int, ...] = (180, 120)
) -> Iterator[Run]:
    """Start ``version``'s broker, send one or two batches of ``sizes`` messages, ask it
    every query of :func:`key_queries`; the broker runs until the caller's generator ends,
    and no process of the run outlives it."""
    release = resolve_release(version)
    with run_broker(release, workdir) as broker:
        sent = send_messages(broker, workload(0, sizes[0]), tag="batch0")
        split_ms = None
        if len(sizes) > 1:
            # the index keeps store times in whole seconds from its file's first message
            time.sleep(2.2)
            split_ms = int(time.time() * 1000)
            time.sleep(1.2)
            sent += send_messages(broker, workload(1, sizes[1]), tag="batch1")
        assert {s.status for s in sent} == {"SEND_OK"}
        run = Run(broker, sent, split_ms, tags)
        run.answers = query_broker(broker, key_queries(run))
        yield run
    assert processes_naming(workdir) == [], "a process of the run outlived it"


def processes_naming(path: Path) -> list[int]:
    """Pids of live processes whose command line names ``path``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(path).encode() in cmdline:
            found.append(int(entry.name))
    return found


# ---- reading what the broker wrote ----------------------------------------------------

#: the test geometry (DEFAULT_SETTINGS of the harness)
SLOTS, ENTRIES = 64, 256
HEADER = 40


def index_key(q: KeyQuery) -> str:
    """The index key rmqarrow is asked for ``q``."""
    return f"{q.topic}#T#{q.key}" if q.kind == "tag" else f"{q.topic}#{q.key}"


def rmqarrow_answers(
    capsys: pytest.CaptureFixture[str], store: Path, queries: list[KeyQuery], tmp: Path
) -> list[list[int]]:
    """``rmqarrow query STORE --queries FILE --json``: each query's offsets."""
    tsv = tmp / "queries.tsv"
    tsv.write_text(
        "".join(f"{index_key(q)}\t{q.max_num}\t{q.begin}\t{q.end}\n" for q in queries),
        encoding="utf-8",
    )
    status, out, err = run(capsys, "query", str(store), "--queries", str(tsv), "--json")
    assert status == 0, err
    rows = json.loads(out)["answers"]
    assert [r["key"] for r in rows] == [index_key(q) for q in queries]
    return [list(r["phy_offsets"]) for r in rows]


def entries(index_dir: Path) -> list[list[tuple[int, int, int, int]]]:
    """Each index file's entries (key hash, phy offset, time diff, prev), oldest file first,
    read straight from the bytes."""
    files = []
    for path in sorted(index_dir.iterdir()):
        data = path.read_bytes()
        count = struct.unpack_from(">i", data, 36)[0]
        base = HEADER + SLOTS * 4
        files.append([struct.unpack_from(">iqii", data, base + i * 20) for i in range(1, count)])
    return files


def candidates(store: Path) -> dict[tuple[int, int], set[str]]:
    """(key hash, phy offset) -> which kinds of index key of that message hash to it."""
    out: dict[tuple[int, int], set[str]] = {}
    for r in iter_records(store / "commitlog"):
        props = r.properties
        kinds = [(f"{r.topic}#{k}", "key") for k in (props.get("KEYS") or "").split(" ") if k]
        if props.get("UNIQ_KEY"):
            kinds.append((f"{r.topic}#{props['UNIQ_KEY']}", "uniqKey"))
        if props.get("TAGS"):
            kinds.append((f"{r.topic}#T#{props['TAGS']}", "tags"))
        for key, kind in kinds:
            out.setdefault((index_key_hash(key), r.physical_offset), set()).add(kind)
    return out


def rebuild(
    store: Path, out: Path, capsys: pytest.CaptureFixture[str], version: str | None = None
) -> Path:
    """``build --from-commitlog`` of the store's CommitLog, with the rules of ``version``
    (``--rocketmq-version``) when given, else the default rules."""
    target = out / "rebuilt"
    rules = [] if version is None else ["--rocketmq-version", version]
    status, _, err = run(
        capsys,
        "build",
        *rules,
        str(target),
        "--from-commitlog",
        str(store / "commitlog"),
        "--hash-slot-num",
        str(SLOTS),
        "--index-num",
        str(ENTRIES),
    )
    assert status == 0, err
    return target


def index_kinds(store: Path) -> Counter[str]:
    """How many of the store's index entries are of each kind of index key (``key``,
    ``uniqKey``, ``tags``); every entry must be one of its message's candidates."""
    found = candidates(store)
    kinds: Counter[str] = Counter()
    for file in entries(store / "index"):
        for key_hash, phy, _diff, _prev in file:
            matched = found.get((key_hash, phy))
            assert matched, f"entry {key_hash}@{phy} is none of the message's index keys"
            kinds["/".join(sorted(matched))] += 1
    return kinds


def expected_kinds(sent: list[Sent], *, tags: bool) -> Counter[str]:
    """What a release writes for ``sent``: an entry per key and per unique key, and one
    per message with tags when the release indexes tags."""
    out = Counter({"key": sum(len(s.message.keys) for s in sent), "uniqKey": len(sent)})
    if tags:
        out["tags"] = sum(1 for s in sent if s.message.tags)
    return out


def mismatches(
    capsys: pytest.CaptureFixture[str], run_: Run, tmp: Path
) -> list[tuple[object, ...]]:
    """Queries whose broker answer and ``rmqarrow query`` answer differ as sets."""
    ours = rmqarrow_answers(capsys, run_.store, [a.query for a in run_.answers], tmp)
    return [
        (index_key(a.query), a.query.max_num, a.query.begin, a.query.end, a.offsets, mine)
        for a, mine in zip(run_.answers, ours, strict=True)
        if sorted(a.offsets) != sorted(mine)
    ]


# ---- the RocksDB message index ---------------------------------------------------------

#: the letter rmqarrow's RocksDB query takes for each kind of the harness's queries
ROCKSDB_TYPE_OF = {"key": "K", "uniq": "U", "tag": "T"}


def rocksdb_mismatches(run_: Run) -> list[tuple[str, str, str, list[int], list[int]]]:
    """Queries whose broker answer and rmqarrow's read of the store's RocksDB index
    (``rmqarrow.open(store, index="rocksdb")``) differ as sets."""
    out = []
    with rmqarrow.open(run_.store, index="rocksdb") as store:
        for a in run_.answers:
            q = a.query
            mine = store.query(
                q.topic, q.key, index_type=ROCKSDB_TYPE_OF[q.kind], max_num=q.max_num,
                begin=q.begin, end=q.end,
            )  # fmt: skip
            if sorted(mine) != sorted(a.offsets):
                out.append((q.topic, q.key, q.kind, sorted(a.offsets), sorted(mine)))
    return out


def rocksdb_types(store: Path) -> Counter[str]:
    """How many records of each index type the store's RocksDB index holds."""
    with rmqarrow.open(store, index="rocksdb") as s:
        return Counter(s.scan("rocksdb_records", columns=["type"]).read_all().column(0).to_pylist())


def expected_rocksdb_types(sent: list[Sent]) -> Counter[str]:
    """K: one record per distinct key of a message; U: one per message; T: one per
    message with tags."""
    return Counter(
        {
            "K": sum(len(set(s.message.keys)) for s in sent),
            "U": len(sent),
            "T": sum(1 for s in sent if s.message.tags),
        }
    )
