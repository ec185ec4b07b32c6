"""Incremental runs, follow rounds and full exports of a dataset of Delta tables: each a
commit through delta-rs (the run's record in its pin), killed at any step undone by the
next run, and read by rmqarrow and by foreign readers as a fresh full export of the store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest
from deltalake import DeltaTable
from generated_store import GeneratedStore, append_records, build_generated
from legacy_dataset import legacy_export, legacy_layout
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.delta.run import open_snapshot
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import follow_store, sync_store
from rmqarrow.converters.parquet.manifest import MANIFEST_NAME, read_manifest
from rmqarrow.converters.parquet.parts import table_parts
from rmqarrow.converters.parquet.to_delta import convert_to_delta

import rmqarrow
from rmqarrow.errors import DatasetError, InvalidValueError, StoreNotFoundError

MESSAGES = 600
TABLES = ("entries", "files", "slots")


def _export(g: GeneratedStore, ds: Path) -> None:
    """A dataset in the manifest layout (the tests convert it, or compare with it)."""
    legacy_export(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)


def _rows(ds: Path) -> dict[str, int]:
    store = rmqarrow.open(ds)
    return {t: store.scan(t).read_all().num_rows for t in TABLES}


def _sync(g: GeneratedStore, ds: Path) -> bool:
    return sync_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num).changed


def test_incremental_runs_are_commits_read_as_a_fresh_export(tmp_path: Path) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    _export(g, ds)
    convert_to_delta(ds)
    first = _rows(ds)
    for run in (1, 2, 3):
        append_records(g, 1000 * run, 150)
        assert _sync(g, ds)
        assert read_manifest(ds)["run"] == run
        assert open_snapshot(ds).version == run
    assert not _sync(g, ds)  # nothing new: no commit
    assert open_snapshot(ds).version == 3
    fresh = tmp_path / "fresh"
    _export(g, fresh)
    qs = [(k, 64, 0, 2**62) for k in sorted(set(g.keys))[:30]] + [("T#k3", 400, 0, 2**62)]
    native = rmqarrow.open(g.store).answers(qs)
    assert rmqarrow.open(ds).answers(qs) == native == rmqarrow.open(fresh).answers(qs)
    assert _rows(ds) == _rows(fresh)
    assert rmqarrow.open(ds).check(full=True).ok
    # foreign readers: delta-rs at the latest version, DuckDB over the snapshot's files
    snap = open_snapshot(ds)
    con = duckdb.connect()
    for t in TABLES:
        want = con.sql(
            "SELECT * FROM read_parquet(["
            + ", ".join(f"'{p}'" for p in table_parts(fresh, t))
            + "]) ORDER BY ALL"
        ).fetchall()
        con.register("d", DeltaTable(str(ds / t)).to_pyarrow_table())
        assert con.sql("SELECT * FROM d ORDER BY ALL").fetchall() == want, t
        files = ", ".join(f"'{p}'" for p in snap.files(t))
        assert con.sql(f"SELECT * FROM read_parquet([{files}]) ORDER BY ALL").fetchall() == want
    # the converted run is still there as of version 0
    old = read_manifest(ds, as_of=0)
    assert (
        sum(r["rows"] for r in old["parts"] if r["path"].startswith("entries/"))
        == (first["entries"])
    )
    with pytest.raises(StoreNotFoundError):
        sync_store(tmp_path / "no-store", ds)


_SYNC = """
import sys
from rmqarrow.converters.parquet.incremental import follow_store, sync_store
sync_store(sys.argv[1], sys.argv[2], hash_slot_num=int(sys.argv[3]), index_num=int(sys.argv[4]))
"""


@pytest.mark.slow  # a real kill -9 at each step: the full suite's, not the fast tier's
@pytest.mark.parametrize("crash", ["delta:table", "delta:pinned", "incremental:switch"])
def test_an_incremental_run_killed_at_every_step_converges(tmp_path: Path, crash: str) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    _export(g, ds)
    convert_to_delta(ds)
    before = _rows(ds)
    append_records(g, 1000, 150)
    args = [str(g.store), str(ds), str(g.hash_slot_num), str(g.index_num)]
    env = {**os.environ, "RMQARROW_CRASH_AT": crash}
    done = subprocess.run([sys.executable, "-c", _SYNC, *args], env=env, timeout=300)
    assert done.returncode == -signal.SIGKILL
    landed = crash == "delta:pinned"
    assert (_rows(ds) == before) != landed  # the old run whole, or the new one whole
    _sync(g, ds)
    fresh = tmp_path / "fresh"
    _export(g, fresh)
    assert _rows(ds) == _rows(fresh)
    snap = open_snapshot(ds)
    for t in TABLES:  # no orphan left visible to a plain Delta reader
        assert set(DeltaTable(str(ds / t)).file_uris()) == set(snap.files(t)), t


def test_export_and_follow_rounds_as_delta_commits(tmp_path: Path) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    commitlog = g.root / "commitlog"
    result = sync_store(
        g.store,
        ds,
        hash_slot_num=g.hash_slot_num,
        index_num=g.index_num,
        commitlog=commitlog,
    )
    assert result.full and is_delta_dataset(ds) and not (ds / MANIFEST_NAME).exists()
    manifest = read_manifest(ds)
    assert manifest["delta"]["version"] == 0
    assert set(manifest["delta"]["versions"]) == {*TABLES, "messages"}
    messages = rmqarrow.open(ds).scan("messages").read_all().num_rows
    assert messages == manifest["tables"]["messages"]["rows"] > 0
    append_records(g, 1000, 100)
    stop = threading.Event()
    rounds = []
    for r in follow_store(
        g.store,
        ds,
        interval=0.0,
        stop=stop,
        hash_slot_num=g.hash_slot_num,
        index_num=g.index_num,
    ):
        rounds.append(r)
        if len(rounds) == 2:
            stop.set()
    assert [r.changed for r in rounds] == [True, False]
    assert open_snapshot(ds).version == 1
    fresh = tmp_path / "fresh"
    export_store(g.store, fresh, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    assert _rows(ds) == _rows(fresh)
    qs = [(k, 64, 0, 2**62) for k in sorted(set(g.keys))[:30]] + [("T#k3", 400, 0, 2**62)]
    assert rmqarrow.open(ds).answers(qs) == rmqarrow.open(g.store).answers(qs)


_CONVERT = """
import sys
from rmqarrow.converters.parquet.to_delta import convert_to_delta
convert_to_delta(sys.argv[1])
"""


def test_a_killed_conversion_is_finished_before_the_next_run(tmp_path: Path) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    _export(g, ds)
    env = {**os.environ, "RMQARROW_CRASH_AT": "convert:committed"}
    done = subprocess.run([sys.executable, "-c", _CONVERT, str(ds)], env=env, timeout=300)
    assert done.returncode == -signal.SIGKILL
    assert (ds / MANIFEST_NAME).exists()  # still the manifest's dataset until it is done
    append_records(g, 1000, 150)
    with pytest.raises(DatasetError, match="convert it to Delta tables in place first"):
        _sync(g, ds)
    convert_to_delta(ds)  # finishes the killed one: its pin is not committed again
    assert is_delta_dataset(ds) and open_snapshot(ds).version == 0
    assert _sync(g, ds)
    fresh = tmp_path / "fresh"
    _export(g, fresh)
    assert _rows(ds) == _rows(fresh)
    assert read_manifest(ds)["run"] == 1
    assert open_snapshot(ds).version == 1


def test_a_run_interrupted_after_a_table_commit_leaves_every_latest_version_readable(
    tmp_path: Path,
) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    before = _rows(ds)
    append_records(g, 1000, 150)
    args = [str(g.store), str(ds), str(g.hash_slot_num), str(g.index_num)]
    # Ctrl-C after the first table's commit: the run fails, removes the parts it wrote
    env = {**os.environ, "RMQARROW_CRASH_AT": "delta:table", "RMQARROW_CRASH_SIGNAL": "int"}
    done = subprocess.run(
        [sys.executable, "-c", _SYNC, *args], env=env, timeout=300, capture_output=True
    )
    assert done.returncode != 0 and b"KeyboardInterrupt" in done.stderr
    assert _rows(ds) == before
    for t in TABLES:  # a plain Delta reader of the latest versions finds every file
        assert DeltaTable(str(ds / t)).to_pyarrow_table().num_rows == before[t], t


def test_the_store_api_exports_syncs_and_converts_delta_datasets(tmp_path: Path) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    store = rmqarrow.open(g.store)
    made = tmp_path / "made"
    store.export(made)
    assert is_delta_dataset(made)
    old = tmp_path / "old"
    store.export(old)
    assert not is_delta_dataset(legacy_layout(old))
    assert rmqarrow.open(old).convert_to_delta() is True
    assert rmqarrow.open(old).convert_to_delta() is False
    synced = tmp_path / "synced"
    assert store.sync(synced).full and is_delta_dataset(synced)
    append_records(g, 1000, 120)
    for ds in (made, old, synced):
        assert rmqarrow.open(g.store).sync(ds).changed
        assert open_snapshot(ds).version == 1
    assert _rows(made) == _rows(old) == _rows(synced)


def test_vacuum_deletes_what_no_kept_run_reads(tmp_path: Path) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    store = rmqarrow.open(g.store)
    store.export(ds)
    for run in (1, 2):
        append_records(g, 1000 * run, 120)
        assert store.sync(ds).changed
    on_disk = {p for t in TABLES for p in (ds / t).glob("*.parquet")}
    pinned = {Path(p) for t in TABLES for p in open_snapshot(ds).files(t)}
    assert on_disk > pinned  # the replaced parts are still there for older versions
    dataset = rmqarrow.open(ds)
    assert sum(map(len, dataset.vacuum().values())) == 0  # all younger than a week
    with pytest.raises(InvalidValueError, match="readers still on an older run"):
        dataset.vacuum(0)  # under an hour: only with force
    assert sum(map(len, dataset.vacuum(0, dry_run=True, force=True).values())) == len(
        on_disk - pinned
    )
    assert {p for t in TABLES for p in (ds / t).glob("*.parquet")} == on_disk
    deleted = dataset.vacuum(0, force=True)
    assert sum(map(len, deleted.values())) == len(on_disk - pinned)
    assert {p for t in TABLES for p in (ds / t).glob("*.parquet")} == pinned
    fresh = tmp_path / "fresh"
    _export(g, fresh)
    assert _rows(ds) == _rows(fresh)
    assert dataset.check(full=True).ok
    # the first run is gone: refused naming the versions that can still be read
    with pytest.raises(InvalidValueError, match=r"version 0 was vacuumed.* can be read: 2$"):
        read_manifest(ds, as_of=0)
    old = tmp_path / "old"
    _export(g, old)
    with pytest.raises(DatasetError, match="convert it first"):
        rmqarrow.open(old).vacuum()


_OVERWRITE = """
import sys
from rmqarrow.converters.parquet.export import export_store
export_store(sys.argv[1], sys.argv[2], overwrite=True, hash_slot_num=int(sys.argv[3]),
             index_num=int(sys.argv[4]))
