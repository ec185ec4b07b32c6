"""The command line as its users' habits expect it: ``--version``, close-match suggestions
for a mistyped command or option, a read-only ``sql``, ``--jsonl``, ``--queries -``, the
prompt's dot commands, ISO times in ``stats``, and notes only when they say something."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_error, run

import rmqarrow
from rmqarrow import IndexService, MessageRecord
from rmqarrow.demo import make_docs_workspace
from rmqarrow.format.layout import Geometry
from rmqarrow.format.times import format_time
from rmqarrow.testing.stores import write_random_store


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "--version")
    assert status == 0
    assert out == f"rmqarrow {rmqarrow.__version__}\n"
    assert err == ""


@pytest.mark.parametrize(
    ("argv", "prog", "hint"),
    [
        (["inf", "store"], "rmqarrow", "did you mean 'info'?"),
        (["stast"], "rmqarrow", "did you mean 'stats'?"),
        # --key missing is what argparse sees first; the mistyped option is the cause
        (["query", "--kye", "x"], "rmqarrow query", "did you mean '--key'?"),
        (["query", "store", "--kye=x", "--key", "y"], "rmqarrow query", "did you mean '--key'?"),
        (["query", "store", "--key", "a", "--topik", "T"], "rmqarrow query", "'--topic'?"),
        (["sql", "store", "--engine", "duckd"], "rmqarrow sql", "did you mean 'duckdb'?"),
        (["--verison"], "rmqarrow", "did you mean '--version'?"),
    ],
)
def test_a_mistyped_word_gets_its_close_match(
    capsys: pytest.CaptureFixture[str], argv: list[str], prog: str, hint: str
) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"{prog}: error: ") and hint in err
    assert f"(see {prog} --help)" in err


def test_a_word_without_a_close_match_gets_argparse_s_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "bogus")
    assert status == 2 and err.count("\n") == 1
    assert "invalid choice: 'bogus' (choose from 'info'" in err and "did you mean" not in err
    status, _, err = run(capsys, "query", "store", "--key", "a", "--zzzzzz")
    assert status == 2 and err.count("\n") == 1
    assert "unrecognized arguments: --zzzzzz" in err and "did you mean" not in err
    assert err.startswith("rmqarrow query: error:") and "(see rmqarrow query --help)" in err
    # an abbreviation argparse accepts and a negative number are not mistyped options
    status, _, err = run(capsys, "query", "--ke", "a", "--max-num", "-5")
    assert "did you mean" not in err


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A native store of two files in RocketMQ's 1:4 geometry (fitted from the size)."""
    store = tmp_path_factory.mktemp("habits") / "store"
    write_random_store(store, Geometry(1_000, 4_000), [100, 50])
    return store


@pytest.mark.parametrize(
    ("statement", "kind"),
    [
        ("COPY (SELECT 1) TO '{out}/x.csv'", "COPY"),
        ("EXPORT DATABASE '{out}/db'", "EXPORT"),
        ("ATTACH '{out}/f.db' AS f", "ATTACH"),
        ("INSTALL httpfs", "INSTALL/LOAD"),
        ("LOAD '{out}/x.duckdb_extension'", "INSTALL/LOAD"),
        ("PREPARE p AS COPY (SELECT 1) TO '{out}/z.csv'", "PREPARE"),
        ("SET log_query_path = '{out}/log.txt'", "SET"),  # a setting that names a file
        ("PRAGMA profiling_output = '{out}/profile.json'", "SET"),
        ("SELECT 1; COPY (SELECT 1) TO '{out}/y.csv'", "COPY"),  # every statement counts
    ],
)
def test_sql_refuses_a_statement_that_writes(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path, statement: str, kind: str
) -> None:
    status, out, err = run(capsys, "sql", str(small), statement.format(out=tmp_path))
    assert status == 2 and out == ""
    one_error(err, f"{kind} statement refused", "--allow-write")
    assert list(tmp_path.iterdir()) == []  # nothing ran


def test_a_read_only_session_loads_no_extension_and_keeps_no_secret(
    capsys: pytest.CaptureFixture[str], small: Path
) -> None:
    """With SET refused, these settings hold for the whole session: an extension is never
    installed or loaded behind a statement, and CREATE PERSISTENT SECRET writes nothing."""
    settings = (
        "autoinstall_known_extensions",
        "autoload_known_extensions",
        "allow_persistent_secrets",
    )
    query = "SELECT " + ", ".join(f"current_setting('{s}') AS {s}" for s in settings)
    status, out, err = run(capsys, "sql", str(small), query, "--json")
    assert status == 0, err
    assert json.loads(out)["rows"] == [dict.fromkeys(settings, False)]
    status, out, err = run(capsys, "sql", str(small), query, "--json", "--allow-write")
    assert status == 0, err
    assert json.loads(out)["rows"][0]["autoload_known_extensions"] is True  # DuckDB's default


