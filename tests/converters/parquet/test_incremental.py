"""Incremental export (``export --incremental``, ``--follow``): a dataset kept in step
with a store a writer process appends to, at the cost of what changed.

Whatever the runs, kills and signals, the dataset ends equal to a fresh full export of
the final store (tables compared sorted, key queries through DuckDB against the native
lookup), ``verify`` passes, and ``import`` gives every file byte-identical.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.duckdb.sql import answer_queries as duckdb_answers
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.importer import import_dataset
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.manifest import read_manifest
from rmqarrow.converters.parquet.parts import table_parts
from storage.storage_helpers import cli, hidden, one_line_error

from rmqarrow.commitlog import CommitLogWriter, Message
from rmqarrow.errors import StoreChangedError
from rmqarrow.format.layout import HEADER_DTYPE
from rmqarrow.format.queries import Query
from rmqarrow.index.service import IndexService, answer_queries

SLOTS, INDEX = 16, 64  # 63 entries a file: a writer rolls to a new file every 31 records
GEO = ["--hash-slot-num", str(SLOTS), "--index-num", str(INDEX)]
KEYS = 7
QUERIES = [Query(f"T#k{k}", 64) for k in range(KEYS)] + [
    Query(f"T#u{i}", 4) for i in range(0, 3000, 97)
]

WRITER = f"""
import sys, time
import pyarrow as pa
from rmqarrow.index.service import IndexService
def batch(a, b):
    return pa.table({{
        "topic": ["T"] * (b - a),
        "keys": [f"k{{i % {KEYS}}}" for i in range(a, b)],
        "uniq_key": [f"u{{i}}" for i in range(a, b)],
        "commit_log_offset": pa.array([1000 + 100 * i for i in range(a, b)], pa.int64()),
        "store_timestamp": pa.array([1_700_000_000_000 + i for i in range(a, b)], pa.int64()),
        "sys_flag": pa.array([0] * (b - a), pa.int32()),
    }})
s = IndexService(sys.argv[1], {SLOTS}, {INDEX}, 1 << 20)
s.load()
first, stop, step, pause = (int(x) for x in sys.argv[2:6])
for a in range(first, stop, step):
    s.build_index_batch(batch(a, min(a + step, stop)))
    time.sleep(pause / 1000)
s.close()
"""


def _append(store: Path, first: int, stop: int, step: int = 10) -> None:
    """Records ``first .. stop - 1`` appended as the writer process does (rolling files),
    in this process: the writer is done before anything reads the store, so another
    process would add nothing but its start-up."""
    s = IndexService(store, SLOTS, INDEX, 1 << 20)
    s.load()
    try:
        for a in range(first, stop, step):
            b = min(a + step, stop)
            s.build_index_batch(
                pa.table(
                    {
                        "topic": ["T"] * (b - a),
                        "keys": [f"k{i % KEYS}" for i in range(a, b)],
                        "uniq_key": [f"u{i}" for i in range(a, b)],
                        "commit_log_offset": pa.array(
                            [1000 + 100 * i for i in range(a, b)], pa.int64()
                        ),
                        "store_timestamp": pa.array(
                            [1_700_000_000_000 + i for i in range(a, b)], pa.int64()
                        ),
                        "sys_flag": pa.array([0] * (b - a), pa.int32()),
                    }
                )
            )
    finally:
        s.close()


def _writer(
    store: Path, first: int, stop: int, step: int, pause_ms: int
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), str(first), str(stop), str(step), str(pause_ms)]
    )


def _tables(ds: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of a dataset, read through the one part listing, sorted."""
    out = {}
    con = duckdb.connect()
    for t in ("files", "slots", "entries"):
        parts = ", ".join(f"'{p}'" for p in table_parts(ds, t))
        out[t] = con.sql(f"SELECT * FROM read_parquet([{parts}]) ORDER BY ALL").fetchall()
    return out


