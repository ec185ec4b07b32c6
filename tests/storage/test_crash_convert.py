"""kill -9 for ``export``, ``export --overwrite`` and
``import``: killed at each write step, the output is the old state or the complete new
one (never partial), and the next run cleans every leftover and succeeds.

Before: ``.OUT.tmp-*`` folders accumulated next to the output, ``.rmqarrow-import-*``
folders landed inside the target store, and a killed import left 3 of 10 files that
``info`` showed as a valid store while the re-run was refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from legacy_dataset import legacy_layout
from storage.storage_helpers import GEO, cli, hidden, records, write_csv


def _tree(path: Path) -> dict[str, bytes]:
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def store(tmp_path: Path) -> Path:
    src = write_csv(tmp_path / "in.csv", records(200))
    out = tmp_path / "store"
    cli("build", out, "--from", src, *GEO).check_returncode()
    return out


@pytest.mark.parametrize("crash", ["export:part@2", "export:manifest", "atomic:complete"])
def test_export_killed(tmp_path: Path, store: Path, crash: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    ds = work / "ds"
    assert cli("export", store, ds, *GEO, crash=crash).returncode == -9
    assert not ds.exists()  # nothing, not a partial dataset
    done = cli("export", store, ds, *GEO)
    assert done.returncode == 0, done.stderr
    assert hidden(work) == []  # the killed run's staging folder is gone
    assert cli("import", ds, tmp_path / "back").returncode == 0
    assert _tree(tmp_path / "back") == _tree(store)


# a dataset of the older manifest layout is replaced by a rename (Delta tables get a new
# version: tests/converters/delta/test_delta_runs.py kills that at every step)


@pytest.mark.parametrize(
    "crash", ["export:part@2", "atomic:complete", "atomic:old-aside", "atomic:new-in"]
)
def test_export_overwrite_killed(tmp_path: Path, store: Path, crash: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    ds = work / "ds"
    small = tmp_path / "small"
    cli(
        "build", small, "--from", write_csv(tmp_path / "s.csv", records(5)), *GEO
    ).check_returncode()
    cli("export", small, ds, *GEO).check_returncode()
    old = _tree(legacy_layout(ds))
    assert cli("export", store, ds, *GEO, "--overwrite", crash=crash).returncode == -9
    done = cli("export", store, ds, *GEO, "--overwrite")
    assert done.returncode == 0, done.stderr
    assert hidden(work) == []
    assert _tree(ds) != old
    assert cli("import", ds, tmp_path / "back").returncode == 0
    assert _tree(tmp_path / "back") == _tree(store)


def test_export_overwrite_killed_keeps_old_or_new(tmp_path: Path, store: Path) -> None:
    """Between moving the old dataset aside and renaming the new one in, the next run
    puts the old one back before anything else."""
    work = tmp_path / "work"
    work.mkdir()
    ds = work / "ds"
    cli("export", store, ds, *GEO).check_returncode()
    old = _tree(legacy_layout(ds))
    killed = cli("export", store, ds, *GEO, "--overwrite", crash="atomic:old-aside")
    assert killed.returncode == -9
    assert not ds.exists()
    done = cli("export", store, ds, *GEO)  # without --overwrite: refused, but restored
    assert done.returncode == 1
    assert _tree(ds) == old
    assert hidden(work) == []


@pytest.mark.parametrize("crash", ["import:file@2", "atomic:complete"])
def test_import_into_new_dir_killed(tmp_path: Path, store: Path, crash: str) -> None:
    ds = tmp_path / "ds"
    cli("export", store, ds, *GEO).check_returncode()
    work = tmp_path / "work"
    work.mkdir()
    out = work / "index"
    assert cli("import", ds, out, crash=crash).returncode == -9
    assert not out.exists()
    done = cli("import", ds, out)
    assert done.returncode == 0, done.stderr
    assert hidden(work) == []
    assert _tree(out) == _tree(store)


@pytest.mark.parametrize("crash", ["import:file@2", "import:placed@3"])
def test_import_into_existing_dir_killed(tmp_path: Path, store: Path, crash: str) -> None:
    ds = tmp_path / "ds"
    cli("export", store, ds, *GEO).check_returncode()
    work = tmp_path / "work"
    out = work / "index"
    out.mkdir(parents=True)
    (out / "keep.txt").write_text("mine")
    assert cli("import", ds, out, crash=crash).returncode == -9
    assert hidden(out) == []  # never staged inside the target directory
    done = cli("import", ds, out)  # the killed import's files are taken out, then redone
    assert done.returncode == 0, done.stderr
    assert hidden(work) == [] and hidden(out) == []
    assert (out / "keep.txt").read_text() == "mine"
    got = _tree(out)
    del got["keep.txt"]
    assert got == _tree(store)


def test_output_inside_a_store_is_refused(tmp_path: Path, store: Path) -> None:
    """No output inside a store: RocketMQ's load() opens every entry of store/index."""
    before = sorted(p.name for p in store.iterdir())
    done = cli("export", store, store / "exp", *GEO)
    assert done.returncode == 2
    assert "inside the index store directory" in done.stderr
    cli("export", store, tmp_path / "ds", *GEO).check_returncode()
    done = cli("import", tmp_path / "ds", store / "again")
    assert done.returncode == 2
    assert sorted(p.name for p in store.iterdir()) == before


@pytest.mark.parametrize("engine", ["local"])
def test_overwrite_refuses_anything_but_a_dataset(tmp_path: Path, store: Path, engine: str) -> None:
    """Only a dataset is replaced (Spark: tests/converters/spark/test_spark_export.py)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.txt").write_text("precious")
    done = cli("export", store, docs, *GEO, "--overwrite", "--engine", engine)
    assert done.returncode == 1
    assert "not an rmqarrow dataset" in done.stderr
    assert (docs / "report.txt").read_text() == "precious"
    a_file = tmp_path / "a.bin"
    a_file.write_bytes(b"x")
    assert cli("export", store, a_file, *GEO, "--overwrite").returncode == 1
    assert a_file.read_bytes() == b"x"
