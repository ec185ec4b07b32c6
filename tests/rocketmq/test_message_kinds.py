"""5.5.0 and the kinds of message an ordinary workload lacks, sent through RocketMQ's own
client: transactional (prepared, then committed or rolled back), delayed (level 1, 1 s),
many topics, keys and tags beyond ASCII, and keys whose ``topic#key`` share a Java hash.

One broker run: everything is sent (the send returns once each committed or delayed
message is in its topic), the broker is asked every key, unique key and tags query, and
rmqarrow answers the same queries from the store while the broker runs and after a clean
stop.  What the broker wrote to its index is then classified from the CommitLog, and
``build --from-commitlog --rocketmq-version 5.5.0`` is compared byte for byte.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run import run
from rocketmq.workload import (
    NEWEST,
    Run,
    candidates,
    entries,
    index_key,
    processes_naming,
    rebuild,
    rmqarrow_answers,
)

import rmqarrow
from rmqarrow.commitlog import iter_records
from rmqarrow.format.hashing import index_key_hash
from rmqarrow.testing.rocketmq import (
    KeyQuery,
    Message,
    Sent,
    query_broker,
    resolve_release,
    run_broker,
    send_messages,
)

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

TOPIC = "Kinds"
#: where the broker keeps a transactional message until it ends, and a delayed one until due
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
MANY_TOPICS = tuple(f"Many_{i:02d}" for i in range(24))
WIDE_KEYS = ("订单-7", "🔑-7", "ключ-7", "😀")
WIDE_TAGS = "标签"


def _twin(key: str) -> str:
    """Another key with the same Java hash: its last two UTF-16 units ``a, b`` become
    ``a + 1, b - 31`` (``31*a + b`` is unchanged: the ``"Aa"``/``"BB"`` trick)."""
    return key[:-2] + chr(ord(key[-2]) + 1) + chr(ord(key[-1]) - 31)


#: (topic, key) pairs whose index keys ``topic#key`` differ but hash alike: ASCII, CJK
#: after an emoji (a surrogate pair), and one key in two topics whose names collide
COLLISIONS = (
    ((TOPIC, "pairAa"), (TOPIC, _twin("pairAa"))),
    ((TOPIC, "🔑键~"), (TOPIC, _twin("🔑键~"))),
    (("KindsAa", "same"), (_twin("KindsAa"), "same")),
)


def messages() -> list[Message]:
    out = []
    for i, topic in enumerate(MANY_TOPICS):
        for j in range(2):
            out.append(Message(topic, f"many {i} {j}", tags="TagM", keys=(f"m-{i}", f"mj-{j}")))
    for i, key in enumerate(WIDE_KEYS):
        out.append(Message(TOPIC, f"wide {i}", tags=WIDE_TAGS, keys=(key, "wide")))
    for pair in COLLISIONS:
        for n, (topic, key) in enumerate(pair):
            # the first of each pair twice: each side's answer has its own size
            for _ in range(2 - n):
                out.append(Message(topic, f"collision {key}", tags="TagX", keys=(key,)))
    for i in range(3):
        out.append(Message(TOPIC, f"commit {i}", tags="TagC", keys=(f"txn-c-{i}", "txn"),
                           transaction="commit"))  # fmt: skip
        out.append(Message(TOPIC, f"rollback {i}", tags="TagR", keys=(f"txn-r-{i}", "txn"),
                           transaction="rollback"))  # fmt: skip
    out.append(Message(TOPIC, "commit, no tags", keys=("txn-c-plain",), transaction="commit"))
    for i in range(3):
        out.append(Message(TOPIC, f"delay {i}", tags="TagD", keys=(f"delay-{i}",), delay_level=1))
    return out


def queries(sent: list[Sent]) -> list[KeyQuery]:
    """Each key and unique key in its topic (rolled-back ones included), each topic's
    tags, and the keys of the prepared and scheduled copies in the broker's own topics."""
    keys = sorted({(s.message.topic, k) for s in sent for k in s.message.keys})
    out = [KeyQuery(t, k) for t, k in keys]
    out += [KeyQuery(s.message.topic, s.msg_id, kind="uniq") for s in sent]
    tags = sorted({(s.message.topic, s.message.tags) for s in sent if s.message.tags})
    out += [KeyQuery(t, g, kind="tag") for t, g in tags]
    staged = [s for s in sent if s.message.transaction or s.message.delay_level]
    for s in staged:
        system = HALF_TOPIC if s.message.transaction else SCHEDULE_TOPIC
        out += [KeyQuery(system, k) for k in s.message.keys if k != "txn"]
        out.append(KeyQuery(system, s.msg_id, kind="uniq"))
    return out


