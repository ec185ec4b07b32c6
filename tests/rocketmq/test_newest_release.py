"""The newest release that resolves (5.5.0): rmqarrow against the broker's own answers.

While the broker runs, ``rmqarrow query`` on its store must give, key by key, the
CommitLog offsets RocketMQ's client gets from the broker (the 64-result cap, time
ranges and unique keys included).  After a clean shutdown, the index entries are
classified by hashing every candidate index key of every message (read back from the
CommitLog), and ``rmqarrow build --from-commitlog`` is compared with the broker's files.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from cli_run import run
from rocketmq.workload import (
    HOT_KEY,
    Run,
    candidates,
    entries,
    expected_kinds,
    index_key,
    index_kinds,
    rebuild,
    rmqarrow_answers,
)

from rmqarrow.testing.rocketmq import KeyQuery

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

# ---- while the broker runs ------------------------------------------------------------


def test_broker_answers_with_the_offsets_it_gave_at_send(live: Run) -> None:
    """The ground the comparisons stand on: the broker's own answers are sane."""
    by_uniq = {a.query.key: a for a in live.answers if a.query.kind == "uniq"}
    assert len(by_uniq) == len(live.sent) == 300
    for s in live.sent:
        assert by_uniq[s.msg_id].offsets == (s.phy_offset,), s
    hot = [
        a
        for a in live.answers
        if a.query.key == HOT_KEY and (a.query.begin, a.query.end) == (0, 2**62)
    ]
    assert {len(a.offsets) for a in hot} == {64, 10}  # capped by maxMsgsNumBatch / maxNum


def test_query_on_the_live_store_equals_the_broker(
    live: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    queries = [a.query for a in live.answers]
    ours = rmqarrow_answers(capsys, live.store, queries, tmp_path)
    assert live.broker.pids, "the broker stopped before the live comparison"
    mismatches = [
        (index_key(a.query), a.query.max_num, a.query.begin, a.query.end, a.offsets, mine)
        for a, mine in zip(live.answers, ours, strict=True)
        if sorted(a.offsets) != sorted(mine)
    ]
    assert mismatches == []
    # RocketMQ's client returns them in ascending offset order; rmqarrow in its chain
    # order (newest first), so sets are compared above and the order is pinned here
    for a, mine in zip(live.answers, ours, strict=True):
        assert list(a.offsets) == sorted(a.offsets)
        assert mine == sorted(mine, reverse=True)
    split = [a for a in live.answers if a.query.begin or a.query.end < 2**62]
    assert all(a.offsets for a in split if a.query.end < 2**62)  # batch 0 is before
    assert any(a.offsets for a in split if a.query.begin)  # batch 1 is after
    tag_answers = [a for a in live.answers if a.query.kind == "tag"]
    assert len(tag_answers) == 9 and all(a.offsets for a in tag_answers)


def test_index_files_of_the_live_store_roll_and_are_healthy(
    live: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "info", str(live.store), "--json")
    assert status == 0, err
    files = json.loads(out)["files"]
    assert len(files) >= 3
    assert all(f["status"] == "ok" for f in files)


def test_check_says_the_live_store_is_healthy(
    live: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "check", str(live.store))
    assert status == 0, out + err


# ---- after a clean shutdown -----------------------------------------------------------


def test_what_the_release_indexes(stopped: Run) -> None:
    """5.5.0 indexes ``topic#key`` for every key, ``topic#uniqKey``, and ``topic#T#tags``
    for every message with tags (the hashes tell, checked against every candidate)."""
    assert index_kinds(stopped.store) == expected_kinds(stopped.sent, tags=True)


def test_tag_entries_answer_a_tag_query(
    stopped: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """rmqarrow reads the tag entries as keys ``topic#T#tags``: each answer is exactly the
    newest 64 (or fewer) messages sent with those tags."""
    pairs = sorted({(s.message.topic, s.message.tags) for s in stopped.sent if s.message.tags})
    queries = [KeyQuery(t, f"T#{tags}") for t, tags in pairs]
    ours = rmqarrow_answers(capsys, stopped.store, queries, tmp_path)
    for (topic, tags), mine in zip(pairs, ours, strict=True):
        sent = [
            s.phy_offset for s in stopped.sent if (s.message.topic, s.message.tags) == (topic, tags)
        ]
        assert mine == sorted(sent, reverse=True)[:64]


def test_query_type_t_looks_tags_up(stopped: Run, capsys: pytest.CaptureFixture[str]) -> None:
    """``query --type T`` (and the Python API's ``index_type="T"``) looks ``topic#T#tags``
    up from the bare tags, as the broker's query with index type T does; K asks for keys."""
    import rmqarrow

    topic, tags = next((s.message.topic, s.message.tags) for s in stopped.sent if s.message.tags)
    sent = sorted(
        (s.phy_offset for s in stopped.sent if (s.message.topic, s.message.tags) == (topic, tags)),
        reverse=True,
    )[:64]
    status, out, err = run(
        capsys, "query", str(stopped.store), "--topic", topic, "--key", tags, "--type", "T",
        "--json",
    )  # fmt: skip
    assert status == 0, err
    doc = json.loads(out)
    assert (doc["key"], doc["phy_offsets"]) == (f"{topic}#T#{tags}", sent)
    status, out, err = run(
        capsys, "query", str(stopped.store), "--key", f"{topic}#{tags}", "--type", "T", "--json"
    )
    assert status == 0, err
    assert json.loads(out)["phy_offsets"] == sent
    with rmqarrow.open(stopped.store) as store:
        assert store.query(topic, tags, index_type="T") == sent
        assert store.query(topic, tags, index_type="K") == []


def test_check_says_the_stopped_store_is_healthy(
    stopped: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, "check", str(stopped.store))
    assert status == 0, out + err
    assert "healthy" in out


def test_rebuild_holds_the_brokers_key_entries(
    stopped: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``build --from-commitlog`` writes every key and unique-key entry the broker wrote
    (same hash, same offset), and nothing else; the broker's tag entries it lacks."""
    rebuilt = rebuild(stopped.store, tmp_path, capsys)
    found = candidates(stopped.store)
    theirs = Counter(
        (h, p)
        for f in entries(stopped.store / "index")
        for h, p, _, _ in f
        if found[(h, p)] != {"tags"}
    )
    ours = Counter((h, p) for f in entries(rebuilt) for h, p, _, _ in f)
    assert ours == theirs


def test_rebuild_with_the_releases_rules_is_byte_identical(
    stopped: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``build --from-commitlog --rocketmq-version 5.5.0`` writes the tag entries too: every
    file equals the broker's, byte for byte (only the names, taken from the clock, differ)."""
    rebuilt = rebuild(stopped.store, tmp_path, capsys, version=stopped.broker.release.version)
    theirs = sorted((stopped.store / "index").iterdir())
    ours = sorted(rebuilt.iterdir())
    assert len(ours) == len(theirs) >= 2
    assert [p.read_bytes() for p in ours] == [p.read_bytes() for p in theirs]
