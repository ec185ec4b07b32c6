"""``rmqarrow sql`` and ``stats`` over native stores: memory bounded by the statement, a
damaged CommitLog that only fails the statements reading it, output streamed.

Memory is measured as a real process's peak resident set (``ru_maxrss`` of a child that
runs the command), against the same command over a tiny store: loading every entry of
the large store (as ``sql`` once did for any statement) costs hundreds of MiB more.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import one_error, run

from rmqarrow.demo import make_docs_workspace
from rmqarrow.format.layout import Geometry
from rmqarrow.testing.stores import write_random_store

PEAK = """
import resource, sys
from rmqarrow.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"PEAK {peak} {status}", file=sys.stderr)
"""


def _peak_mib(*args: str) -> int:
    """``rmqarrow ARGS`` in a child process (stdout discarded): its peak RSS in MiB."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
        check=False,
    )
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("PEAK ")]
    assert line, done.stderr
    _, peak, status = line[-1].split()
    assert status == "0", done.stderr
    return int(peak)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("sizes")
    tiny, large = root / "tiny", root / "large"
    write_random_store(tiny, Geometry(1_000, 4_000), [100])
    write_random_store(large, Geometry(1_000_000, 4_000_000), [3_999_999])  # one full file
    return tiny, large


@pytest.mark.slow
def test_a_statement_over_files_reads_headers_only(stores: tuple[Path, Path]) -> None:
    tiny, large = stores
    query = "SELECT count(*), sum(index_count) FROM files"
    base = _peak_mib("sql", str(tiny), query)
    peak = _peak_mib("sql", str(large), query)
    assert peak < base + 64, (base, peak)  # loading the 4 M entries: about +450 MiB


@pytest.mark.slow
def test_every_entry_streams_to_stdout_in_bounded_memory(stores: tuple[Path, Path]) -> None:
    tiny, large = stores
    query = "SELECT * FROM entries"
    base = _peak_mib("sql", str(tiny), query, "--csv")
    peak = _peak_mib("sql", str(large), query, "--csv")
    assert peak < base + 192, (base, peak)  # the whole result held: several GiB


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    make_docs_workspace(root)
    return root


def _damaged(ws: Path, tmp_path: Path, how: str) -> Path:
    """A copy of the broker store root after a crash (``torn``: its newest CommitLog file
    cut inside the last record) or while a file is born (``empty``: a 0-byte newest)."""
    import shutil

    store = tmp_path / "store"
    shutil.copytree(ws / "store", store)
    files = sorted((store / "commitlog").iterdir())
    if how == "torn":
        data = files[-1].read_bytes().rstrip(b"\0")
        files[-1].write_bytes(data[:-20])
    else:
        start = int(files[-1].name) + files[-1].stat().st_size
        (store / "commitlog" / f"{start:020d}").touch()
    return store


@pytest.mark.parametrize("how", ["torn", "empty"])
def test_a_damaged_commitlog_fails_only_what_reads_it(
    capsys: pytest.CaptureFixture[str], ws: Path, tmp_path: Path, how: str
) -> None:
    store = _damaged(ws, tmp_path, how)
    from rmqarrow.converters.arrow.messages import messages_table

    from rmqarrow.errors import CommitLogError

    try:  # what the CommitLog reader itself makes of this log decides the messages view
        readable = messages_table(store / "commitlog").num_rows > 0
    except CommitLogError:
        readable = False
    status, out, err = run(capsys, "sql", str(store), "SELECT count(*) AS n FROM files")
    files = len(list((store / "index").iterdir()))
    assert status == 0 and out.split()[-1] == str(files), (out, err)
    status, out, _ = run(capsys, "sql", str(store), "SELECT count(*) AS n FROM entries", "--json")
    assert status == 0 and json.loads(out)["rows"][0]["n"] > 0
    status, out, err = run(capsys, "stats", str(store), "--json")
    assert status == 0 and json.loads(out)["summary"]
    if not readable:
        assert "warning: the index was not checked against its CommitLog" in err
        status, _, err = run(capsys, "sql", str(store), "SELECT count(*) FROM messages")
        assert status == 1
        one_error(err, str(store / "commitlog"))
        status, out, err = run(
            capsys, "stats", str(store / "index"), "--commitlog", str(store / "commitlog"), "--json"
        )
        assert status == 1 and json.loads(out)["summary"]  # the analyses, then the error
        one_error(err, str(store / "commitlog"))


