"""Import and export interrupted at every step, cleanup steps included, by kill -9, SIGTERM
and Ctrl-C (SIGINT), in real processes: the next run converges to what a clean run gives,
byte for byte, with nothing left beside the output and ``check`` healthy.

Before: Ctrl-C while an import's staging folder was removed left some files placed and
the journal gone (the re-run failed with "already holds", and ``check`` called the store,
with files missing, healthy); Ctrl-C while placing left an orphan that blocked re-runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from legacy_dataset import legacy_layout
from storage.storage_helpers import GEO, cli, hidden, records, write_csv

#: where an import into an existing store can be stopped, in the order they happen
IMPORT_STEPS = [
    "import:file@2",  # building the files in the staging folder
    "import:journal",  # the journal written, nothing placed
    "import:placed@1",
    "import:placed@3",
    "import:committed",  # every file placed, the journal says so
    "import:cleanup@1",  # removing the staged copies
    "import:cleanup@3",
    "import:journal-removed",  # the journal gone, the empty folder left
]
#: from here on the import is complete: a re-run finds the files there
COMMITTED = IMPORT_STEPS.index("import:committed")
SIGNALS = {"kill": -9, "term": -15, "int": None}


def _tree(path: Path) -> dict[str, bytes]:
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _run(*args: object, step: str, sig: str) -> int:
    import os
    import subprocess
    import sys

    env = dict(os.environ, RMQARROW_CRASH_AT=step, RMQARROW_CRASH_SIGNAL=sig)
    env.pop("RMQARROW_NO_NUMBA", None)
    done = subprocess.run(
        [sys.executable, "-m", "rmqarrow", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    if sig == "int":
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    else:
        assert done.returncode == SIGNALS[sig], done.stderr
    return done.returncode


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, bytes]]:
    """A store, a dataset of later messages, and the store after a clean import of it."""
    root = tmp_path_factory.mktemp("crash-import")
    store = root / "store"
    cli("build", store, "--from", write_csv(root / "a.csv", records(150)), *GEO).check_returncode()
    later = root / "later"
    cli(
        "build", later, "--from", write_csv(root / "b.csv", records(200, 150)), *GEO
    ).check_returncode()
    ds = root / "ds"
    cli("export", later, ds, *GEO).check_returncode()
    clean = root / "clean"
    shutil.copytree(store, clean)
    cli("import", ds, clean).check_returncode()
    assert len(_tree(clean)) > len(_tree(store)) + 3
    return store, ds, _tree(clean)


def _converged(work: Path, target: Path, expected: dict[str, bytes]) -> None:
    assert _tree(target) == expected
    assert hidden(work) == []  # no staging folder, journal or lock left beside it
    check = cli("check", target)
    assert check.returncode == 0, check.stdout + check.stderr


def _rerun(ds: Path, target: Path, complete: bool) -> None:
    again = cli("import", ds, target)
    if complete:  # the interrupted run had finished: the files are there, and said so
        assert again.returncode == 1 and "already holds" in again.stderr, again.stderr
    else:
        assert again.returncode == 0, again.stderr


# SIGTERM ends the process as SIGKILL does (no handler): two steps of it suffice
@pytest.mark.parametrize(
    ("step", "sig"),
    [
        *((step, sig) for step in IMPORT_STEPS for sig in ("kill", "int")),
        ("import:placed@3", "term"),
        ("import:cleanup@1", "term"),
    ],
)
def test_import_into_a_store_interrupted(
    tmp_path: Path, setup: tuple[Path, Path, dict[str, bytes]], step: str, sig: str
) -> None:
    store, ds, expected = setup
    work = tmp_path / "work"
    work.mkdir()
    target = work / "store"
    shutil.copytree(store, target)
    _run("import", ds, target, step=step, sig=sig)
    complete = IMPORT_STEPS.index(step) >= COMMITTED
    if sig == "int":  # Ctrl-C: the run itself finished or rolled back, nothing beside
        assert _tree(target) == (expected if complete else _tree(store))
        assert hidden(work) == []
    _rerun(ds, target, complete)
    _converged(work, target, expected)


@pytest.mark.parametrize(
    "step",
    ["import:rollback@2", "import:rolled-back", "import:cleanup@2", "import:journal-removed"],
)
def test_recovery_itself_interrupted(
    tmp_path: Path, setup: tuple[Path, Path, dict[str, bytes]], step: str
) -> None:
    """A run killed half-way through placing; the next run killed while it rolls that
    back; the one after converges."""
    store, ds, expected = setup
    work = tmp_path / "work"
    work.mkdir()
    target = work / "store"
    shutil.copytree(store, target)
    _run("import", ds, target, step="import:placed@3", sig="kill")
    _run("import", ds, target, step=step, sig="kill")
    _rerun(ds, target, complete=False)
    _converged(work, target, expected)


@pytest.mark.parametrize("sig", ["kill", "int"])
@pytest.mark.parametrize("step", ["import:file@2", "atomic:complete", "atomic:renamed"])
def test_import_into_a_new_directory_interrupted(
    tmp_path: Path, setup: tuple[Path, Path, dict[str, bytes]], step: str, sig: str
) -> None:
    _, ds, _ = setup
    work = tmp_path / "work"
    work.mkdir()
    target = work / "back"
    _run("import", ds, target, step=step, sig=sig)
    complete = step == "atomic:renamed"
    assert target.exists() == complete  # all or nothing
    _rerun(ds, target, complete)
    back = tmp_path / "reference"
    cli("import", ds, back).check_returncode()
    _converged(work, target, _tree(back))


@pytest.mark.parametrize("sig", ["int", "term"])
@pytest.mark.parametrize(
    "step",
    ["export:part@2", "atomic:complete", "atomic:old-aside", "atomic:new-in", "atomic:cleanup@2"],
)
def test_export_overwrite_interrupted(
    tmp_path: Path, setup: tuple[Path, Path, dict[str, bytes]], step: str, sig: str
) -> None:
    store, ds, _ = setup
    work = tmp_path / "work"
    work.mkdir()
    out = work / "ds"
    # the older layout, replaced by a rename (a dataset of Delta tables gets a version:
    # tests/converters/delta/test_delta_runs.py kills that at every step)
    cli("export", ds.parent / "later", out, *GEO).check_returncode()
    old = _tree(legacy_layout(out))
    _run("export", store, out, *GEO, "--overwrite", step=step, sig=sig)
    if sig == "int":  # its own cleanup ran: the old dataset or the new one in place
        assert out.exists()
        # nothing beside it, but what the interrupted cleanup had yet to remove
        assert all(".ds.old-" in n for n in hidden(work)) and (
            hidden(work) == [] or step.startswith("atomic:cleanup")
        )
    done = cli("export", store, out, *GEO, "--overwrite")
    assert done.returncode == 0, done.stderr
    assert hidden(work) == []
    assert _tree(out) != old
    back = tmp_path / "back"
    assert cli("import", out, back).returncode == 0
    assert _tree(back) == _tree(store)