"""


@pytest.mark.slow  # a real kill -9 at each step: the full suite's, not the fast tier's
@pytest.mark.parametrize("crash", ["delta:replaced-parts", "delta:table", "delta:pinned"])
def test_an_overwrite_killed_at_every_step_converges_and_keeps_history(
    tmp_path: Path, crash: str
) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    before = _rows(ds)
    append_records(g, 1000, 150)
    args = [str(g.store), str(ds), str(g.hash_slot_num), str(g.index_num)]
    env = {**os.environ, "RMQARROW_CRASH_AT": crash}
    done = subprocess.run([sys.executable, "-c", _OVERWRITE, *args], env=env, timeout=300)
    assert done.returncode == -signal.SIGKILL
    landed = crash == "delta:pinned"
    assert (_rows(ds) == before) != landed  # the old export whole, or the new one whole
    assert is_delta_dataset(ds)
    _sync(g, ds)  # the next run converges: it removes or restores what the kill left
    fresh = tmp_path / "fresh"
    _export(g, fresh)
    assert _rows(ds) == _rows(fresh)
    old = rmqarrow.open(ds, as_of=0)
    assert {t: old.scan(t).read_all().num_rows for t in TABLES} == before
    snap = open_snapshot(ds)
    for t in TABLES:  # no orphan left visible to a plain Delta reader
        assert set(DeltaTable(str(ds / t)).file_uris()) == set(snap.files(t)), t