@pytest.fixture(scope="module")
def kinds_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    release = resolve_release(NEWEST)
    workdir = tmp_path_factory.mktemp(f"rocketmq-{NEWEST}-kinds")
    with run_broker(release, workdir) as broker:
        sent = send_messages(broker, messages())
        assert {s.status for s in sent} == {"SEND_OK"}
        run_ = Run(broker, sent, None, True)
        run_.answers = query_broker(broker, queries(sent))
        yield run_
    assert processes_naming(workdir) == []


@pytest.fixture(scope="module")
def kinds_stopped(kinds_run: Run) -> Run:
    kinds_run.broker.stop()
    assert not (kinds_run.store / "abort").exists(), "the broker did not shut down cleanly"
    return kinds_run


def _by_kind(run_: Run, kind: str) -> list[Sent]:
    m = {"commit": lambda s: s.message.transaction == "commit",
         "rollback": lambda s: s.message.transaction == "rollback",
         "delay": lambda s: s.message.delay_level > 0}[kind]  # fmt: skip
    return [s for s in run_.sent if m(s)]


def _answer(run_: Run, topic: str, key: str, kind: str = "key") -> tuple[int, ...]:
    (a,) = [
        a for a in run_.answers if (a.query.topic, a.query.key, a.query.kind) == (topic, key, kind)
    ]
    return a.offsets


def _compare(run_: Run, capsys: pytest.CaptureFixture[str], tmp: Path) -> None:
    """rmqarrow's answer to every query equals the broker's.  Where distinct index keys
    share a hash (the deliberate collisions, and the tags of the two topics whose names
    collide), both sides' index hits are the same: each rmqarrow answer holds every
    message of the group, and the broker's client keeps those that really carry the key
    or tags; rmqarrow's resolution (``store.resolve``, ``index_type="T"`` for tags) keeps
    the same."""
    qs = [a.query for a in run_.answers]
    ours = rmqarrow_answers(capsys, run_.store, qs, tmp)
    groups: dict[int, set[str]] = {}
    for q in qs:
        groups.setdefault(index_key_hash(index_key(q)), set()).add(index_key(q))
    union: dict[int, set[int]] = {}
    for a in run_.answers:
        union.setdefault(index_key_hash(index_key(a.query)), set()).update(a.offsets)
    collided = {h for h, keys in groups.items() if len(keys) > 1}
    assert len(collided) == len(COLLISIONS) + 1  # the keys, and the tags TagX of 2 topics
    wrong = []
    for a, mine in zip(run_.answers, ours, strict=True):
        h = index_key_hash(index_key(a.query))
        want = union[h] if h in collided else set(a.offsets)
        if sorted(mine) != sorted(want) or len(mine) != len(want):
            wrong.append((index_key(a.query), a.offsets, mine))
    assert wrong == []
    with rmqarrow.open(run_.store) as store:
        for a, mine in zip(run_.answers, ours, strict=True):
            if index_key_hash(index_key(a.query)) in collided:
                t = "T" if a.query.kind == "tag" else None
                kept = store.resolve(a.query.topic, a.query.key, mine, index_type=t).phy_offsets
                assert sorted(kept) == sorted(a.offsets) != [], a.query
                assert len(mine) > len(kept)  # the other key's messages share the hash


# ---- what was sent and what the broker says ------------------------------------------


