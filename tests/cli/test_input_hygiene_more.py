"""More command-line input hygiene: ``build --from`` given a directory says so and points at
``--from-commitlog``, ``query`` refuses Spark options without ``--engine spark`` (they would
be ignored), and Ctrl-C at any moment of a run, also while the modules still import, ends
in one line and status 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore, build_generated
from golden_data import golden_set
from rocksdb_golden_data import ALL_ROCKSDB

BASIC = golden_set("basic")


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("hygiene-cli-more") / "gen", messages=300)


def basic_geometry() -> list[str]:
    return ["--hash-slot-num", str(BASIC.hash_slot_num), "--index-num", str(BASIC.index_num)]


# -- build --from DIR -----------------------------------------------------------------------


def test_build_from_a_directory_points_at_from_commitlog(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    log = gen.root / "commitlog"
    store = tmp_path / "store"
    status, out, err = run(capsys, "build", str(store), "--from", str(log))
    assert status == 2 and out == ""
    line = one_error(err, f"{log}: a directory, not a records file", "--from-commitlog")
    assert "no such file" not in line and "Parquet, CSV or TSV" in line
    assert not store.exists()
    # what the message says to do works
    status, _, err = run(
        capsys,
        "build",
        str(store),
        "--from-commitlog",
        str(log),
        "--hash-slot-num",
        str(gen.hash_slot_num),
        "--index-num",
        str(gen.index_num),
    )
    assert status == 0, err
    # a file that is not there keeps its own message (status 1)
    status, _, err = run(capsys, "build", str(tmp_path / "s2"), "--from", str(tmp_path / "x.csv"))
    assert status == 1
    one_error(err, "no such file")


# -- query: Spark options need --engine spark ------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--engine", "duckdb", "--master", "spark://nowhere:7077"], "--master needs"),
        (["--master", "local[1]"], "--master needs"),  # the default engine, native
        (["--engine", "duckdb", "--no-ship", "--spark-ui"], "--no-ship, --spark-ui need"),
    ],
)
def test_query_refuses_spark_options_without_the_spark_engine(
    capsys: pytest.CaptureFixture[str], extra: list[str], named: str
) -> None:
    argv = ["query", str(BASIC.store_dir), "--key", "0", *basic_geometry()]
    status, out, err = run(capsys, *argv, *extra)
    assert status == 2 and out == ""
    engine = extra[1] if extra[0] == "--engine" else "native"
    one_error(err, named, f"--engine spark (got --engine {engine})", "drop")
    # without them the same lookup answers
    status, out, _ = run(capsys, *argv, *extra[:2] if extra[0] == "--engine" else [])
    assert status == 0 and "offsets for '0'" in out
    # the refused options left no Spark setting behind in this process
    from rmqarrow.converters.spark import session

    assert not session.ui_wanted() or os.environ.get(session.UI_ENV)


def test_query_of_a_rocksdb_index_refuses_master_without_spark(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("rocksdict", reason="the rocksdb extra (rocksdict) is not installed")
    edge = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")
    argv = [
        "query",
        str(edge.db),
        "--index",
        "rocksdb",
        "--topic",
        "EdgeTopic",
        "--key",
        "first",
        "--begin",
        "1749117600000",
        "--end",
        "1749290400000",
    ]
    status, _, err = run(capsys, *argv, "--master", "local[1]")
    assert status == 2
    one_error(err, "--master needs --engine spark (got --engine native)")


# -- Ctrl-C, also during the imports ----------------------------------------------------------


def _startup_seconds(*code: str) -> float:
    """The slowest of three runs of ``python -c CODE`` (the machine's load included)."""
    took = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", ";".join(code)], check=True)
        took.append(time.perf_counter() - t0)
    return max(took)


@pytest.mark.slow
def test_ctrl_c_while_importing_is_one_line_and_130(tmp_path: Path) -> None:
    """Real processes, a real SIGINT at delays spread over the imports.

    Observed (CPython 3.11): a signal before the interpreter installs its handler ends the
    process by SIGINT (status -2, nothing printed); one during the interpreter's own start
    (``site``, before any module of ours runs) is CPython's "Fatal Python error:
    init_import_site" with status 1, and one while ``-m`` imports the package (``runpy``,
    before ``__main__`` installs anything) is Python's traceback: no program can catch
    either, so the delays begin after the package's import and a run the jitter lands
    there is passed over.  From the package import on, every run must end in one
    line, ``rmqarrow: interrupted`` (before the command ran) or ``rmqarrow info:
    interrupted`` (during it), and status 130; -2 is accepted where CPython re-raises the
    signal at exit."""
    # ``-m`` imports the package itself before its __main__ (the handler) runs: the delays
    # spread over what comes after, the command line's imports and its parser
    package = _startup_seconds("import rmqarrow")
    imports = _startup_seconds("import rmqarrow.cli", "rmqarrow.cli.build_parser()") - package
    steps = 10
    delays = [package + imports * i / steps for i in range(1, steps + 1)]
    argv = [sys.executable, "-m", "rmqarrow", "info", str(BASIC.store_dir), *basic_geometry()]
    seen = []
    for delay in delays:
        proc = subprocess.Popen(
            argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(delay)
        finished = proc.poll() is not None  # a fast run may end before its signal
        if not finished:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        seen.append((round(delay, 3), proc.returncode, err.strip().splitlines()[-1:]))
        if finished:
            assert proc.returncode == 0 and "Traceback" not in err, err
            continue
        if err.startswith("Fatal Python error: init_import_site"):
            continue  # the interpreter's own start, see above
        frames = [ln for ln in err.splitlines() if ln.lstrip().startswith('File "')]
        if frames and not any("__main__.py" in ln or "/cli/" in ln for ln in frames):
            continue  # ``-m`` still importing the package, before its __main__ (see above)
        assert "Traceback" not in err, (delay, err)
        assert proc.returncode in (130, -signal.SIGINT), (delay, proc.returncode, err)
        lines = err.strip().splitlines()
        assert lines == [] or lines[-1] in (
            "rmqarrow: interrupted",
            "rmqarrow info: interrupted",
        ), (delay, err)
    # at least one signal landed before the command ran: during the imports
    assert any(last == ["rmqarrow: interrupted"] for _, _, last in seen), seen