def _same_as_full(store: Path, ds: Path, tmp: Path) -> None:
    """``ds`` answers as a fresh full export of ``store`` does, verify passes, and it
    imports to the store's bytes."""
    full = tmp / f"full-{ds.name}"
    shutil.rmtree(full, ignore_errors=True)
    export_store(store, full, hash_slot_num=SLOTS, index_num=INDEX)
    assert _tables(ds) == _tables(full)
    native = answer_queries(store, QUERIES, hash_slot_num=SLOTS, index_num=INDEX)
    assert duckdb_answers(store, QUERIES, dataset=ds) == native
    assert any(native)
    done = cli("verify", store, "--dataset", ds, *GEO)
    assert done.returncode == 0, done.stdout + done.stderr
    back = tmp / f"back-{ds.name}"
    shutil.rmtree(back, ignore_errors=True)
    import_dataset(ds, back)
    assert {p.name: p.read_bytes() for p in back.iterdir()} == {
        p.name: p.read_bytes() for p in store.iterdir()
    }
    listed = {r["path"] for r in read_manifest(ds)["parts"]}
    on_disk = {p.relative_to(ds).as_posix() for t in _TABLES for p in (ds / t).glob("*.parquet")}
    # parts the runs replaced stay until a vacuum; no part a killed run left behind
    assert listed <= on_disk <= _ever_committed(ds)


_TABLES = ("files", "slots", "entries", "messages")


def _ever_committed(ds: Path) -> set[str]:
    """The parts some version of the dataset's tables added (their Delta logs)."""
    added = set()
    for log in ds.glob("*/_delta_log/*.json"):
        for line in log.read_text().splitlines():
            action = json.loads(line).get("add")
            if action:
                added.add(f"{log.parent.parent.name}/{action['path']}")
    return added


def _written(ds: Path) -> dict[str, bytes]:
    """The dataset's parts and logs by path: what a run that writes nothing leaves."""
    return {
        p.relative_to(ds).as_posix(): p.read_bytes()
        for p in ds.rglob("*")
        if p.suffix in (".parquet", ".json")
    }


@pytest.mark.slow
def test_live_writer_incremental_runs_and_follow(tmp_path: Path) -> None:
    store, inc, fol = tmp_path / "store", tmp_path / "inc", tmp_path / "fol"
    _append(store, 0, 40)
    first = cli("export", store, inc, "--incremental", *GEO)
    assert first.returncode == 0  # whole, first
    follow = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "export",
            store,
            fol,
            "--follow",
            "--interval",
            "0.3",
            *GEO,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    writer = _writer(store, 40, 3000, 10, 8)  # ~100 files over a few seconds
    runs = 0
    seen = []
    while writer.poll() is None or runs < 2:
        done = cli("export", store, inc, "--incremental", *GEO, "--json")
        assert done.returncode == 0, done.stderr
        runs += 1
        # between runs a reader gets a whole dataset: every file's answers complete
        seen.append(duckdb_answers(store, QUERIES[:KEYS], dataset=inc))
    assert writer.wait() == 0
    assert cli("export", store, inc, "--incremental", *GEO).returncode == 0
    _same_as_full(store, inc, tmp_path)
    time.sleep(2.0)  # the follower's next rounds see the final store
    follow.send_signal(signal.SIGTERM)
    out, err = follow.communicate(timeout=60)
    assert follow.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) >= 2 and all(ln.startswith("run ") for ln in lines), out
    _same_as_full(store, fol, tmp_path)
    for answers in seen:  # each a newest-first prefix of some moment's answer
        for key, got in enumerate(answers):
            if got:
                newest = (got[0] - 1000) // 100
                want = [1000 + 100 * i for i in range(newest, -1, -1) if i % KEYS == key]
                assert got == want[:64]


def test_nothing_changed_writes_nothing(tmp_path: Path) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 100)
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    before = _written(ds)
    result = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    assert not result.changed and result.unchanged == len(list(store.iterdir()))
    assert _written(ds) == before


STEPS = [
    "incremental:part@1",
    "incremental:part@4",
    "incremental:switch",
    "delta:table@2",
    "delta:pinned",
    "incremental:switched",
    "incremental:cleanup@2",
]


@pytest.mark.slow
@pytest.mark.parametrize("crash", STEPS)
def test_killed_at_every_step_converges(tmp_path: Path, crash: str) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 100)  # the newest file half full
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    _append(store, 100, 150)
    sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    old = duckdb_answers(store, QUERIES, dataset=ds)
    _append(store, 150, 250)  # it grows, new files follow
    new = answer_queries(store, QUERIES, hash_slot_num=SLOTS, index_num=INDEX)
    if crash.startswith("incremental:cleanup"):  # a killed run's parts to clean up first
        killed = cli("export", store, ds, "--incremental", *GEO, crash="incremental:part@4")
        assert killed.returncode == -9
    assert cli("export", store, ds, "--incremental", *GEO, crash=crash).returncode == -9
    # a reader meanwhile sees the old dataset or the new one, never a mix
    assert duckdb_answers(store, QUERIES, dataset=ds) in (old, new)
    done = cli("export", store, ds, "--incremental", *GEO)
    assert done.returncode == 0, done.stderr
    assert hidden(tmp_path) == []
    _same_as_full(store, ds, tmp_path)