def test_the_collided_keys_share_a_hash() -> None:
    for (t1, k1), (t2, k2) in COLLISIONS:
        assert f"{t1}#{k1}" != f"{t2}#{k2}"
        assert index_key_hash(f"{t1}#{k1}") == index_key_hash(f"{t2}#{k2}")


def test_the_broker_stages_and_delivers_as_expected(kinds_run: Run) -> None:
    """The ground: a committed or delayed message is in its topic at a new offset; a
    rolled-back one never is; the broker answers each by its own offset."""
    for s in _by_kind(kinds_run, "commit") + _by_kind(kinds_run, "delay"):
        assert s.delivered_offset is not None and s.delivered_offset > s.phy_offset
        assert _answer(kinds_run, TOPIC, s.msg_id, "uniq") == (s.delivered_offset,)
    for s in _by_kind(kinds_run, "rollback"):
        assert s.delivered_offset is None
        assert _answer(kinds_run, TOPIC, s.msg_id, "uniq") == ()
        assert all(_answer(kinds_run, TOPIC, k) == () for k in s.message.keys if k != "txn")
    committed = sorted(
        s.delivered_offset for s in _by_kind(kinds_run, "commit") if s.message.keys[-1] == "txn"
    )
    assert sorted(_answer(kinds_run, TOPIC, "txn")) == committed
    assert _answer(kinds_run, TOPIC, "TagR", "tag") == ()
    # the staged copies, asked in the broker's own topics: each answers its staged offset
    for s in _by_kind(kinds_run, "commit") + _by_kind(kinds_run, "rollback"):
        assert _answer(kinds_run, HALF_TOPIC, s.message.keys[0]) == (s.phy_offset,)
        assert _answer(kinds_run, HALF_TOPIC, s.msg_id, "uniq") == (s.phy_offset,)
    for s in _by_kind(kinds_run, "delay"):
        assert _answer(kinds_run, SCHEDULE_TOPIC, s.message.keys[0]) == (s.phy_offset,)
        assert _answer(kinds_run, SCHEDULE_TOPIC, s.msg_id, "uniq") == (s.phy_offset,)
    for s in kinds_run.sent:
        if not (s.message.transaction or s.message.delay_level):
            assert s.delivered_offset == s.phy_offset
            assert _answer(kinds_run, s.message.topic, s.msg_id, "uniq") == (s.phy_offset,)
    for pair in COLLISIONS:
        a, b = (_answer(kinds_run, t, k) for t, k in pair)
        assert (len(a), len(b)) == (2, 1) and not set(a) & set(b)


def test_what_the_commitlog_holds(kinds_run: Run) -> None:
    """Where each kind of message is stored: prepared copies in the half topic, scheduled
    copies in SCHEDULE_TOPIC_XXXX, and only committed and delivered copies in the topic."""
    records = {r.physical_offset: r for r in iter_records(kinds_run.store / "commitlog")}
    for s in _by_kind(kinds_run, "commit") + _by_kind(kinds_run, "rollback"):
        staged = records[s.phy_offset]
        assert (staged.topic, staged.properties["REAL_TOPIC"]) == (HALF_TOPIC, TOPIC)
        assert staged.transaction_type == 0  # stored as a plain message of the half topic
    for s in _by_kind(kinds_run, "commit"):
        done = records[s.delivered_offset]  # type: ignore[index]
        assert (done.topic, done.transaction_type, done.uniq_key) == (TOPIC, 0x8, s.msg_id)
    for s in _by_kind(kinds_run, "delay"):
        staged, done = records[s.phy_offset], records[s.delivered_offset]  # type: ignore[index]
        assert (staged.topic, done.topic) == (SCHEDULE_TOPIC, TOPIC)
        assert staged.uniq_key == done.uniq_key == s.msg_id
    rolled = {s.msg_id for s in _by_kind(kinds_run, "rollback")}
    assert not [r for r in records.values() if r.topic == TOPIC and r.uniq_key in rolled]
    assert not [r for r in records.values() if r.transaction_type == 0xC]
    ops = [r for r in records.values() if r.topic == OP_TOPIC]
    assert ops and {(r.tags, r.keys, r.uniq_key) for r in ops} == {("d", None, None)}


