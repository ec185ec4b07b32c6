"""Hostile datasets and absurd sizes get one clear line, never a
traceback or an attempt to allocate terabytes.

Before: an empty or garbage Parquet part gave ``ArrowInvalid`` tracebacks in ``sql``,
``query --engine duckdb`` and ``verify``; ``stats --top 100000000000000000000`` a DuckDB
``ConversionException``; ``verify --sample 10**14`` a numpy allocation of 582 TiB;
``demo --size`` had no cap; a deeply nested manifest a ``RecursionError``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from legacy_dataset import legacy_layout
from storage.storage_helpers import GEO, cli, one_line_error, records, write_csv


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    store = root / "store"
    cli("build", store, "--from", write_csv(root / "in.csv", records(60)), *GEO).check_returncode()
    # the older layout, whose manifest the tests remove (a folder of parts without one)
    cli("export", store, root / "ds", *GEO).check_returncode()
    legacy_layout(root / "ds")
    return store, root / "ds"


@pytest.mark.parametrize("content", [b"", b"garbage!", b"PAR1" + b"\0" * 20])
@pytest.mark.parametrize("command", ["sql", "query", "verify"])
def test_bad_parquet_part(
    made: tuple[Path, Path], tmp_path: Path, content: bytes, command: str
) -> None:
    store, ds = made
    bad = tmp_path / "bad"
    import shutil

    shutil.copytree(ds, bad)
    (bad / "_rmqarrow.json").unlink()  # no manifest to catch it: the part check must
    (bad / "entries" / "part-00099.parquet").write_bytes(content)
    args = {
        "sql": ["sql", bad, "SELECT count(*) FROM entries"],
        "query": ["query", bad, "--engine", "duckdb", "--key", "T#k1"],
        "verify": [
            "verify",
            store,
            "--dataset",
            bad,
            "--engines",
            "native,duckdb",
            "--sample",
            "5",
            *GEO,
        ],
    }[command]
    done = cli(*args)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    if command != "verify":
        assert "part-00099.parquet" in one_line_error(done)
    else:
        assert "part-00099.parquet" in done.stdout + done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "{ds}", "--top", "100000000000000000000"],
        ["verify", "{store}", "--sample", "100000000000000", "--engines", "native", *GEO],
        ["demo", "--size", "99999999999"],
    ],
)
def test_caps(made: tuple[Path, Path], args: list[str]) -> None:
    store, ds = made
    done = cli(*[a.format(store=store, ds=ds) for a in args])
    assert done.returncode == 2  # a mistake on the line
    assert "must be" in one_line_error(done)


def test_deeply_nested_manifest(made: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    _, ds = made
    bad = tmp_path / "nested"
    shutil.copytree(ds, bad)
    (bad / "_rmqarrow.json").write_text("[" * 100_000 + "]" * 100_000)
    done = cli("import", bad, tmp_path / "out")
    assert done.returncode == 1
    assert "manifest" in one_line_error(done)


@pytest.mark.parametrize("command", ["info", "query", "export", "sql"])
def test_file_name_that_is_not_utf8(made: tuple[Path, Path], tmp_path: Path, command: str) -> None:
    """A stray file whose name is not UTF-8 (its bytes cannot enter an Arrow string):
    one line naming it and what to do, never a UnicodeEncodeError."""
    import os
    import shutil

    store, _ = made
    odd = tmp_path / "odd"
    shutil.copytree(store, odd)
    with open(os.path.join(os.fsencode(odd), b"2026\xff"), "wb") as fh:
        fh.write(b"x" * 64)
    args = {
        "info": ["info", odd, *GEO],
        "query": ["query", odd, "--key", "T#k1", *GEO],
        "export": ["export", odd, tmp_path / "out", *GEO],
        "sql": ["sql", odd, "SELECT 1", *GEO],
    }[command]
    done = cli(*args)
    assert done.returncode == 1
    assert "not UTF-8" in one_line_error(done) and "move it out" in one_line_error(done)
    assert not (tmp_path / "out").exists()


def test_damaged_commitlog_under_sql_and_stats(tmp_path: Path) -> None:
    """A damaged CommitLog streamed into DuckDB (``sql``/``stats --commitlog``) reports the
    CommitLog's own line (file and physical offset), not DuckDB's wrapped traceback."""
    from rmqarrow.demo.run import write_demo_commitlog

    commitlog, _ = write_demo_commitlog(tmp_path, 300, 3)
    store = tmp_path / "store"
    cli(
        "build", store, "--from-commitlog", commitlog, "--hash-slot-num", "64", "--index-num", "256"
    ).check_returncode()
    first = sorted(commitlog.iterdir())[0]
    data = bytearray(first.read_bytes())
    data[5000:5008] = b"\xff" * 8  # a record's fields become impossible
    first.write_bytes(bytes(data))
    for args in (
        ["sql", store, "SELECT count(*) FROM messages", "--commitlog", commitlog],
        ["stats", store, "--commitlog", commitlog],
    ):
        done = cli(*args, "--hash-slot-num", "64", "--index-num", "256")
        assert done.returncode == 1
        line = one_line_error(done)
        assert "physical offset" in line and first.name in line


@pytest.mark.parametrize("what", ["file", "dir"])
def test_unreadable_store_as_an_ordinary_user(made: tuple[Path, Path], what: str) -> None:
    """Run as an unprivileged user (root reads everything): an unreadable index file or
    store directory is one line saying permission denied and which, never a traceback."""
    import shutil
    import subprocess
    import sys
    import tempfile

    store, _ = made
    base = Path(tempfile.mkdtemp(prefix="rmqarrow-perm-"))  # reachable by any user
    try:
        base.chmod(0o755)
        locked = base / "locked"
        shutil.copytree(store, locked)
        locked.chmod(0o755)
        target = sorted(locked.iterdir())[0] if what == "file" else locked
        target.chmod(0o000)
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-m",
                "rmqarrow",
                "query",
                str(locked),
                "--key",
                "T#k1",
                *GEO,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=base,
        )
        target.chmod(0o755)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert done.returncode == 1, done.stderr
    line = one_line_error(done)
    assert "permission denied" in line and str(target) in line