@pytest.mark.slow
def test_store_that_went_backwards_is_refused_or_reexported(tmp_path: Path) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 100)
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    newest = sorted(store.iterdir())[-1]
    # the newest file replaced by a shorter one: what a restored backup does
    shorter = tmp_path / "shorter"
    _append(shorter, 0, 95)
    os.replace(sorted(shorter.iterdir())[-1], newest)
    before = _written(ds)
    done = cli("export", store, ds, "--incremental", *GEO)
    assert done.returncode != 0
    line = one_line_error(done)
    assert newest.name in line and "backwards" in line
    assert _written(ds) == before
    with pytest.raises(StoreChangedError):
        sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    done = cli("export", store, ds, "--incremental", "--reexport-changed", *GEO)
    assert done.returncode == 0, done.stderr
    _same_as_full(store, ds, tmp_path)
    # a file shorter than the dataset's copy (its header's count set back)
    header = np.memmap(newest, dtype=HEADER_DTYPE, mode="r+", shape=(1,))
    header["index_count"][0] -= 5
    header.flush()
    del header
    with pytest.raises(StoreChangedError, match=f"{newest.name}.*entries.*backwards"):
        sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)


@pytest.mark.slow
def test_deleted_files_kept_or_pruned(tmp_path: Path) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 200)
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    files = sorted(store.iterdir())
    saved = tmp_path / "saved"
    saved.mkdir()
    for p in files[:2]:  # the broker expires the two oldest files
        shutil.move(p, saved / p.name)
    _append(store, 200, 260)
    result = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    assert result.deleted == [p.name for p in files[:2]] and result.changed
    marked = {
        f["file_name"] for f in read_manifest(ds)["source"]["files"] if f.get("deleted_in_store")
    }
    assert marked == {p.name for p in files[:2]}
    # kept: the dataset is the full export of the store with the deleted files put back
    both = tmp_path / "both"
    shutil.copytree(store, both)
    for p in saved.iterdir():
        shutil.copy(p, both / p.name)
    full = tmp_path / "full-both"
    export_store(both, full, hash_slot_num=SLOTS, index_num=INDEX)
    assert _tables(ds) == _tables(full)
    done = cli("export", store, ds, "--incremental", "--prune-deleted", *GEO)
    assert done.returncode == 0, done.stderr
    _same_as_full(store, ds, tmp_path)


@pytest.mark.slow
def test_file_of_a_shared_part_exported_again(tmp_path: Path) -> None:
    """Small files share parts; one of them replaced (and exported again) or deleted
    (and pruned) takes its rows out of the shared part, the others' rows stay."""
    store, ds, other = tmp_path / "store", tmp_path / "ds", tmp_path / "other"
    _append(store, 0, 200)
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    files = sorted(store.iterdir())
    infos = {f["file_name"]: f for f in read_manifest(ds)["source"]["files"]}
    shared = set(infos[files[1].name]["parts"]) & set(infos[files[2].name]["parts"])
    assert len(shared) == 2  # the slots and the entries part of both
    _append(other, 3, 203)  # the same shape, other offsets: a replaced file
    os.replace(sorted(other.iterdir())[1], files[1])
    files[3].unlink()
    result = sync_store(
        store, ds, hash_slot_num=SLOTS, index_num=INDEX, reexport_changed=True, prune_deleted=True
    )
    assert result.reexported == [files[1].name] and result.pruned == [files[3].name]
    _same_as_full(store, ds, tmp_path)
    infos = {f["file_name"]: f for f in read_manifest(ds)["source"]["files"]}
    assert not shared & set(infos[files[2].name]["parts"])  # its rows moved to a new part


