"""Issue 13, items 8-9: hostile datasets and absurd sizes get one clear line, never a
traceback or an attempt to allocate terabytes.

Before: an empty or garbage Parquet part gave ``ArrowInvalid`` tracebacks in ``sql``,
``query --engine duckdb`` and ``verify``; ``stats --top 100000000000000000000`` a DuckDB
``ConversionException``; ``verify --sample 10**14`` a numpy allocation of 582 TiB;
``demo --size`` had no cap; a deeply nested manifest a ``RecursionError``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from storage.storage_helpers import GEO, cli, one_line_error, records, write_csv


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    store = root / "store"
    cli("build", store, "--from", write_csv(root / "in.csv", records(60)), *GEO
        ).check_returncode()
    cli("export", store, root / "ds", *GEO).check_returncode()
    return store, root / "ds"


@pytest.mark.parametrize("content", [b"", b"garbage!", b"PAR1" + b"\0" * 20])
@pytest.mark.parametrize("command", ["sql", "query", "verify"])
def test_bad_parquet_part(made: tuple[Path, Path], tmp_path: Path, content: bytes,
                          command: str) -> None:
    store, ds = made
    bad = tmp_path / "bad"
    import shutil

    shutil.copytree(ds, bad)
    (bad / "_rmqarrow.json").unlink()  # no manifest to catch it: the part check must
    (bad / "entries" / "part-00099.parquet").write_bytes(content)
    args = {
        "sql": ["sql", bad, "SELECT count(*) FROM entries"],
        "query": ["query", bad, "--engine", "duckdb", "--key", "T#k1"],
        "verify": ["verify", store, "--dataset", bad, "--engines", "native,duckdb",
                   "--sample", "5", *GEO],
    }[command]
    done = cli(*args)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    if command != "verify":
        assert "part-00099.parquet" in one_line_error(done)
    else:
        assert "part-00099.parquet" in done.stdout + done.stderr


@pytest.mark.parametrize("args", [
    ["stats", "{ds}", "--top", "100000000000000000000"],
    ["verify", "{store}", "--sample", "100000000000000", "--engines", "native", *GEO],
    ["demo", "--size", "99999999999"],
])
def test_caps(made: tuple[Path, Path], args: list[str]) -> None:
    store, ds = made
    done = cli(*[a.format(store=store, ds=ds) for a in args])
    assert done.returncode == (1 if args[0] == "demo" else 2)  # demo: InvalidValueError
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
