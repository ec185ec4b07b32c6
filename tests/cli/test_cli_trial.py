"""What a new user's trial of the CLI found: each case as the user meets it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore
from rmqarrow.converters.delta.layout import is_delta_dataset


def _geometry(gen: GeneratedStore) -> list[str]:
    return ["--hash-slot-num", str(gen.hash_slot_num), "--index-num", str(gen.index_num)]


def _entries(capsys: pytest.CaptureFixture[str], store: Path, *extra: str) -> int:
    status, out, _ = run(capsys, "build", str(store), *extra, "--json")
    assert status == 0
    return int(json.loads(out)["entries"])


def test_a_rerun_build_from_the_commitlog_adds_nothing(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore, tmp_path: Path
) -> None:
    store = tmp_path / "index"
    log = ["--from-commitlog", str(generated.root / "commitlog"), *_geometry(generated)]
    first = _entries(capsys, store, *log)
    files = {p.name: p.read_bytes() for p in store.iterdir()}
    assert _entries(capsys, store, *log) == first
    assert _entries(capsys, store, *log) == first
    assert {p.name: p.read_bytes() for p in store.iterdir()} == files
    # the broker's recovery replay (--start-timestamp) puts the record at the end again
    last = int(generated.records.column("store_timestamp").to_pylist()[-1])
    replayed = _entries(capsys, store, *log, "--start-timestamp", str(last))
    assert replayed > first


def test_a_rerun_build_from_records_adds_nothing(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    records = tmp_path / "records.parquet"
    pq.write_table(generated.records, records)
    store = tmp_path / "index"
    src = ["--from", str(records), *_geometry(generated)]
    first = _entries(capsys, store, *src)
    assert _entries(capsys, store, *src) == first


def test_a_build_onto_a_truncated_newest_file_says_what_to_do(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore, tmp_path: Path
) -> None:
    store = tmp_path / "index"
    shutil.copytree(generated.store, store)
    newest = sorted(store.iterdir())[-1]
    with newest.open("r+b") as f:
        f.truncate(newest.stat().st_size // 2)
    before = newest.read_bytes()
    status, _, err = run(
        capsys, "build", str(store), "--from-commitlog", str(generated.root / "commitlog")
    )
    assert status == 1
    one_error(err, newest.name, "truncated", "rmqarrow check", "move the damaged file", "build")
    assert newest.read_bytes() == before


def test_stats_between_a_window_with_nothing_says_where_the_store_is(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore
) -> None:
    for extra in ((), ("--json",)):
        status, _, err = run(
            capsys,
            "stats",
            str(generated.store),
            "--between",
            "2001-01-01T00:00:00Z",
            "2001-01-02T00:00:00Z",
            *extra,
        )
        assert status == 0
        assert "note: no entries between 2001-01-01T00:00:00.000Z and " in err
        assert "(the store spans 2026-" in err
    status, _, err = run(
        capsys,
        "stats",
        str(generated.store),
        "--between",
        "2000-01-01T00:00:00Z",
        "2100-01-01T00:00:00Z",
    )
    assert status == 0 and "no entries between" not in err


def test_a_tag_query_on_a_store_without_tag_entries_says_why_it_is_empty(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore
) -> None:
    topic, key = generated.keys[0].split("#", 1)
    status, out, err = run(
        capsys, "query", str(generated.store), "--topic", topic, "--key", key, "--type", "T"
    )
    assert status == 0 and "0 offsets" in out
    assert "note: nothing for the tag key" in err and "5.4" in err
    status, out, err = run(
        capsys, "query", str(generated.store), "--topic", topic, "--key", key, "--type", "K"
    )
    assert status == 0 and "tag key" not in err


def test_check_without_a_commitlog_says_dangling_is_not_checked(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore
) -> None:
    status, out, _ = run(capsys, "check", str(generated.store))
    assert status == 0
    assert "dangling" not in out.splitlines()[0]  # no column of blanks
    assert "dangling offsets: not checked (no CommitLog" in out
    status, out, _ = run(capsys, "check", str(generated.store), "--json")
    chains = [f["chains"] for f in json.loads(out)["files"]]
    assert chains and all(c["dangling"] is None and c["expired"] is None for c in chains)
    log = str(generated.root / "commitlog")
    status, out, _ = run(capsys, "check", str(generated.store), "--commitlog", log)
    assert status == 0 and "dangling" in out.splitlines()[0] and "not checked" not in out
    status, out, _ = run(capsys, "check", str(generated.store), "--commitlog", log, "--json")
    assert all(f["chains"]["dangling"] == 0 for f in json.loads(out)["files"])


def test_follow_with_incremental_is_documented_as_the_same(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "export", "--help")
    assert status == 0
    assert "giving both is the same as --follow alone" in " ".join(out.split())


def test_export_into_an_empty_folder_is_accepted(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    status, _, err = run(capsys, "export", str(generated.store), str(empty))
    assert status == 0, err
    assert is_delta_dataset(empty)
    # a folder holding something else is refused and left as it was
    other = tmp_path / "docs"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    status, _, err = run(capsys, "export", str(generated.store), str(other))
    assert status == 1
    one_error(err, "not an rmqarrow dataset")
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    # a dataset is still refused without --overwrite
    status, _, err = run(capsys, "export", str(generated.store), str(empty))
    assert status == 1
    one_error(err, "already exists", "overwrite")


@pytest.mark.parametrize("where", ["inside", "outside"])
@pytest.mark.parametrize("command", ["info", "check", "query"])
def test_a_random_file_is_named_not_an_index_file_once(
    capsys: pytest.CaptureFixture[str],
    generated: GeneratedStore,
    tmp_path: Path,
    where: str,
    command: str,
) -> None:
    folder = tmp_path / "store"
    if where == "inside":
        shutil.copytree(generated.store, folder)
    else:
        folder.mkdir()
    path = folder / "blob"
    path.write_bytes(b"\xff\x00" * 60)  # no header, no index file size
    extra = ["--key", "T#k"] if command == "query" else []
    status, _, err = run(capsys, command, str(path), *extra)
    assert status != 0
    line = one_error(err, "not an index file")
    assert line.count("not an index file") == 1, line


def test_sql_prints_every_statement_result(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore
) -> None:
    status, out, _ = run(capsys, "sql", str(generated.store), "SELECT 11 AS a; SELECT ';' AS b")
    assert status == 0
    lines = out.split()
    assert lines.index("a") < lines.index("11") < lines.index("b") < lines.index(";")
    status, out, _ = run(
        capsys, "sql", str(generated.store), "SELECT 1 AS a; SELECT 2 AS b", "--jsonl"
    )
    assert status == 0 and [json.loads(x) for x in out.splitlines()] == [{"a": 1}, {"b": 2}]
    status, _, err = run(capsys, "sql", str(generated.store), "SELECT 1; SELECT 2", "--json")
    assert status == 2
    one_error(err, "2 statements", "--jsonl")


def test_demo_next_verify_leaves_spark_out_and_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, _ = run(
        capsys, "demo", "--size", "300", "--engines", "native,duckdb", "--out", str(tmp_path / "d")
    )
    assert status == 0
    verify = [line for line in out.splitlines() if line.strip().startswith("rmqarrow verify")]
    assert len(verify) == 1 and "--engines native,duckdb" in verify[0]
    assert "it starts a JVM, about 30 s" in out


@pytest.mark.spark
def test_spark_show_tables_hides_the_file_order_view(
    capsys: pytest.CaptureFixture[str],
    generated: GeneratedStore,
    spark: Any,  # the run's one session: the command gets it through --master local[2]
) -> None:
    store = str(generated.store)
    status, out, _ = run(
        capsys, "sql", store, "SHOW TABLES", "--engine", "spark", "--master", "local[2]"
    )
    assert status == 0
    assert "entries" in out and "_rmq_" not in out
    # the lookup still finds the order it joins
    key = generated.keys[0]
    status, native, _ = run(capsys, "query", store, "--key", key, "--json")
    assert status == 0
    status, on_spark, _ = run(
        capsys, "query", store, "--key", key, "--json", "--engine", "spark", "--master", "local[2]"
    )
    assert status == 0
    assert json.loads(on_spark)["phy_offsets"] == json.loads(native)["phy_offsets"] != []


def test_library_messages_name_parameters_and_the_cli_its_options(
    capsys: pytest.CaptureFixture[str], generated: GeneratedStore, tmp_path: Path
) -> None:
    import rmqarrow
    from rmqarrow.errors import CorruptIndexError, OutputExistsError

    store = tmp_path / "index"
    shutil.copytree(generated.store, store)
    newest = sorted(store.iterdir())[-1]
    with newest.open("r+b") as f:
        f.truncate(newest.stat().st_size // 2)
    with (
        rmqarrow.open(store, strict=True) as damaged,
        pytest.raises(CorruptIndexError, match=r"refused \(strict=True\)"),
    ):
        damaged.export(tmp_path / "x")
    status, _, err = run(capsys, "query", str(store), "--key", "T#k", "--strict")
    assert status == 1
    one_error(err, "refused (--strict)")
    ds = tmp_path / "ds"
    status, _, _ = run(capsys, "export", str(generated.store), str(ds))
    assert status == 0
    with (
        rmqarrow.open(generated.store) as whole,
        pytest.raises(OutputExistsError, match="pass overwrite=True to replace it"),
    ):
        whole.export(ds)
    status, _, err = run(capsys, "export", str(generated.store), str(ds))
    assert status == 1
    one_error(err, "pass --overwrite to replace it")
    status, _, err = run(capsys, "build", str(tmp_path / "b"), "--from", str(tmp_path))
    assert status == 2
    line = one_error(err, "--from expects", "use --from-commitlog")
    assert "records=" not in line and "commitlog=" not in line


@pytest.mark.parametrize(
    ("target", "extra", "needles"),
    [
        (
            "rocksdb",
            ["--hash-slot-num", "100"],
            ["--hash-slot-num 100 is for IndexFiles", "no hash slots"],
        ),
        ("rocksdb", ["--index-num", "400"], ["--index-num 400 is for IndexFiles", "leave it out"]),
        (
            "index",
            ["--max-query-days", "3"],
            ["--max-query-days 3 is for the RocksDB", "leave it out"],
        ),
        ("tiered", ["--max-msgs-num-batch", "8"], ["--max-msgs-num-batch 8 is for the RocksDB"]),
    ],
)
def test_an_option_of_another_format_is_refused_not_dropped(
    capsys: pytest.CaptureFixture[str], target: str, extra: list[str], needles: list[str]
) -> None:
    # dropped silently, the answer reads as if the option had been applied
    from golden_data import golden_set
    from rocksdb_golden_data import ALL_ROCKSDB
    from tiered_golden_data import ALL_TIERED

    path = {
        "rocksdb": lambda: ALL_ROCKSDB[0].db,
        "index": lambda: golden_set("basic").store_dir,
        "tiered": lambda: ALL_TIERED[0].dir / "compacted.bin",
    }[target]()
    for command in (["query", str(path), "--key", "T#k"], ["info", str(path)]):
        status, _, err = run(capsys, *command, *extra)
        assert status == 2
        one_error(err, *needles)


def test_a_broker_root_with_both_indexes_says_to_pick_the_rocksdb_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from golden_data import golden_set
    from rocksdb_golden_data import ALL_ROCKSDB

    root = tmp_path / "store"
    shutil.copytree(golden_set("basic").store_dir, root / "index")
    shutil.copytree(ALL_ROCKSDB[0].db, root / "rocksdbstore")
    (root / "commitlog").mkdir()
    status, _, err = run(capsys, "query", str(root), "--key", "T#k", "--max-query-days", "3")
    assert status == 2
    one_error(err, "is a broker store root", "add --index rocksdb")
    status, _, err = run(
        capsys, "query", str(root), "--key", "T#k", "--index", "rocksdb", "--hash-slot-num", "9"
    )
    assert status == 2
    one_error(err, f"{root / 'rocksdbstore'} is a RocksDB index", "no hash slots")


def test_a_query_file_of_the_wrong_shape_says_what_the_kind_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # IndexFiles read short lines and a header; tiered files and RocksDB read every field
    from rocksdb_golden_data import ALL_ROCKSDB
    from tiered_golden_data import ALL_TIERED

    short = tmp_path / "short.tsv"
    short.write_text("TopicA#order-1\t4\n")
    header = tmp_path / "header.tsv"
    header.write_text("key\tmax_num\tbegin\tend\nTopicA#order-1\t4\t0\t1\n")
    compacted = str(ALL_TIERED[0].dir / "compacted.bin")
    for command in ("query", "verify"):
        status, _, err = run(capsys, command, compacted, "--queries", str(short))
        assert status == 1
        one_error(err, "short.tsv:1: expected 4", "all four fields on every line")
    status, _, err = run(capsys, "query", compacted, "--queries", str(header))
    assert status == 1
    line = one_error(err, "header.tsv:1: max_num, begin and end must be integers", "'max_num'")
    assert "int()" not in line and "literal" not in line
    status, _, err = run(capsys, "query", str(ALL_ROCKSDB[0].db), "--queries", str(short))
    assert status == 1
    one_error(err, "expected 7 TAB-separated fields (topic, key, index_type", "got 2")


TIERED_TABLES = ("tiered_files", "tiered_items", "tiered_slots")


def test_spark_names_the_session_tables_for_a_missing_one(
    capsys: pytest.CaptureFixture[str],
    spark: Any,  # the run's one session: the command gets it through --master local[2]
) -> None:
    from tiered_golden_data import ALL_TIERED

    compacted = str(ALL_TIERED[0].dir / "compacted.bin")
    status, _, err = run(
        capsys,
        "sql",
        compacted,
        "SELECT * FROM no_such_table",
        "--engine",
        "spark",
        "--master",
        "local[2]",
    )
    assert status == 1
    # the run's session may hold other tests' views too: these three at least
    line = one_error(err, "TABLE_OR_VIEW_NOT_FOUND", "This session's tables: ")
    assert all(name in line.split("This session's tables: ")[1] for name in TIERED_TABLES)


def test_verify_with_a_dataset_of_another_format_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # its answers would read as mismatches (FAILED) or as empty answers
    from golden_data import golden_set
    from rocksdb_golden_data import ALL_ROCKSDB
    from tiered_golden_data import ALL_TIERED

    index = str(golden_set("basic").store_dir)
    tiered = str(ALL_TIERED[0].dir / "compacted.bin")
    rocks = str(ALL_ROCKSDB[0].db)
    for source, name in ((index, "idx"), (tiered, "tiered")):
        status, _, _ = run(capsys, "export", source, str(tmp_path / name))
        assert status == 0
    cases = [
        (index, "tiered", "not an exported dataset of index files"),
        (tiered, "idx", "not an exported dataset of tiered files"),
        (rocks, "idx", "not an exported dataset of a RocksDB index"),
        (tiered, "absent", "no such dataset"),
    ]
    for source, name, needle in cases:
        status, _, err = run(
            capsys, "verify", source, "--dataset", str(tmp_path / name), "--engines", "duckdb"
        )
        assert status == (1 if name == "absent" else 2), err
        one_error(err, f"--dataset {tmp_path / name}: ", needle)
