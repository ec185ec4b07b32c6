"""The contract: bytes and answers equal to RocketMQ's own IndexFile (tests/golden)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from golden_data import GOLDEN, MANIFEST, GoldenSet

import rmqarrow
from rmqarrow import IndexFile, IndexService
from rmqarrow.cli import main
from rmqarrow.format.queries import escape_text, format_answers


def build_like_java(golden: GoldenSet, out: Path) -> list[Path]:
    """Replay NAME.input.tsv as the golden README says: roll on a failed put, seeded."""
    paths: list[Path] = []
    f: IndexFile | None = None
    for put in golden.puts:
        while f is None or not f.put_key(put.key, put.phy_offset, put.store_timestamp):
            seed = (f.end_phy_offset, f.end_timestamp) if f else (0, 0)
            if f is not None:
                f.close()
            paths.append(out / f"{len(paths):05d}")
            f = IndexFile.create(paths[-1], golden.hash_slot_num, golden.index_num, *seed)
    assert f is not None
    f.close()
    return paths


def test_provenance_checksums() -> None:
    for name, entry in MANIFEST.items():
        for file_name, digest in entry["sha256"].items():
            data = (GOLDEN / name / file_name).read_bytes()
            assert hashlib.sha256(data).hexdigest() == digest, f"{name}/{file_name} was edited"


def test_writer_is_byte_identical(golden: GoldenSet, tmp_path: Path) -> None:
    paths = build_like_java(golden, tmp_path)
    assert [p.name for p in paths] == list(golden.files)
    for mine, theirs in zip(paths, golden.file_paths, strict=True):
        assert mine.read_bytes() == theirs.read_bytes(), f"{golden.name}/{theirs.name} differs"


def test_lookups_equal_expected_through_index_files(golden: GoldenSet) -> None:
    files = [IndexFile.open(p, golden.hash_slot_num, golden.index_num) for p in golden.file_paths]
    try:
        got = []
        for q in golden.queries:
            out: list[int] = []
            for f in reversed(files):
                if f.is_time_matched(q.begin, q.end):
                    out.extend(f.select_phy_offsets(q.key, q.max_num - len(out), q.begin, q.end))
                if f.begin_timestamp < q.begin or len(out) >= q.max_num:
                    break
            got.append(out)
    finally:
        for f in files:
            f.close()
    assert got == golden.expected


def test_lookups_equal_expected_through_service(golden: GoldenSet) -> None:
    service = IndexService(
        golden.store_dir, golden.hash_slot_num, golden.index_num, 2**31 - 1, read_only=True
    )
    with service:
        service.load()
        assert [f.name for f in service.files] == list(golden.files)
        assert [service.lookup(q) for q in golden.queries] == golden.expected


def test_answer_queries_fits_geometry_from_file_size(golden: GoldenSet) -> None:
    # Every golden set happens to use a geometry that the 1:4 rule cannot always guess,
    # so pass it explicitly; answer_queries is the reference the other engines use.
    got = rmqarrow.answer_queries(
        golden.store_dir,
        golden.queries,
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    assert got == golden.expected


def test_cli_batch_queries_equal_expected(golden: GoldenSet, capsys) -> None:  # type: ignore[no-untyped-def]
    args = [
        "query",
        str(golden.store_dir),
        "--queries",
        str(golden.queries_path),
        "--hash-slot-num",
        str(golden.hash_slot_num),
        "--index-num",
        str(golden.index_num),
    ]
    if golden.escaped:
        args.append("--escaped")
    assert main(args) == 0
    # each line names its query (the key, escaped as in the queries file), then the answer
    lines = [line + "\n" for line in capsys.readouterr().out.split("\n")[:-1]]
    assert [line.split("\t", 1)[0] for line in lines] == [
        escape_text(q.key) for q in golden.queries
    ]
    assert "".join(line.split("\t", 1)[1] for line in lines) == format_answers(golden.expected)
    assert golden.expected_text == format_answers(golden.expected)


def test_read_only_open_changes_no_byte(golden: GoldenSet) -> None:
    before = [p.read_bytes() for p in golden.file_paths]
    for p in golden.file_paths:
        with IndexFile.open(p, golden.hash_slot_num, golden.index_num) as f:
            f.select_phy_offsets("x", 10)
    assert [p.read_bytes() for p in golden.file_paths] == before
