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


def _broker_root(root: Path) -> Path:
    """A broker store root (index/ and commitlog/, files of 16 KiB) whose log's newest
    file has just been created (0 bytes): a broker at a roll."""
    from rmqarrow.format.layout import Geometry
    from rmqarrow.testing.stores import write_random_store

    write_random_store(root / "index", Geometry(16, 64), [30, 30])
    messages = [
        Message(topic="T", body=b"x" * 40, keys=[f"k{i}"], uniq_key=f"U{i:08d}") for i in range(500)
    ]
    files = write_commitlog(root / "commitlog", messages, mapped_file_size=16 * 1024)
    born = int(files[-1].name) + 16 * 1024
    (root / "commitlog" / f"{born:020d}").write_bytes(b"")
    return root


@pytest.mark.parametrize("state", ["born", "torn"])
def test_a_log_being_written_is_read_to_its_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], state: str
) -> None:
    """A newest CommitLog file being born, or a last record torn by a crash: export,
    sql and stats of the store root read the log up to there and say so in a note."""
    from cli_run import run

    root = _broker_root(tmp_path / "root")
    log = root / "commitlog"
    if state == "torn":
        newest = sorted(log.iterdir())[-1]
        newest.unlink()
        from rmqarrow.commitlog import CommitLogReader

        final = list(CommitLogReader(log).records())[-1]
        last = sorted(log.iterdir())[-1]
        data = bytearray(last.read_bytes())
        torn = final.physical_offset - int(last.name) + 30
        data[torn:] = bytes(len(data) - torn)  # the record's rest never reached the disk
        last.write_bytes(bytes(data))
    status, out, err = run(
        capsys, "export", str(root), str(tmp_path / "ds"), "--commitlog", str(log), "--json"
    )
    assert status == 0, err
    assert json.loads(out)["messages"] == (500 if state == "born" else 499)
    assert "the log ends at physical offset" in err
    status, out, err = run(capsys, "sql", str(root), "SELECT count(*) AS n FROM entries")
    assert status == 0 and "60" in out, err
    status, out, err = run(capsys, "stats", str(root))
    assert status == 0, err