@pytest.mark.slow
def test_every_file_of_a_shared_part_pruned(tmp_path: Path) -> None:
    """All the files of a shared part deleted and pruned: the part goes, none is written
    in its place."""
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 80)  # two full files, exported together, and the newest
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    files = sorted(store.iterdir())
    assert len(files) == 3
    shared = "entries/part-00000.parquet"
    assert shared in {r["path"] for r in read_manifest(ds)["parts"]}
    for p in files[:2]:
        p.unlink()
    result = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, prune_deleted=True)
    assert result.pruned == [p.name for p in files[:2]]
    parts = [r["path"] for r in read_manifest(ds)["parts"]]
    assert shared not in parts and not any("shared" in p for p in parts)
    _same_as_full(store, ds, tmp_path)


@pytest.mark.slow  # many rounds (18 s): the full suite's, not the fast tier's
def test_a_followed_file_keeps_few_parts(tmp_path: Path) -> None:
    """A file that grows a little every round keeps a logarithmic number of parts (its
    newest parts merged), not one a round, and the dataset stays the store's."""
    store, ds = tmp_path / "store", tmp_path / "ds"
    s = IndexService(store, SLOTS, 4096, 1 << 20)  # one file that does not fill up
    s.load()
    try:
        rounds = 64
        for r in range(rounds):
            a = 5 * r
            s.build_index_batch(
                pa.table(
                    {
                        "topic": ["T"] * 5,
                        "keys": [f"k{i % KEYS}" for i in range(a, a + 5)],
                        "uniq_key": [f"u{i}" for i in range(a, a + 5)],
                        "commit_log_offset": pa.array([1000 + 100 * i for i in range(a, a + 5)]),
                        "store_timestamp": pa.array([START + i for i in range(a, a + 5)]),
                        "sys_flag": pa.array([0] * 5, pa.int32()),
                    }
                )
            )
            s.flush()
            sync_store(store, ds, hash_slot_num=SLOTS, index_num=4096)
            parts = [r for r in read_manifest(ds)["parts"] if r["path"].startswith("entries/")]
            assert len(parts) <= 2 + (r + 1).bit_length(), [p["rows"] for p in parts]
    finally:
        s.close()
    rows = sorted((int(p["rows"]) for p in parts), reverse=True)
    assert sum(rows) == 2 * 5 * rounds
    back = tmp_path / "back"
    import_dataset(ds, back)
    assert [p.read_bytes() for p in back.iterdir()] == [p.read_bytes() for p in store.iterdir()]
    native = answer_queries(store, QUERIES, hash_slot_num=SLOTS, index_num=4096)
    assert duckdb_answers(store, QUERIES, dataset=ds) == native and any(native)


START = 1_709_251_200_000


def _commitlog(path: Path, n: int) -> Path:
    with CommitLogWriter(path, mapped_file_size=16 * 1024) as log:
        for i in range(n):
            log.append(
                Message(
                    topic="T",
                    body=b"x" * 40,
                    keys=[f"k{i}"],
                    uniq_key=f"U{i:08d}",
                    born_timestamp=START + i,
                    store_timestamp=START + 10 * i,
                )
            )
    return path


def _messages(ds: Path) -> pa.Table:
    parts = [p for p in table_parts(ds, "messages")]
    return pa.concat_tables([pq.read_table(p) for p in parts]).sort_by("physical_offset")


@pytest.mark.slow
def test_commitlog_messages_appended_from_the_last_offset(tmp_path: Path) -> None:
    """The log grows inside its newest file, then by new files, then loses its oldest:
    each run appends only what is new, and pruning drops the deleted file's messages."""
    whole = _commitlog(tmp_path / "whole", 1200)
    files = sorted(whole.iterdir())
    assert len(files) >= 4
    live = tmp_path / "commitlog"
    live.mkdir()
    shutil.copy(files[0], live / files[0].name)
    half = files[1].read_bytes()
    offsets = pq.read_table(_full_messages(whole, tmp_path), columns=["physical_offset"])
    start1 = int(files[1].name)
    cut = sorted(o - start1 for o in offsets["physical_offset"].to_pylist() if o > start1)[10]
    (live / files[1].name).write_bytes(half[:cut] + bytes(len(half) - cut))
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 50)
    first = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    assert first.full and first.messages > 0
    shutil.copy(files[1], live / files[1].name)  # the newest file grows
    second = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    for p in files[2:]:
        shutil.copy(p, live / p.name)
    third = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    assert second.messages > 0 and third.messages > 0
    want = pq.read_table(_full_messages(whole, tmp_path)).sort_by("physical_offset")
    assert _messages(ds).equals(want)
    assert read_manifest(ds)["tables"]["messages"]["rows"] == want.num_rows
    (live / files[0].name).unlink()  # the broker expires the oldest CommitLog file
    kept = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    assert not kept.changed and _messages(ds).equals(want)
    pruned = sync_store(
        store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live, prune_deleted=True
    )
    assert pruned.changed
    rest = want.filter(pa.compute.greater_equal(want["physical_offset"], int(files[1].name)))
    assert _messages(ds).equals(rest)