def test_results_stream_in_blocks_and_read_as_one(
    capsys: pytest.CaptureFixture[str], ws: Path
) -> None:
    """More rows than one printed block: the JSON is one array, the CSV one header, the
    text table one header, every row once."""
    store = str(ws / "store")
    query = "SELECT file_name, position FROM entries ORDER BY position"
    status, out, _ = run(capsys, "sql", store, query, "--json")
    doc = json.loads(out)
    assert doc["columns"] == ["file_name", "position"]
    rows = doc["rows"]
    assert (
        status == 0
        and len(rows) > 4096
        and rows[0]
        == {
            "file_name": rows[0]["file_name"],
            "position": 1,
        }
    )
    status, out, _ = run(capsys, "sql", store, query, "--csv")
    lines = out.splitlines()
    assert lines[0] == "file_name,position" and len(lines) == len(rows) + 1
    status, out, _ = run(capsys, "sql", store, query)
    lines = out.splitlines()
    assert lines[0].split() == ["file_name", "position"] and len(lines) == len(rows) + 2
    status, out, _ = run(capsys, "sql", store, "SET enable_progress_bar = false", "--allow-write")
    assert status == 0 and out == ""
    status, out, _ = run(capsys, "sql", store, "SELECT * FROM files WHERE false", "--json")
    assert status == 0 and json.loads(out)["rows"] == []


# -- Ctrl-C and memory limits ------------------------------------------------------------


def _interrupt(argv: list[str], delay: float) -> tuple[int, str, bool]:
    """``rmqarrow ARGV`` in a real process sent a real SIGINT after ``delay`` seconds:
    status, stderr, and whether it had finished before the signal."""
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqarrow", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    finished = proc.poll() is not None
    if not finished:
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err, finished


def _said_interrupted(status: int, err: str, finished: bool) -> None:
    import signal

    assert "Traceback" not in err and "this is a bug" not in err, err
    if finished:
        assert status == 0, err
        return
    # -2: CPython re-raised the signal at exit, after the command's own line
    assert status in (130, -signal.SIGINT), (status, err)
    lines = [ln for ln in err.splitlines() if not ln.startswith(("note: ", "warning: "))]
    if status == 130:
        assert len(lines) == 1 and lines[0].endswith("interrupted"), err