# ---- rmqarrow's answers ----------------------------------------------------------------


def test_live_answers_equal_the_brokers(
    kinds_run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert kinds_run.broker.pids, "the broker stopped before the live comparison"
    _compare(kinds_run, capsys, tmp_path)


def test_delayed_then_delivered_and_prepared_then_committed_index_keys(
    kinds_run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A delayed message is indexed under SCHEDULE_TOPIC_XXXX (its scheduled copy), then
    under its topic (the delivered copy); a transactional one under the half topic (the
    prepared copy, committed or rolled back alike), then, committed, under its topic."""
    qs, want = [], []
    for s in kinds_run.sent:
        if not (s.message.transaction or s.message.delay_level):
            continue
        system = HALF_TOPIC if s.message.transaction else SCHEDULE_TOPIC
        key = s.message.keys[0]
        qs += [KeyQuery(system, key), KeyQuery(TOPIC, key), KeyQuery(system, s.msg_id)]
        delivered = [] if s.delivered_offset is None else [s.delivered_offset]
        want += [[s.phy_offset], delivered, [s.phy_offset]]
    assert rmqarrow_answers(capsys, kinds_run.store, qs, tmp_path) == want


def test_a_collided_key_resolves_from_the_command_line(
    kinds_run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    (topic, key), (other_topic, other) = COLLISIONS[2]
    status, out, err = run(
        capsys, "query", str(kinds_run.store), "--topic", topic, "--key", key,
        "--resolve", str(kinds_run.store / "commitlog"), "--json",
    )  # fmt: skip
    assert status == 0, err
    doc = json.loads(out)
    assert sorted(doc["phy_offsets"]) == sorted(_answer(kinds_run, topic, key))
    assert sorted(doc["dropped_offsets"]) == sorted(_answer(kinds_run, other_topic, other))


def test_stopped_answers_equal_the_brokers(
    kinds_stopped: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert processes_naming(kinds_stopped.broker.workdir) == []
    _compare(kinds_stopped, capsys, tmp_path)


def test_what_the_broker_indexed(kinds_stopped: Run) -> None:
    """Every entry is one of its message's index keys, and the counts are exactly one per
    key, one per unique key and one per non-empty tags of every record in the CommitLog,
    whichever its topic: the prepared, scheduled and delivered copies each, and the
    broker's op records (tags ``d``, no keys, no unique key)."""
    want: Counter[str] = Counter()
    topics: Counter[str] = Counter()
    for r in iter_records(kinds_stopped.store / "commitlog"):
        assert r.transaction_type != 0xC
        want["key"] += len([k for k in (r.keys or "").split(" ") if k])
        want["uniqKey"] += r.uniq_key is not None
        want["tags"] += bool(r.tags)
        topics[r.topic] += 1
    found = candidates(kinds_stopped.store)
    kinds: Counter[str] = Counter()
    for file in entries(kinds_stopped.store / "index"):
        for key_hash, phy, _diff, _prev in file:
            matched = found.get((key_hash, phy))
            assert matched, f"entry {key_hash}@{phy} is none of the message's index keys"
            kinds["/".join(sorted(matched))] += 1
    assert kinds == want
    assert {HALF_TOPIC, OP_TOPIC, SCHEDULE_TOPIC} <= set(topics)


def test_rebuild_with_the_releases_rules_is_byte_identical(
    kinds_stopped: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rebuilt = rebuild(kinds_stopped.store, tmp_path, capsys, version=NEWEST)
    theirs = sorted((kinds_stopped.store / "index").iterdir())
    ours = sorted(rebuilt.iterdir())
    assert len(ours) == len(theirs) >= 1
    assert [p.read_bytes() for p in ours] == [p.read_bytes() for p in theirs]