def _full_messages(log: Path, tmp: Path) -> Path:
    from rmqarrow.converters.arrow.messages import write_messages_parquet

    out = tmp / f"messages-{log.name}.parquet"
    if not out.exists():
        write_messages_parquet(log, out)
    return out


def _follow(
    store: Path, ds: Path, crash: str | None = None, sig: str = "kill"
) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if crash is not None:
        env.update(RMQARROW_CRASH_AT=crash, RMQARROW_CRASH_SIGNAL=sig)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "export",
            str(store),
            str(ds),
            "--follow",
            "--interval",
            "0.2",
            *GEO,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow
def test_follow_stops_between_rounds_on_sigterm_and_sigint(tmp_path: Path) -> None:
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 100)
    follow = _follow(store, ds)
    deadline = time.monotonic() + 60
    while not is_delta_dataset(ds) and time.monotonic() < deadline:
        time.sleep(0.05)
    _append(store, 100, 160)
    time.sleep(1.5)
    follow.send_signal(signal.SIGTERM)  # most likely between rounds
    out, err = follow.communicate(timeout=60)
    assert follow.returncode == 0, err
    assert len(out.splitlines()) >= 2, out
    _same_as_full(store, ds, tmp_path)
    # the signal in the middle of a round (sent by the process to itself as a part is
    # written): the round completes, the loop ends, exit 0
    for sig, first in (("term", 160), ("int", 200)):
        _append(store, first, first + 40)
        follow = _follow(store, ds, "incremental:part@2", sig)
        out, err = follow.communicate(timeout=60)
        assert follow.returncode == 0, err
        assert "Traceback" not in err and len(out.splitlines()) == 1, out
        _same_as_full(store, ds, tmp_path)


def test_a_run_adding_many_small_files_keeps_every_row(tmp_path: Path) -> None:
    """An incremental run that adds more small files than a shared part gathers in one
    batch: a files row for each, equal to a full export."""
    from rmqarrow.format.layout import Geometry
    from rmqarrow.testing.stores import write_random_store

    store, ds, full = tmp_path / "store", tmp_path / "ds", tmp_path / "full"
    paths = write_random_store(store, Geometry(2, 6), [5] * 400)
    hold = tmp_path / "hold"
    hold.mkdir()
    for p in paths[1:]:
        p.rename(hold / p.name)
    sync_store(store, ds, hash_slot_num=2, index_num=6)
    for p in paths[1:]:
        (hold / p.name).rename(p)
    result = sync_store(store, ds, hash_slot_num=2, index_num=6)
    assert len(result.added) == 399
    export_store(store, full, hash_slot_num=2, index_num=6)
    assert _tables(ds) == _tables(full)
    manifest = read_manifest(ds)
    assert manifest["tables"]["files"]["rows"] == 400
    back = tmp_path / "back"
    import_dataset(ds, back)
    assert len(list(back.iterdir())) == 400


@pytest.mark.slow
def test_readers_never_refuse_a_dataset_a_follower_is_updating(tmp_path: Path) -> None:
    """Readers opening the dataset while a follower process switches its manifest every
    few milliseconds: each sees one manifest and its parts, never an "extra" part of
    the next run or a refusal; the parts are absolute, so a view made of them still
    reads after the process changes directory."""
    from rmqarrow.converters.parquet.manifest import check_parts

    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 40)
    assert cli("export", store, ds, *GEO).returncode == 0
    writer = _writer(store, 40, 4000, 5, 2)
    follow = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "export",
            store,
            ds,
            "--follow",
            "--interval",
            "0.01",
            *GEO,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    opens = 0
    try:
        while writer.poll() is None:
            check_parts(ds)  # raised "not in the manifest" when a run switched meanwhile
            opens += 1
    finally:
        writer.wait()
        follow.send_signal(signal.SIGTERM)
        _, err = follow.communicate(timeout=120)
    assert follow.returncode == 0, err
    assert opens > 20
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        parts = table_parts(Path("ds"), "entries")
        assert all(p.is_absolute() for p in parts)
        con = duckdb.connect()
        con.read_parquet([str(p) for p in parts]).create_view("entries")
        os.chdir(store)
        assert con.sql("SELECT count(*) FROM entries").fetchall()[0][0] > 0
    finally:
        os.chdir(cwd)