def test_a_ctrl_c_duckdb_quotes_is_an_interrupt() -> None:
    """A Ctrl-C landing in a Python call DuckDB makes (here: reading a registered table's
    schema, as binding the lookup views does) comes back as DuckDB's InvalidInputException
    quoting it; under load the slow test below met it as "unexpected ... (this is a bug)"."""
    import duckdb

    from rmqarrow.cli import interrupted

    class Interrupted:
        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            raise KeyboardInterrupt

    con = duckdb.connect()
    try:
        with pytest.raises(duckdb.Error) as caught:
            con.register("_rmq_files", Interrupted())
    finally:
        con.close()
    assert "KeyboardInterrupt" in str(caught.value)
    assert interrupted(caught.value)
    assert not interrupted(duckdb.InvalidInputException("reading the schema failed: OSError"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "{large}"],
        ["sql", "{large}", "SELECT key_hash, count(*) FROM entries GROUP BY 1 ORDER BY 2 LIMIT 3"],
        ["sql", "{large}", "SELECT * FROM entries", "--csv"],
    ],
)
def test_ctrl_c_is_one_line_and_130(stores: tuple[Path, Path], argv: list[str]) -> None:
    """DuckDB catches the signal itself and stops the statement ("Query interrupted", a
    plain RuntimeError); one landing in a table streamed to it surfaced as DuckDB's error
    quoting the Python traceback.  Each is ``rmqarrow CMD: interrupted`` and 130."""
    import time

    _, large = stores
    args = [a.format(large=large) for a in argv]
    # The signal must land while the command runs, on a fast machine as on a loaded one:
    # time one uninterrupted run and interrupt the others at fractions of it.
    started = time.monotonic()
    whole = subprocess.run(
        [sys.executable, "-m", "rmqarrow", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    took = time.monotonic() - started
    assert whole.returncode == 0, whole.stderr
    seen = []
    for delay in (took * f for f in (0.15, 0.3, 0.45, 0.6, 0.75)):
        status, err, finished = _interrupt(args, delay)
        seen.append((delay, status, finished))
        _said_interrupted(status, err, finished)
    assert any(not finished for _, _, finished in seen), seen


@pytest.mark.spark
@pytest.mark.slow
def test_ctrl_c_in_a_spark_query_prints_no_py4j_traceback(ws: Path) -> None:
    """py4j logs a Ctrl-C that lands in a call to the JVM through the root logger
    (``logging.exception``), which printed "ERROR:root:..." and a traceback."""
    argv = ["query", str(ws / "store"), "--engine", "spark", "--topic", "OrderTopic"]
    for delay in (8.0, 12.0, 16.0):
        status, err, finished = _interrupt([*argv, "--key", "order-1"], delay)
        assert "ERROR:root" not in err, err
        _said_interrupted(status, err, finished)


LIMITED = """
import resource, sys
limit = int(sys.argv[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from rmqarrow.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _limited(kib: int, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LIMITED, str(kib), *argv],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_duckdb_runs_under_ulimit_v_1500000(ws: Path, stores: tuple[Path, Path]) -> None:
    """pyarrow's allocator (mimalloc) reserved 1 GiB of address space at its first
    allocation, which left DuckDB too little to start ("needs about 80 MiB")."""
    store = str(ws / "store")
    for argv in (
        ["sql", store, "SELECT count(*) FROM entries"],
        ["stats", store, "--json"],
        ["query", store, "--engine", "duckdb", "--topic", "OrderTopic", "--key", "order-1"],
        ["sql", str(stores[1]), "SELECT count(*) FROM entries"],
    ):
        done = _limited(1_500_000, *argv)
        assert done.returncode == 0, (argv, done.stderr)
        assert "error" not in done.stderr and "Traceback" not in done.stderr


def test_numba_failing_to_load_is_one_clean_note(ws: Path) -> None:
    """Under a limit too small for llvmlite, one note naming the library and the limit, not
    llvmlite's own paragraph ("This could mean that ...")."""
    done = _limited(
        450_000, "query", str(ws / "store"), "--topic", "OrderTopic", "--key", "order-1"
    )
    assert done.returncode == 0, done.stderr
    notes = [ln for ln in done.stderr.splitlines() if "numba" in ln]
    assert len(notes) == 1, done.stderr
    assert notes[0] == (
        "note: numba could not load (libllvmlite.so cannot be mapped) under ulimit -v 450000 "
        "(0.4 GiB of address space): using the numpy kernels (same answers)"
    )


def test_a_missing_table_names_the_session_tables_not_duckdb_catalog(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # DuckDB suggests its own catalog (pg_sequences, pg_settings) for a name nobody
    # registered; the line names the tables this index is read through instead
    golden = Path(__file__).parents[1] / "golden" / "basic"
    status, _, err = run(capsys, "sql", str(golden), "select * from nosuch")
    line = one_error(err, "nosuch", "This session's tables: entries, files, slots.")
    assert status == 1 and "pg_" not in line and "_rmq" not in line
    # a near miss keeps DuckDB's own suggestion of one of them
    status, _, err = run(capsys, "sql", str(golden), "select * from entrie")
    assert 'Did you mean "entries"?' in one_error(err, "entrie")
