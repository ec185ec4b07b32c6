"""Exported datasets committed as Delta tables (delta-rs), read back by real engines.

Parts come from rmqarrow's own exporter (a generated store, exported whole, then kept in
step by real incremental runs); each run is committed with
:func:`rmqarrow.converters.delta.run.commit_run`.  Whatever the runs, delta-rs, DuckDB
over the snapshot's file list and pyarrow count exactly the rows of a fresh full export,
while a plain listing of the folders does not.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from generated_store import GeneratedStore, build_generated
from legacy_dataset import legacy_export, legacy_layout
from rmqarrow.converters.delta.actions import file_stats
from rmqarrow.converters.delta.commit import commit_table, table_version
from rmqarrow.converters.delta.run import (
    TableChange,
    commit_run,
    converge,
    open_snapshot,
    table_schema,
    vacuum,
)
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.manifest import read_manifest

from rmqarrow.errors import (
    CommitConflictError,
    DatasetError,
    InvalidValueError,
    StoreNotFoundError,
)
from rmqarrow.index.service import IndexService

TABLES = ("entries", "files", "slots")
MESSAGES = 600


def _append(g: GeneratedStore, first: int, n: int) -> None:
    """``n`` more records appended to the store as a broker would (the newest file grows,
    new files roll)."""
    ts = int(pa.compute.max(g.records.column("store_timestamp")).as_py())
    offsets = [10**9 + 100 * i for i in range(first, first + n)]
    batch = pa.table(
        {
            "topic": ["T"] * n,
            "keys": [f"k{i % 7}" for i in range(first, first + n)],
            "uniq_key": [f"u{i}" for i in range(first, first + n)],
            "commit_log_offset": pa.array(offsets, pa.int64()),
            "store_timestamp": pa.array([ts + i for i in range(first, first + n)], pa.int64()),
            "sys_flag": pa.array([0] * n, pa.int32()),
        }
    )
    service = IndexService(g.store, g.hash_slot_num, g.index_num)
    service.load()
    try:
        service.build_index_batch(batch)
    finally:
        service.close()


def _parts(ds: Path) -> set[str]:
    """The parts the dataset's manifest lists (dataset-relative)."""
    return {str(r["path"]) for r in read_manifest(ds)["parts"]}


def _change(ds: Path, before: set[str], after: set[str]) -> dict[str, TableChange]:
    """The commit of one run: the parts it listed anew added, those it dropped removed."""
    out = {}
    for t in TABLES:
        add = [ds / p for p in sorted(after - before) if p.startswith(f"{t}/")]
        rm = [p.split("/", 1)[1] for p in sorted(before - after) if p.startswith(f"{t}/")]
        out[t] = TableChange(add=add, remove=rm)
    return out


def _export_committed(g: GeneratedStore, ds: Path) -> None:
    """Plain Parquet parts (a dataset of the older layout) committed here by hand."""
    legacy_export(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    commit_run(ds, _change(ds, set(), _parts(ds)), app=("test-export", 1), source={"run": 0})


def _rows(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple[Any, ...]]:
    return con.sql(f"SELECT * FROM {relation} ORDER BY ALL").fetchall()


def _files_sql(files: list[str]) -> str:
    return "read_parquet([" + ", ".join(f"'{f}'" for f in files) + "])"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("delta") / "g", MESSAGES)


