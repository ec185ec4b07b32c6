"""Exact-key resolution of index hits against the golden CommitLog."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_data import golden_set

from rmqarrow.commitlog import (
    CommitLogReader,
    Message,
    format_message,
    iter_records,
    java_split_keys,
    mode_for,
    resolve,
    write_commitlog,
)
from rmqarrow.errors import CommitLogError, InvalidValueError
from rmqarrow.format.hashing import index_key_hash


def _really_matches(row: dict[str, object], topic: str, key: str) -> bool:
    keys = row["keys"]
    tokens = [] if keys is None else [k for k in str(keys).split(" ") if k]
    return row["topic"] == topic and (row["uniq_key"] == key or key in tokens)


def test_golden_queries_resolve(
    golden_commitlog: Path, messages_tsv: list[dict[str, object]]
) -> None:
    gs = golden_set("commitlog_store1")
    by_offset = {m["physical_offset"]: m for m in messages_tsv}
    for q, expected in zip(gs.queries, gs.expected, strict=True):
        topic, _, key = q.key.partition("#")
        result = resolve(golden_commitlog, topic, key, expected)
        want = [o for o in expected if _really_matches(by_offset[o], topic, key)]
        assert result.phy_offsets == want, q
        assert result.dropped_offsets == [o for o in expected if o not in want]
        assert result.unreadable == []
    assert len(gs.queries) > 1000


def test_hash_collisions_are_dropped(tmp_path: Path) -> None:
    assert index_key_hash("T#Aa") == index_key_hash("T#BB")
    out = tmp_path / "cl"
    write_commitlog(
        out,
        [
            Message(topic="T", keys="Aa", uniq_key="U1"),
            Message(topic="T", keys="x BB", uniq_key="U2"),
            Message(topic="S", keys="BB"),
            Message(topic="T", uniq_key="BB"),
            Message(topic="T", keys=" BB "),
        ],
        mapped_file_size=4096,
    )
    offsets = [r.physical_offset for r in iter_records(out)]
    result = resolve(out, "T", "BB", offsets)
    assert result.phy_offsets == [offsets[1], offsets[3], offsets[4]]
    assert result.dropped == 2 and result.dropped_offsets == [offsets[0], offsets[2]]
    # the admin client's key rule ignores UNIQ_KEY; its uniq rule ignores the topic
    assert resolve(out, "T", "BB", offsets, mode="key").phy_offsets == [offsets[1], offsets[4]]
    assert resolve(out, "T", "U2", offsets, mode="uniq").phy_offsets == [offsets[1]]


def test_tag_collisions_are_dropped(tmp_path: Path) -> None:
    """``mode="tags"`` is the admin client's check of a query of index type T: the whole
    TAGS equals the key and the topic the topic (RocketMQ 5.5.0's ``MQAdminImpl``)."""
    assert index_key_hash("T#T#Aa") == index_key_hash("T#T#BB")
    out = tmp_path / "cl"
    write_commitlog(
        out,
        [
            Message(topic="T", tags="Aa", keys="k"),
            Message(topic="T", tags="BB", keys="Aa"),
            Message(topic="S", tags="Aa"),
            Message(topic="T", tags="Aa||x"),
            Message(topic="T", uniq_key="Aa"),
            Message(topic="T", tags="Aa"),
        ],
        mapped_file_size=4096,
    )
    offsets = [r.physical_offset for r in iter_records(out)]
    result = resolve(out, "T", "Aa", offsets, mode="tags")
    assert result.phy_offsets == [offsets[0], offsets[5]]
    assert result.dropped_offsets == offsets[1:5]
    assert mode_for("T") == "tags" and mode_for(None) == "any"
    assert mode_for("K") == "key" and mode_for("U") == "uniq"
    with pytest.raises(InvalidValueError, match="index type must be K"):
        mode_for("X")


def test_java_split() -> None:
    assert java_split_keys(" a  b ") == ["", "a", "", "b"]
    assert java_split_keys(" ") == []


def test_unreadable_hits(golden_commitlog: Path) -> None:
    result = resolve(golden_commitlog, "T", "k", [1, 10**9])
    assert result.messages == [] and result.dropped == 0
    assert [o for o, _ in result.unreadable] == [1, 10**9]
    with pytest.raises(CommitLogError):
        resolve(golden_commitlog, "T", "k", [1], strict=True)


def test_format_message(golden_commitlog: Path) -> None:
    reader = CommitLogReader(golden_commitlog)
    for r in reader.records():
        text = format_message(r)
        assert str(r.physical_offset) in text and r.topic in text
        if r.keys:
            assert "KEYS" in text
        if r.compression:
            assert f"{r.compression} body" in text and f"bytes, {r.compression}" in text