@pytest.mark.slow
def test_a_follower_keeps_about_as_many_parts_as_a_fresh_export(tmp_path: Path) -> None:
    """Rounds that each add new files and grow the newest: small parts are merged as
    they pile up, so each table keeps about a fresh export's parts, and the dataset
    still equals a fresh export."""
    from rmqarrow.converters.parquet.incremental import COMPACT_PARTS

    store, ds, fresh = tmp_path / "store", tmp_path / "ds", tmp_path / "fresh"
    _append(store, 0, 40)
    sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    for r in range(12):
        _append(store, 40 + 70 * r, 40 + 70 * (r + 1))  # 140 entries: 2-3 new files
        sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    export_store(store, fresh, hash_slot_num=SLOTS, index_num=INDEX)
    for t in ("files", "slots", "entries"):
        assert len(table_parts(ds, t)) <= len(table_parts(fresh, t)) + COMPACT_PARTS, t
    _same_as_full(store, ds, tmp_path)


@pytest.mark.slow
def test_a_follower_killed_mid_round_beside_a_writer_converges(tmp_path: Path) -> None:
    """A writer process appends and rolls files while a follower runs; the follower is
    killed (SIGKILL) in the middle of its work and started again: the dataset ends equal
    to a full export of the final store."""
    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 40)
    writer = _writer(store, 40, 2500, 10, 6)
    follow = _follow(store, ds)
    time.sleep(1.5)
    follow.kill()  # wherever it is: a round's parts written, the switch not yet, ...
    follow.communicate(timeout=60)
    follow = _follow(store, ds)
    assert writer.wait() == 0
    time.sleep(2.0)  # the restarted follower's next rounds see the final store
    follow.send_signal(signal.SIGTERM)
    _, err = follow.communicate(timeout=120)
    assert follow.returncode == 0, err
    _same_as_full(store, ds, tmp_path)


def test_a_record_still_being_copied_is_exported_once_whole(tmp_path: Path) -> None:
    """A broker copies a record into its preallocated file front to back: the frame (the
    lengths) is there before the last bytes.  Neither a full export nor an incremental run
    exports such a record; the run after it is whole does, and the dataset then equals a
    full export."""
    from rmqarrow.commitlog import iter_records

    whole = _commitlog(tmp_path / "whole", 400)
    files = sorted(whole.iterdir())
    newest = files[-1]
    data = newest.read_bytes()
    start = int(newest.name)
    offsets = pq.read_table(_full_messages(whole, tmp_path), columns=["physical_offset"])
    at = sorted(o - start for o in offsets["physical_offset"].to_pylist() if o >= start)
    live = tmp_path / "commitlog"
    live.mkdir()
    for p in files[:-1]:
        shutil.copy(p, live / p.name)

    def upto(n: int, copying: bool = False) -> None:
        """The newest file holds records 0..n-1 whole; ``copying``: and record n all but
        its last bytes (the end of its properties, still zero)."""
        end = at[n + 1] - 5 if copying else at[n]
        (live / newest.name).write_bytes(data[:end] + bytes(len(data) - end))

    store, ds = tmp_path / "store", tmp_path / "ds"
    _append(store, 0, 50)
    upto(10, copying=True)
    assert [r.physical_offset for r in iter_records(live)][-1] == start + at[9]
    first = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    assert first.full and int(pa.compute.max(_messages(ds)["physical_offset"]).as_py()) == (
        start + at[9]
    )
    upto(20, copying=True)
    sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    got = _messages(ds)["physical_offset"].to_pylist()
    assert got[-1] == start + at[19] and len(got) == len(set(got))
    assert read_manifest(ds)["tables"]["messages"]["next_offset"] == start + at[20]
    upto(21)  # the record is whole now
    added = sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    assert added.messages == 1
    upto(len(at) - 1)
    sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    full = tmp_path / "full"
    export_store(store, full, hash_slot_num=SLOTS, index_num=INDEX, commitlog=live)
    want = pq.read_table(full / "messages" / "part-00000.parquet").sort_by("physical_offset")
    assert _messages(ds).equals(want) and want.num_rows == len(offsets) - 1
