"""Incremental exports to a dataset on S3 (a real server: tests/s3_server.py): runs read
as a fresh full export of the store, killed at any step (real processes, SIGKILL) leave
the old run readable and the next run converges, and of two writers one commits while
the other is refused in one line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore, append_records, build_generated
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.manifest import read_manifest

import rmqarrow
from rmqarrow.errors import CommitConflictError

TABLES = ("entries", "files", "slots")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("gen"), 300)


@pytest.fixture
def g(template: GeneratedStore, tmp_path: Path) -> GeneratedStore:
    """A store of its own (the test appends to it)."""
    shutil.copytree(template.store, tmp_path / "store")
    return GeneratedStore(
        tmp_path,
        tmp_path / "store",
        template.records,
        template.keys,
        template.hash_slot_num,
        template.index_num,
    )


def _sync(g: GeneratedStore, uri: str) -> bool:
    return sync_store(g.store, uri, hash_slot_num=g.hash_slot_num, index_num=g.index_num).changed


def _rows(where: str | Path) -> dict[str, int]:
    with rmqarrow.open(where) as store:
        return {t: store.scan(t).read_all().num_rows for t in TABLES}


def _fresh(g: GeneratedStore, out: Path) -> Path:
    export_store(g.store, out, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    return out


def _queries(g: GeneratedStore) -> list[tuple[str, int, int, int]]:
    return [(k, 64, 0, 2**62) for k in sorted(set(g.keys))[:30]] + [("T#k3", 400, 0, 2**62)]


def _answers(where: str | Path, g: GeneratedStore) -> list[list[int]]:
    with rmqarrow.open(where) as store:
        return store.answers(_queries(g))  # type: ignore[no-any-return]


def _incremental(g: GeneratedStore, uri: str, **env: str) -> subprocess.Popen[str]:
    """``rmqarrow export STORE URI --incremental`` in its own process, its temporary
    folder the test's (a killed run leaves its copy of the dataset there)."""
    tmp = g.root / "tmp"
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "rmqarrow", "export", str(g.store), uri, "--incremental"],
        env={**os.environ, "TMPDIR": str(tmp), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_incremental_runs_on_s3_read_as_a_fresh_export(
    g: GeneratedStore, s3_bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"{s3_bucket}/ds"
    assert _sync(g, uri)  # missing: exported whole
    assert read_manifest(uri).get("run", 0) == 0
    append_records(g, 1000, 150)
    assert _sync(g, uri)  # the API
    assert read_manifest(uri)["run"] == 1
    append_records(g, 2000, 150)
    status, out, err = run(capsys, "export", str(g.store), uri, "--incremental", "--json")
    assert status == 0, err
    summary = json.loads(out)
    assert summary["dataset"] == uri and summary["run"] == 2
    assert summary["entries"] > 0
    version = read_manifest(uri)["delta"]["version"]
    assert not _sync(g, uri)  # nothing new: no commit
    assert read_manifest(uri)["delta"]["version"] == version
    fresh = _fresh(g, tmp_path / "fresh")
    assert _rows(uri) == _rows(fresh)
    assert _answers(uri, g) == _answers(fresh, g) == _answers(g.store, g)
    # the older runs stay readable as of their versions
    with rmqarrow.open(uri, as_of=0) as first:
        assert first.scan("entries").read_all().num_rows < _rows(uri)["entries"]
    # import writes the store's files back, byte for byte
    status, _, err = run(capsys, "import", uri, str(tmp_path / "imported"))
    assert status == 0, err
    names = sorted(p.name for p in g.store.iterdir())
    assert sorted(p.name for p in (tmp_path / "imported").iterdir()) == names
    for name in names:
        assert (tmp_path / "imported" / name).read_bytes() == (g.store / name).read_bytes()
    # an overwrite takes the next run number: the incremental run after it commits
    export_store(g.store, uri, hash_slot_num=g.hash_slot_num, index_num=g.index_num,
                 overwrite=True)  # fmt: skip
    assert read_manifest(uri)["run"] == 3
    append_records(g, 3000, 50)
    assert _sync(g, uri)
    assert _rows(uri) == _rows(_fresh(g, tmp_path / "fresh2"))
    # a DuckDB file over a dataset on object storage is refused before the run
    status, _, err = run(capsys, "export", str(g.store), uri, "--incremental",
                         "--duckdb-file", str(tmp_path / "x.duckdb"))  # fmt: skip
    assert status == 2
    one_error(err, "DuckDB file")


@pytest.mark.parametrize(
    "step",
    [
        "incremental:part",
        "incremental:uploaded",
        "incremental:switch",
        "delta:converged",
        "delta:table",
        "delta:pinned",
        "incremental:switched",
    ],
)
def test_incremental_killed_at_every_step_leaves_the_old_run_and_converges(
    g: GeneratedStore, s3_bucket: str, tmp_path: Path, step: str
) -> None:
    uri = f"{s3_bucket}/ds"
    assert _sync(g, uri)
    before = read_manifest(uri)
    rows = _rows(uri)
    append_records(g, 1000, 150)
    proc = _incremental(g, uri, RMQARROW_CRASH_AT=step)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err
    after = read_manifest(uri)
    if step in ("delta:pinned", "incremental:switched"):  # killed after its pin
        assert after["run"] == 1
    else:
        assert after["parts"] == before["parts"]
        assert _rows(uri) == rows
    proc = _incremental(g, uri)  # the next run converges and lands
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert read_manifest(uri)["run"] >= 1
    # a round may have read the store between two of the appended files and the signal
    # come before the next: one more run brings the rest, on top of the rounds' runs
    _sync(g, uri)
    fresh = _fresh(g, tmp_path / "fresh")
    assert _rows(uri) == _rows(fresh)
    assert _answers(uri, g) == _answers(fresh, g)


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def test_two_incremental_writers_one_commits_the_other_refused_in_one_line(
    g: GeneratedStore, s3_bucket: str, tmp_path: Path
) -> None:
    uri = f"{s3_bucket}/ds"
    assert _sync(g, uri)
    append_records(g, 1000, 150)
    # writer A freezes with its run planned and written, before uploading it
    a = _incremental(g, uri, RMQARROW_CRASH_AT="incremental:switch", RMQARROW_CRASH_SIGNAL="stop")
    try:
        deadline = time.monotonic() + 300
        while not _stopped(a.pid):
            assert a.poll() is None and time.monotonic() < deadline, a.stderr
            time.sleep(0.1)
        append_records(g, 2000, 150)
        assert _sync(g, uri)  # writer B: its run is pinned
        won = read_manifest(uri)
    except BaseException:  # a failed check: the frozen writer must not outlive the test
        a.kill()
        a.wait()
        raise
    os.kill(a.pid, signal.SIGCONT)
    _, err = a.communicate(timeout=300)
    assert a.returncode == 1, err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert len(lines) == 1 and "another writer" in lines[0], err
    assert "Traceback" not in err
    # nothing of B's run lost, nothing of A's read
    assert read_manifest(uri) == won
    fresh = _fresh(g, tmp_path / "fresh")
    assert _rows(uri) == _rows(fresh)
    assert not _sync(g, uri)  # A run again: nothing left to do


def test_a_run_planned_on_an_older_pin_is_refused(
    g: GeneratedStore, s3_bucket: str, tmp_path: Path
) -> None:
    """A writer that pinned another app's run (a full export) after this run read the
    dataset: refused before any commit, though the run number is free."""
    from rmqarrow.converters.parquet.to_delta import commit_manifest

    uri = f"{s3_bucket}/ds"
    assert _sync(g, uri)
    planned = read_manifest(uri)
    export_store(g.store, uri, hash_slot_num=g.hash_slot_num, index_num=g.index_num,
                 overwrite=True)  # fmt: skip
    won = read_manifest(uri)
    from rmqarrow._paths import dataset_location

    with pytest.raises(CommitConflictError, match="another writer pinned"):
        commit_manifest(
            dataset_location(uri), planned, "rmqarrow-incremental", 7,
            expect_pin=planned["delta"]["version"],
        )  # fmt: skip
    assert read_manifest(uri) == won


def test_follow_to_s3_commits_each_round_that_changed_something(
    g: GeneratedStore, s3_bucket: str, tmp_path: Path
) -> None:
    from rmqarrow.converters.parquet.incremental import follow_store

    uri = f"{s3_bucket}/ds"
    stop = threading.Event()
    rounds = []
    for result in follow_store(
        g.store, uri, interval=0.0, stop=stop,
        hash_slot_num=g.hash_slot_num, index_num=g.index_num,
    ):  # fmt: skip
        rounds.append(result)
        if len(rounds) == 1:  # the first round: exported whole; then the store grows
            assert result.full and result.dataset == uri
            append_records(g, 1000, 150)
        elif result.changed or len(rounds) > 20:
            stop.set()
    assert rounds[-1].changed and rounds[-1].run == 1 and rounds[-1].entries > 0
    assert read_manifest(uri)["run"] == 1
    fresh = _fresh(g, tmp_path / "fresh")
    assert _rows(uri) == _rows(fresh)
    assert _answers(uri, g) == _answers(fresh, g)


def test_incremental_with_the_commitlog_on_s3_is_the_local_delta_run(
    g: GeneratedStore, template: GeneratedStore, s3_bucket: str, tmp_path: Path
) -> None:
    uri = f"{s3_bucket}/ds"
    local = tmp_path / "local"
    opts: dict[str, object] = {
        "hash_slot_num": g.hash_slot_num,
        "index_num": g.index_num,
        "commitlog": template.root / "commitlog",
    }
    assert sync_store(g.store, uri, **opts).full  # type: ignore[arg-type]
    assert sync_store(g.store, local, **opts).full  # type: ignore[arg-type]
    append_records(g, 1000, 150)
    remote_run = sync_store(g.store, uri, **opts)  # type: ignore[arg-type]
    local_run = sync_store(g.store, local, **opts)  # type: ignore[arg-type]
    assert remote_run.changed and local_run.changed
    assert (remote_run.entries, remote_run.messages) == (local_run.entries, local_run.messages)
    assert read_manifest(uri)["tables"] == read_manifest(local)["tables"]
    with rmqarrow.open(uri) as remote_ds, rmqarrow.open(local) as local_ds:
        for table in (*TABLES, "messages"):
            got, want = remote_ds.scan(table).read_all(), local_ds.scan(table).read_all()
            assert got.num_rows == want.num_rows > 0, table
            if table != "messages":  # a table's rows, in any order
                assert sorted(got.to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)
