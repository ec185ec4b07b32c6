"""Option values an operator gets wrong are refused in one line, before anything is read or
written: status 2 for a mistake on the command line (argparse's own status), 1 for a bad
input file, as README.md and docs/operators.md document."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore, build_generated


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("hygiene-cli") / "gen", messages=400)


def geometry(gen: GeneratedStore) -> list[str]:
    return ["--hash-slot-num", str(gen.hash_slot_num), "--index-num", str(gen.index_num)]


# -- query --------------------------------------------------------------------------------


@pytest.mark.parametrize("topic", ["", "  "])
def test_query_refuses_an_empty_topic(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, topic: str
) -> None:
    key = gen.keys[1].partition("#")[2]
    status, out, err = run(capsys, "query", str(gen.store), "--topic", topic, "--key", key)
    assert status == 2 and out == ""
    one_error(err, "--topic is empty", "--key 'TOPIC#KEY'")
    # the same key with its topic answers
    topic_name = gen.keys[1].partition("#")[0]
    status, out, _ = run(
        capsys, "query", str(gen.store), "--topic", topic_name, "--key", key, "--json"
    )
    assert status == 0 and json.loads(out)["phy_offsets"]


def test_query_seconds_are_refused_with_the_ms_to_pass(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore
) -> None:
    status, _, err = run(
        capsys, "query", str(gen.store), "--key", gen.keys[1], "--begin", "1700000000"
    )
    assert status == 2
    one_error(err, "--begin 1700000000", "epoch seconds", "pass 1700000000000")


# -- build --------------------------------------------------------------------------------


def test_build_refuses_a_negative_start_offset(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    out = tmp_path / "idx"
    log = str(gen.root / "commitlog")
    status, _, err = run(capsys, "build", str(out), "--from-commitlog", log, "--start-offset", "-7")
    assert status == 2
    one_error(err, "--start-offset must be a CommitLog offset >= 0, got -7")
    assert not out.exists()
    status, _, _ = run(capsys, "build", str(out), "--from-commitlog", log, *geometry(gen))
    assert status == 0 and out.is_dir()


def test_build_start_offset_goes_with_a_commitlog_and_alone(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    records = tmp_path / "records.parquet"
    pq.write_table(gen.records, records)
    out = tmp_path / "idx"
    status, _, err = run(capsys, "build", str(out), "--from", str(records), "--start-offset", "352")
    assert status == 2
    one_error(err, "start_offset goes with commitlog")
    status, _, err = run(
        capsys,
        "build",
        str(out),
        "--from-commitlog",
        str(gen.root / "commitlog"),
        "--start-offset",
        "352",
        "--start-timestamp",
        "2026-01-15",
    )
    assert status == 2
    one_error(err, "start_offset and start_timestamp", "give one")
    assert not out.exists()


def test_build_refuses_a_checkpoint_in_a_missing_directory(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    out = tmp_path / "idx"
    checkpoint = tmp_path / "no-such-root" / "checkpoint"
    log = str(gen.root / "commitlog")
    args = ["build", str(out), "--from-commitlog", log, *geometry(gen)]
    status, _, err = run(capsys, *args, "--checkpoint", str(checkpoint))
    assert status == 2
    one_error(err, f"checkpoint {checkpoint}", "not an existing directory")
    assert not out.exists() and not checkpoint.parent.exists()
    # in an existing directory a missing checkpoint is accepted (RocketMQ starts one)
    checkpoint.parent.mkdir()
    status, _, err = run(capsys, *args, "--checkpoint", str(checkpoint))
    assert status == 0, err
    assert out.is_dir()


# -- usage mistakes exit 2 in every command --------------------------------------------


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        ("query", "--hash-slot-num", "0"),
        ("query", "--index-num", "-3"),
        ("info", "--hash-slot-num", "-5"),
        ("check", "--index-num", "0"),
        ("build", "--hash-slot-num", "-1"),
    ],
)
def test_a_geometry_option_out_of_range_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    gen: GeneratedStore,
    tmp_path: Path,
    command: str,
    option: str,
    value: str,
) -> None:
    if command == "build":
        out = tmp_path / "idx"
        args = [command, str(out), "--from-commitlog", str(gen.root / "commitlog")]
    else:
        args = [command, str(gen.store)]
        if command == "query":
            args += ["--key", gen.keys[1]]
    status, out_text, err = run(capsys, *args, option, value)
    assert status == 2 and out_text == ""
    one_error(err, f"{option} must be a positive number, got {value}")
    assert not (tmp_path / "idx").exists()


# -- --queries files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("{k}\tx\n", 1, "the only line, taken for a header (its max_num column 'x'"),
        ("{k}\t1O\n{k}\t2\n", 1, "max_num '1O' is not a count"),
        ("{k}\t2\n\n{k}\t1.5\n", 3, "max_num '1.5' is not a count"),
        ("{k}\t-3\n", 1, "max_num must be >= 0, got -3"),
        ("key\tmax_num\n\n", 1, "a header line and no queries after it"),
    ],
)
def test_queries_file_bad_count_names_its_line(
    capsys: pytest.CaptureFixture[str],
    gen: GeneratedStore,
    tmp_path: Path,
    text: str,
    line: int,
    needle: str,
) -> None:
    path = tmp_path / "q.tsv"
    path.write_text(text.format(k=gen.keys[1]))
    status, out, err = run(capsys, "query", str(gen.store), "--queries", str(path))
    assert status == 1 and out == ""
    one_error(err, f"{path}:{line}: ", needle)


def test_queries_file_header_still_skipped(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    k = gen.keys[1]
    path = tmp_path / "q.tsv"
    for header in ("index key\tcount\n", "key\n"):
        path.write_text(f"{header}{k}\t2\n")
        status, out, err = run(capsys, "query", str(gen.store), "--queries", str(path))
        assert status == 0, err
        assert [row.split("\t")[0] for row in out.splitlines()] == [k]
