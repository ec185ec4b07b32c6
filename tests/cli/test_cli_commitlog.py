"""The CLI over a broker's CommitLog: offline rebuild and exact-key resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden_data import GOLDEN, golden_set

from rmqarrow import answer_queries
from rmqarrow.cli import main
from rmqarrow.commitlog import Message, write_commitlog

STORE1 = GOLDEN / "commitlog" / "store1" / "commitlog"
GOLDEN_INDEX = golden_set("commitlog_store1")
GEOMETRY = ["--hash-slot-num", "64", "--index-num", "256"]
T0 = 1_709_251_200_000


def test_offline_rebuild_equals_the_broker_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "index"
    assert main(["build", str(store), "--from-commitlog", str(STORE1), *GEOMETRY, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 300
    built = sorted(store.iterdir())
    assert [p.read_bytes() for p in built] == [p.read_bytes() for p in GOLDEN_INDEX.file_paths]
    answers = answer_queries(store, GOLDEN_INDEX.queries, hash_slot_num=64, index_num=256)
    assert answers == GOLDEN_INDEX.expected


def test_resolve_drops_hash_false_positives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "T#Aa" and "T#BB" have equal Java hashes: the index cannot tell them apart.
    messages = [
        Message(topic="T", keys="Aa", uniq_key="U1", store_timestamp=T0),
        Message(topic="T", keys="BB", uniq_key="U2", store_timestamp=T0 + 1),
        Message(topic="T", keys="Aa Aa", uniq_key="U3", store_timestamp=T0 + 2),
    ]
    write_commitlog(tmp_path / "commitlog", messages, mapped_file_size=4096)
    store = tmp_path / "index"
    assert (
        main(
            [
                "build",
                str(store),
                "--from-commitlog",
                str(tmp_path / "commitlog"),
                "--hash-slot-num",
                "8",
                "--index-num",
                "32",
            ]
        )
        == 0
    )
    capsys.readouterr()
    geometry = ["--hash-slot-num", "8", "--index-num", "32"]
    assert main(["query", str(store), "--topic", "T", "--key", "Aa", "--json", *geometry]) == 0
    hits = json.loads(capsys.readouterr().out)["phy_offsets"]
    assert len(hits) == 4  # Aa, BB and Aa twice
    assert (
        main(
            [
                "query",
                str(store),
                "--topic",
                "T",
                "--key",
                "Aa",
                "--json",
                *geometry,
                "--resolve",
                str(tmp_path / "commitlog"),
            ]
        )
        == 0
    )
    resolved = json.loads(capsys.readouterr().out)
    assert resolved["hits"] == 4 and resolved["distinct_offsets"] == 3
    assert resolved["dropped_false_positives"] == 1
    assert len(resolved["phy_offsets"]) == 2
    assert (
        main(
            [
                "query",
                str(store),
                "--topic",
                "T",
                "--key",
                "Aa",
                *geometry,
                "--show",
                "--resolve",
                str(tmp_path / "commitlog"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "1 hash false positives dropped" in out and "U3" in out