def test_stats_come_from_the_footer(generated: GeneratedStore, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    export_store(
        generated.store,
        ds,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    legacy_layout(ds)  # plain parts, committed by hand below
    part = sorted((ds / "entries").glob("*.parquet"))[0]
    data = pq.read_table(part)
    stats = file_stats(part)
    assert stats["numRecords"] == data.num_rows > 0
    for column in ("slot", "key_hash", "position", "file_name"):
        values = data.column(column).to_pylist()
        assert stats["minValues"][column] == min(values)
        assert stats["maxValues"][column] == max(values)
        assert stats["nullCount"][column] == 0
    commit_table(ds / "entries", table_schema("entries"), add=[part], base_version=None)
    actions = pa.table(DeltaTable(str(ds / "entries")).get_add_actions(flatten=True)).to_pylist()
    assert actions[0]["num_records"] == data.num_rows
    assert actions[0]["min.slot"] == stats["minValues"]["slot"]
    # a file whose slots are all above the predicate is skipped by its statistics
    high = stats["maxValues"]["slot"] + 1
    assert DeltaTable(str(ds / "entries")).file_uris(file_pruning_predicate=f"slot >= {high}") == []


def test_full_export_and_incremental_runs_read_as_a_fresh_export(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    g = build_generated(tmp_path / "g", MESSAGES)
    ds = tmp_path / "ds"
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    removed = 0
    for run in range(2):
        before = _parts(ds)
        _append(g, 1000 * (run + 1), 150)
        assert sync_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num).changed
        removed += len(before - _parts(ds))
        assert open_snapshot(ds).versions["files"] == run + 1
    assert removed  # the runs replaced parts, not only appended
    fresh = tmp_path / "fresh"
    export_store(g.store, fresh, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    snap = open_snapshot(ds)
    con = duckdb.connect()
    naive_wrong = 0
    for t in TABLES:
        want = _rows(con, _files_sql([str(p) for p in sorted((fresh / t).glob("*.parquet"))]))
        delta = DeltaTable(str(ds / t), version=snap.versions[t]).to_pyarrow_table()
        con.register("delta_table", delta)
        assert _rows(con, "delta_table") == want, t
        assert _rows(con, _files_sql(snap.files(t))) == want, t
        arrow = pads.dataset(snap.files(t), format="parquet").to_table()
        assert arrow.num_rows == len(want)
        assert snap.dataset(t).schema == table_schema(t)
        on_disk = [str(p) for p in (ds / t).glob("*.parquet")]
        naive_wrong += con.sql(f"SELECT count(*) FROM {_files_sql(on_disk)}").fetchall() != [
            (len(want),)
        ]
    assert naive_wrong  # the replaced parts are still on disk: only the log tells them apart


def test_rerun_with_the_same_app_transaction_commits_nothing(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    ds = tmp_path / "ds"
    _export_committed(generated, ds)
    versions = {t: table_version(ds / t) for t in TABLES}
    extra = ds / "entries" / "part-again.parquet"
    shutil.copy(sorted((ds / "entries").glob("*.parquet"))[0], extra)
    again = {"entries": TableChange(add=[extra])}
    assert commit_run(ds, again, app=("test-export", 1)) is None
    assert {t: table_version(ds / t) for t in TABLES} == versions
    assert commit_run(ds, again, app=("test-export", 2)) is not None  # the next run lands


def test_bad_commits_are_refused_before_anything_lands(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    ds = tmp_path / "ds"
    _export_committed(generated, ds)
    entries = ds / "entries"
    version = table_version(entries)
    present = sorted(p.name for p in entries.glob("*.parquet"))
    schema = table_schema("entries")
    with pytest.raises(DatasetError, match="not in version"):
        commit_table(entries, schema, remove=["part-nope.parquet"], base_version=version)
    with pytest.raises(DatasetError, match="already in version"):
        commit_table(entries, schema, add=[entries / present[0]], base_version=version)
    with pytest.raises(DatasetError, match="columns"):
        commit_table(entries, schema, add=[ds / "slots" / present[0]], base_version=version)
    assert table_version(entries) == version
    assert version is not None
    landed = commit_table(entries, schema, remove=[present[0]], base_version=version)
    assert landed == version + 1
    # planned on the version before: refused, not rebased over the commit that landed
    with pytest.raises(CommitConflictError, match="another writer"):
        commit_table(entries, schema, remove=[present[1]], base_version=version)
    assert table_version(entries) == landed


_WRITER = """
import sys
from pathlib import Path
from rmqarrow.converters.delta.run import TableChange, commit_run
from rmqarrow.errors import CommitConflictError
ds, who, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    part = ds / "entries" / f"part-{who}-{i}.parquet"
    for attempt in range(20):
        try:
            commit_run(ds, {"entries": TableChange(add=[part])}, app=(who, i + 1),
                       source={"writer": who, "i": i})
            print("landed", part.name, flush=True)
            break
        except CommitConflictError:
            continue
    else:
        print("refused", part.name, flush=True)
"""


def _copies(ds: Path, who: str, n: int) -> None:
    """``n`` real entries parts for writer ``who`` (the export's, under new names)."""
    part = sorted((ds / "entries").glob("*.parquet"))[0]
    for i in range(n):
        shutil.copy(part, ds / "entries" / f"part-{who}-{i}.parquet")


def test_two_concurrent_committers_lose_nothing(generated: GeneratedStore, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    _export_committed(generated, ds)
    n = 4
    for who in ("A", "B"):
        _copies(ds, who, n)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(ds), who, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("A", "B")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    assert [len(out.splitlines()) for out, _ in outs] == [n, n]  # each run: landed or refused
    landed = {
        ln.split()[1] for out, _ in outs for ln in out.splitlines() if ln.startswith("landed")
    }
    assert len(landed) >= n  # at least one writer's every run, whatever the interleaving
    snap = open_snapshot(ds)
    pinned = {Path(f).name for f in snap.files("entries")}
    written = {f"part-{w}-{i}.parquet" for w in "AB" for i in range(n)}
    assert pinned & written == landed  # every landed run is read, no refused one is
    converge(ds)  # a beaten run's commits undone: the latest entries is the pinned one
    latest = {Path(f).name for f in DeltaTable(str(ds / "entries")).file_uris()}
    assert latest == pinned


_LOOP = """
import shutil, sys
from pathlib import Path
from rmqarrow.converters.delta.run import TableChange, commit_run
ds, n = Path(sys.argv[1]), int(sys.argv[2])
entries = sorted((ds / "entries").glob("part-0*.parquet"))[0]
files = ds / "files" / "part-00000.parquet"
for i in range(1, n + 1):
    shutil.copy(entries, ds / "entries" / f"part-r{i}.parquet")
    shutil.copy(files, ds / "files" / f"part-r{i}.parquet")
    old = "part-00000.parquet" if i == 1 else f"part-r{i - 1}.parquet"
    commit_run(ds, {"entries": TableChange(add=[ds / "entries" / f"part-r{i}.parquet"]),
                    "files": TableChange(add=[ds / "files" / f"part-r{i}.parquet"], remove=[old])},
               app=("loop", i + 1), source={"run": i})
"""


def test_the_pin_reads_one_run_while_a_writer_commits(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    ds = tmp_path / "ds"
    _export_committed(generated, ds)
    base = len(open_snapshot(ds).files("entries"))
    n = 12
    writer = subprocess.Popen([sys.executable, "-c", _LOOP, str(ds), str(n)])
    seen = set()
    while writer.poll() is None or not seen:
        snap = open_snapshot(ds)
        run = int(snap.pin.source.get("run", 0))
        files = [Path(f).name for f in snap.files("files")]
        entries = [Path(f).name for f in snap.files("entries")]
        # each table as that one run left it: its files part, its entries parts
        assert files == [f"part-r{run}.parquet" if run else "part-00000.parquet"]
        assert len(entries) == base + run
        seen.add(run)
    assert writer.wait() == 0
    assert open_snapshot(ds).pin.source["run"] == n
    assert len(seen) >= 2  # the reader saw the writer's runs land, not only the end


def test_a_killed_run_is_undone_by_the_next(generated: GeneratedStore, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    _export_committed(generated, ds)
    snap = open_snapshot(ds)
    # a run that committed entries and died before its pin: entries is past the pin
    extra = ds / "entries" / "part-orphan.parquet"
    shutil.copy(snap.files("entries")[0], extra)
    commit_table(
        ds / "entries",
        table_schema("entries"),
        add=[extra],
        base_version=snap.versions["entries"],
    )
    assert open_snapshot(ds).files("entries") == snap.files("entries")  # readers: unseen
    assert converge(ds) == ["entries"]
    assert sorted(DeltaTable(str(ds / "entries")).file_uris()) == snap.files("entries")
    assert converge(ds) == []


def test_as_of_a_version_or_a_time_reads_that_run(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    ds = tmp_path / "ds"
    with pytest.raises(StoreNotFoundError, match="no such dataset"):
        open_snapshot(ds)
    export_store(
        generated.store,
        ds,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    legacy_layout(ds)
    with pytest.raises(DatasetError, match="not a dataset in the Delta layout"):
        open_snapshot(ds)  # today's layout: no Delta tables yet
    commit_run(ds, _change(ds, set(), _parts(ds)), app=("test-export", 1))
    first = open_snapshot(ds)
    between = datetime.now(UTC)
    time.sleep(0.05)
    shutil.copy(ds / "files" / "part-00000.parquet", ds / "files" / "part-r1.parquet")
    replace = TableChange(add=[ds / "files" / "part-r1.parquet"], remove=["part-00000.parquet"])
    commit_run(ds, {"files": replace}, app=("test-export", 2))
    assert [Path(f).name for f in open_snapshot(ds).files("files")] == ["part-r1.parquet"]
    for as_of in (first.version, between):
        old = open_snapshot(ds, as_of=as_of)
        assert old.versions == first.versions
        assert [Path(f).name for f in old.files("files")] == ["part-00000.parquet"]
    with pytest.raises(InvalidValueError, match="versions 0 to 1"):
        open_snapshot(ds, as_of=2)
    with pytest.raises(InvalidValueError, match="nothing was exported as of"):
        open_snapshot(ds, as_of=datetime(2000, 1, 1, tzinfo=UTC))


_RUN = """
import sys
from pathlib import Path
from rmqarrow.converters.delta.run import TableChange, commit_run
ds, run = Path(sys.argv[1]), int(sys.argv[2])
new = {t: ds / t / f"part-r{run}.parquet" for t in ("entries", "files", "slots")}
old = {"files": "part-00000.parquet" if run == 1 else f"part-r{run - 1}.parquet"}
changes = {t: TableChange(add=[p], remove=[old[t]] if t in old else []) for t, p in new.items()}
commit_run(ds, changes, app=("killed", run), source={"run": run})
"""


@pytest.mark.slow  # a real kill -9 at each step: the full suite's, not the fast tier's
@pytest.mark.parametrize(
    "crash", ["delta:converged", "delta:table@1", "delta:table@2", "delta:pinned"]
)
def test_a_run_killed_at_every_step_is_all_or_nothing(
    generated: GeneratedStore, tmp_path: Path, crash: str
) -> None:
    ds = tmp_path / "ds"
    _export_committed(generated, ds)
    before = open_snapshot(ds)
    for run in (1, 2):
        for t in TABLES:
            src = sorted((ds / t).glob("part-0*.parquet"))[0]
            shutil.copy(src, ds / t / f"part-r{run}.parquet")
    env = {**os.environ, "RMQARROW_CRASH_AT": crash}
    done = subprocess.run([sys.executable, "-c", _RUN, str(ds), "1"], env=env, timeout=300)
    assert done.returncode == -signal.SIGKILL
    after = open_snapshot(ds)
    landed = crash == "delta:pinned"
    assert after.pin.source.get("run", 0) == (1 if landed else 0)
    for t in TABLES:  # the old run whole, or the new one whole
        names = {Path(f).name for f in after.files(t)}
        old = {Path(f).name for f in before.files(t)}
        assert names == (
            (old - {"part-00000.parquet"} if t == "files" else old) | {"part-r1.parquet"}
            if landed
            else old
        ), t
    # the next run converges on what the pin says and lands
    run = 2 if landed else 1
    subprocess.run([sys.executable, "-c", _RUN, str(ds), str(run)], check=True, timeout=300)
    final = open_snapshot(ds)
    assert final.pin.source["run"] == run
    for t in TABLES:
        pinned = set(final.files(t))
        assert set(DeltaTable(str(ds / t)).file_uris()) == pinned, t  # no orphan left visible
        assert str(ds / t / f"part-r{run}.parquet") in pinned
        # run 1's parts are read once: its own or the pinned killed run's (files: replaced)
        assert (str(ds / t / "part-r1.parquet") in pinned) == (t != "files" or run == 1)


def test_the_messages_table_commits_with_its_list_column(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    ds = tmp_path / "ds"
    g = generated
    export_store(
        g.store,
        ds,
        hash_slot_num=g.hash_slot_num,
        index_num=g.index_num,
        commitlog=g.root / "commitlog",
    )
    legacy_layout(ds)
    parts = sorted((ds / "messages").glob("*.parquet"))
    stats = file_stats(parts[0])
    assert "keys" not in stats["minValues"]  # a list column: no bound Delta could name
    assert stats["minValues"]["physical_offset"] == 0
    changes = {**_change(ds, set(), _parts(ds)), "messages": TableChange(add=parts)}
    snap = commit_run(ds, changes, app=("test-export", 1))
    assert snap is not None and "messages" in snap.versions
    want = pq.read_table(parts[0])
    delta = DeltaTable(str(ds / "messages")).to_pyarrow_table()
    assert delta.num_rows == want.num_rows > 0
    offsets = want.column("physical_offset").to_pylist()
    assert sorted(delta.column("physical_offset").to_pylist()) == sorted(offsets)
    assert snap.dataset("messages").to_table().to_pylist() == want.to_pylist()


def test_vacuum_keeps_every_run_within_the_retention(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    ds = tmp_path / "ds"
    _export_committed(generated, ds)
    first = open_snapshot(ds)
    for t in ("entries", "files"):
        shutil.copy(first.files(t)[0], ds / t / "part-r1.parquet")
    old_entries = Path(first.files("entries")[0]).name
    changes = {
        "entries": TableChange(add=[ds / "entries/part-r1.parquet"], remove=[old_entries]),
        "files": TableChange(add=[ds / "files/part-r1.parquet"], remove=["part-00000.parquet"]),
    }
    commit_run(ds, changes, app=("test-export", 2))
    # a part a killed run wrote and never committed, long ago; one a writer is writing now
    stale, young = ds / "slots" / "part-r9-00000.parquet", ds / "slots" / "part-r10-00000.parquet"
    for p in (stale, young):
        shutil.copy(first.files("slots")[0], p)
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    kept = vacuum(ds, 1)
    assert kept == {"entries": [], "files": [], "slots": [stale.name]}
    assert not stale.exists() and young.exists()
    assert open_snapshot(ds, as_of=first.version).files("entries") == first.files("entries")
    gone = vacuum(ds, 0)  # only the last run is kept: the first's replaced parts go
    assert gone == {
        "entries": [old_entries],
        "files": ["part-00000.parquet"],
        "slots": [young.name],
    }
    latest = open_snapshot(ds)
    con = duckdb.connect()
    for t in TABLES:
        assert all(Path(f).exists() for f in latest.files(t))
        assert con.sql(f"SELECT count(*) FROM {_files_sql(latest.files(t))}").fetchall()[0][0] > 0
