"""A full export to S3 killed at every step, two writers at once, and a reader during
their commits: real processes (SIGKILL, SIGSTOP) against a real S3 server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable
from generated_store import GeneratedStore, build_generated
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.manifest import read_manifest

import rmqarrow

TABLES = ("entries", "files", "slots")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("gen"), 300)


def _export(g: GeneratedStore, uri: str, **env: str) -> subprocess.Popen[str]:
    """``rmqarrow export STORE URI --overwrite`` in its own process, its temporary folder
    the test's (a killed export leaves its staged parts there)."""
    tmp = g.root / "tmp"
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "rmqarrow", "export", str(g.store), uri, "--overwrite"],
        env={**os.environ, "TMPDIR": str(tmp), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _rows(uri: str) -> dict[str, int]:
    """Rows of each table as rmqarrow reads the dataset (its pinned run)."""
    with rmqarrow.open(uri) as store:
        return {t: store.scan(t).read_all().num_rows for t in TABLES}


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.parametrize(
    "step",
    [
        "export:part",
        "export:manifest",
        "export:uploaded",
        "delta:converged",
        "delta:table",
        "delta:pinned",
    ],
)
def test_export_killed_at_every_step_leaves_a_readable_dataset_and_converges(
    generated: GeneratedStore, s3_bucket: str, step: str
) -> None:
    uri = f"{s3_bucket}/ds"
    export_store(
        generated.store,
        uri,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    first = read_manifest(uri)
    rows = _rows(uri)
    proc = _export(generated, uri, RMQARROW_CRASH_AT=step)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err
    after = read_manifest(uri)
    if step == "delta:pinned":  # killed after its pin: the new run is the dataset
        assert after["delta"]["version"] == first["delta"]["version"] + 1
    else:
        assert after["parts"] == first["parts"]
    assert _rows(uri) == rows
    proc = _export(generated, uri)  # the next run converges and lands
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    last = read_manifest(uri)
    assert last["tables"] == first["tables"]
    assert _rows(uri) == rows
    # a plain Delta reader of each table's latest version sees the pinned run's rows
    for table in TABLES:
        assert DeltaTable(f"{uri}/{table}").to_pyarrow_table().num_rows == rows[table]


def test_two_writers_one_wins_the_other_refused_in_one_line_readers_see_whole_runs(
    generated: GeneratedStore, s3_bucket: str
) -> None:
    uri = f"{s3_bucket}/ds"
    export_store(
        generated.store,
        uri,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    first = read_manifest(uri)
    rows = _rows(uri)
    # writer A freezes after committing its first data table, before its pin
    a = _export(generated, uri, RMQARROW_CRASH_AT="delta:table", RMQARROW_CRASH_SIGNAL="stop")
    try:
        deadline = time.monotonic() + 300
        while not _stopped(a.pid):
            assert a.poll() is None and time.monotonic() < deadline, a.stderr
            time.sleep(0.1)
        # a reader meanwhile sees the pinned run, not A's table commit
        assert read_manifest(uri)["parts"] == first["parts"]
        assert _rows(uri) == rows
        # writer B runs to the end: its run is pinned
        b = _export(generated, uri)
        _, err = b.communicate(timeout=300)
        assert b.returncode == 0, err
        won = read_manifest(uri)
        assert won["delta"]["version"] > first["delta"]["version"]
        assert _rows(uri) == rows
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
    # nothing of B's run lost, A's commits not in it
    assert read_manifest(uri) == won
    assert _rows(uri) == rows


def test_vacuum_on_s3_deletes_a_killed_runs_parts_and_replaced_ones(
    generated: GeneratedStore, s3_bucket: str
) -> None:
    from pyarrow import fs as pafs

    from rmqarrow._paths import ObjectLocation

    uri = f"{s3_bucket}/ds"
    export_store(
        generated.store, uri, hash_slot_num=generated.hash_slot_num, index_num=generated.index_num
    )
    rows = _rows(uri)
    proc = _export(generated, uri, RMQARROW_CRASH_AT="export:uploaded@2")
    proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    proc = _export(generated, uri)  # replaces every part of the first run
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    pinned = {r["path"] for r in read_manifest(uri)["parts"]}
    fs, root = ObjectLocation(uri).filesystem()

    def parts() -> set[str]:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        return {
            i.path[len(root) + 1 :]
            for i in infos
            if i.type == pafs.FileType.File and i.path.endswith(".parquet")
        }

    assert parts() > pinned  # the first run's and the killed run's parts are still there
    with rmqarrow.open(uri) as store:
        gone = store.vacuum(retention_hours=0, force=True)
    assert parts() == pinned
    assert sum(len(v) for v in gone.values()) > 0
    assert _rows(uri) == rows
