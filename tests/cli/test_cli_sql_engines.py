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
from doc_workspace import make_workspace

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
    make_workspace(root)
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
    assert status == 0 and json.loads(out)[0]["n"] > 0
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
    rows = json.loads(out)
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
    status, out, _ = run(capsys, "sql", store, "SET enable_progress_bar = false")
    assert status == 0 and out == ""
    status, out, _ = run(capsys, "sql", store, "SELECT * FROM files WHERE false", "--json")
    assert status == 0 and json.loads(out) == []