def test_sql_reads_without_allow_write_and_writes_with_it(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    for statement in (
        "SELECT count(*) AS n FROM entries",
        "DESCRIBE entries",
        "SHOW TABLES",
        "EXPLAIN SELECT * FROM files",
        "PRAGMA version",
        # the connection's in-memory catalog: no database file is attached to write into
        "CREATE TABLE t AS SELECT * FROM files",
        "CREATE MACRO twice(x) AS 2 * x",
    ):
        status, _, err = run(capsys, "sql", str(small), statement)
        assert status == 0, (statement, err)
    target = tmp_path / "x.csv"
    copy = f"COPY (SELECT count(*) AS n FROM entries) TO '{target}'"
    status, _, err = run(capsys, "sql", str(small), copy, "--allow-write")
    assert status == 0, err
    assert target.read_text() == "n\n150\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


def test_the_prompt_refuses_a_write_and_goes_on(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = f"COPY (SELECT 1) TO '{tmp_path}/x.csv';\nSELECT 41 + 1 AS answer;\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(statements))
    status, out, err = run(capsys, "sql", str(small))
    assert status == 1  # a statement failed (stdin is no terminal)
    assert "COPY statement refused" in err and "--allow-write" in err
    assert "42" in out and not (tmp_path / "x.csv").exists()


@pytest.mark.spark
@pytest.mark.slow
def test_spark_sql_refuses_commands_that_write(
    capsys: pytest.CaptureFixture[str],
    small: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spark: Any,  # the run's one session: the command gets it through --master local[2]
) -> None:
    """Spark's rule, by the plan its parser gives: queries, SHOW, DESCRIBE, EXPLAIN, SET
    read; INSERT and every other command may write."""
    monkeypatch.chdir(tmp_path)  # where CREATE TABLE would put its spark-warehouse
    statements = (
        "CREATE TABLE t USING parquet AS SELECT * FROM files;\n"
        f"INSERT OVERWRITE DIRECTORY '{tmp_path}/dir' USING parquet SELECT 1;\n"
        "SELECT count(*) AS n FROM entries;\n"
        "SHOW TABLES;\n"
        ".tables\n"  # Spark's tableName column: the three views
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(statements))
    status, out, err = run(capsys, "sql", str(small), "--engine", "spark", "--master", "local[2]")
    assert status == 1
    refused = [line for line in err.splitlines() if "statement refused" in line]
    assert len(refused) == 2 and all("--allow-write" in line for line in refused), err
    assert "CreateTableAsSelect" in refused[0] and "InsertIntoDir" in refused[1]
    assert "150" in out and "entries" in out
    assert out.splitlines()[-3:] == ["entries", "files", "slots"]
    assert not (tmp_path / "dir").exists() and not (tmp_path / "spark-warehouse" / "t").exists()
    status, _, err = run(
        capsys,
        "sql",
        str(small),
        "CREATE TEMPORARY VIEW v AS SELECT * FROM files",
        "--engine",
        "spark",
        "--master",
        "local[2]",
        "--allow-write",
    )
    assert status == 0, err


def _lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_jsonl_prints_one_object_a_line(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path
) -> None:
    status, out, _ = run(capsys, "sql", str(small), "SELECT * FROM entries", "--jsonl")
    rows = _lines(out)
    assert status == 0 and len(rows) == 150
    assert set(rows[0]) >= {"file_name", "position", "key_hash", "phy_offset"}
    status, out, _ = run(capsys, "sql", str(small), "SELECT * FROM entries", "--json")
    assert json.loads(out)["rows"] == rows  # the same rows as --json's array
    status, out, _ = run(capsys, "sql", str(small), "SELECT 1 AS a WHERE false", "--jsonl")
    assert status == 0 and out == ""  # no rows: no lines
    status, out, _ = run(capsys, "info", str(small), "--jsonl")
    files = _lines(out)
    assert [f["entries"] for f in files] == [100, 50]
    queries = tmp_path / "queries.tsv"
    queries.write_text("TopicA#k1\t4\nTopicA#k2\t4\nTopicA#k3\t4\n")
    status, out, _ = run(capsys, "query", str(small), "--queries", str(queries), "--jsonl")
    answers = _lines(out)
    assert status == 0 and [a["key"] for a in answers] == ["TopicA#k1", "TopicA#k2", "TopicA#k3"]
    status, out, _ = run(capsys, "query", str(small), "--key", "TopicA#k1", "--jsonl")
    assert status == 0 and len(out.splitlines()) == 1 and _lines(out)[0]["key"] == "TopicA#k1"


@pytest.mark.parametrize(
    "command",
    [["sql", "{store}", "SELECT 1"], ["query", "{store}", "--key", "T#k"], ["info", "{store}"]],
)
def test_jsonl_and_json_exclude_each_other(
    capsys: pytest.CaptureFixture[str], small: Path, command: list[str]
) -> None:
    argv = [a.format(store=small) for a in command]
    status, out, err = run(capsys, *argv, "--json", "--jsonl")
    assert status == 2 and out == ""
    assert "argument --jsonl: not allowed with argument --json" in err


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_queries_dash_reads_stdin(
    capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = "key\tmax_num\nTopicA#k1\t4\nTopicA#k2\n"
    queries = tmp_path / "queries.tsv"
    queries.write_text(listed)
    status, from_file, _ = run(capsys, "query", str(small), "--queries", str(queries))
    assert status == 0 and len(from_file.splitlines()) == 2
    _stdin(monkeypatch, listed)
    status, from_stdin, _ = run(capsys, "query", str(small), "--queries", "-")
    assert status == 0 and from_stdin == from_file
    _stdin(monkeypatch, "TopicA#k1\tmany\nTopicA#k2\t1O\n")
    status, _, err = run(capsys, "query", str(small), "--queries", "-")
    assert status == 1
    one_error(err, "stdin:2: max_num '1O' is not a count")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation's workspace: ``store/`` (a broker store root with its CommitLog)
    and ``lake/idx`` (its dataset, with the messages table)."""
    root = tmp_path_factory.mktemp("ws")
    make_docs_workspace(root)
    return root


def _prompt_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str
) -> tuple[int, str, str]:
    _stdin(monkeypatch, ".help\n.tables\n.nope\n")
    return run(capsys, "sql", *argv)


def test_prompt_help_lists_the_dot_commands(
    capsys: pytest.CaptureFixture[str], small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = _prompt_lines(capsys, monkeypatch, str(small))
    assert status == 1  # .nope
    assert "unknown command .nope; try .help" in err
    for command in (".help", ".tables", ".quit"):
        assert f"\n{command} " in out


@pytest.mark.parametrize(
    ("where", "views"),
    [
        (["store/index"], ["entries", "files", "slots"]),
        (["store"], ["entries", "files", "messages", "slots"]),  # a root: its CommitLog too
        (
            ["store/index", "--commitlog", "store/commitlog"],
            ["entries", "files", "messages", "slots"],
        ),
        (["lake/idx"], ["entries", "files", "messages", "slots"]),  # exported with messages
    ],
)
def test_prompt_tables_lists_every_view(
    capsys: pytest.CaptureFixture[str],
    ws: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: list[str],
    views: list[str],
) -> None:
    monkeypatch.chdir(ws)
    _stdin(monkeypatch, ".tables\n")
    status, out, err = run(capsys, "sql", *where)
    assert status == 0, err
    assert out.splitlines()[2:] == views


def test_stats_shows_times_as_info_does(capsys: pytest.CaptureFixture[str], small: Path) -> None:
    """ISO 8601 UTC in the human tables (one formatter with info), epoch ms with --epoch,
    and --json unchanged: numbers."""
    status, doc, _ = run(capsys, "stats", str(small), "--json")
    summary = json.loads(doc)["summary"]
    first = summary["first_store_ms"]
    assert status == 0 and isinstance(first, int)
    iso = format_time(first)
    status, out, _ = run(capsys, "stats", str(small), "--between", "0", str(2**62))
    assert status == 0
    assert f"first_store_time     {iso}" in out and str(first) not in out
    assert "begin_time" in out and "store_time" in out and "first_entry_time" in out
    assert "indexed between 1970-01-01T00:00:00.000Z and " in out
    status, info, _ = run(capsys, "info", str(small))
    assert iso[:19] in info  # the same form as info's begin_time
    status, out, _ = run(capsys, "stats", str(small), "--epoch")
    assert status == 0 and f"first_store_ms       {first}" in out and iso not in out


def test_no_geometry_note_when_the_files_confirm_it(
    capsys: pytest.CaptureFixture[str], small: Path
) -> None:
    """The demo's kind of store: a 1:4 geometry fitted from the size, confirmed by the
    newest file's own newest entry; no command repeats the note."""
    for argv in (
        ["info", str(small)],
        ["info", str(next(iter(sorted(small.iterdir()))))],
        ["query", str(small), "--key", "TopicA#k1"],
        ["check", str(small)],
    ):
        status, _, err = run(capsys, *argv)
        assert status == 0, err
        assert "does not fit the defaults" not in err, argv


def test_geometry_note_when_the_fit_is_a_guess(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Files written with 1 slot x 25 entries are the size of 6 x 24, the 1:4 fit: read
    with it, the newest entry is an unwritten position, so the note says what was
    assumed; the geometry given on the line silences it."""
    assert Geometry(1, 25).file_size == Geometry(6, 24).file_size
    with IndexService(tmp_path, 1, 25) as service:
        for i in range(3):
            service.build_index(MessageRecord("T", f"k{i}", None, i * 100, 1_700_000_000_000 + i))
    _, _, err = run(capsys, "info", str(tmp_path))
    assert "does not fit the defaults; using 6 slots x 24 entries" in err
    status, out, err = run(
        capsys, "query", str(tmp_path), "--key", "T#k1", "--hash-slot-num", "1", "--index-num", "25"
    )
    assert status == 0 and "100" in out.split() and "does not fit" not in err
