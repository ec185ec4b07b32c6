"""``rmqarrow sql DATASET --save FILE``: a DuckDB database file that answers as rmqarrow
does, read by a DuckDB process that never imports rmqarrow (the file must carry every
view, table and macro: nothing registered from Python survives into it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute
import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore, build_generated
from legacy_dataset import legacy_layout
from rmqarrow.converters.duckdb.dbfile import save_database
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import sync_store

import rmqarrow
from rmqarrow.errors import OutputExistsError
from rmqarrow.index.service import IndexService

#: Keys no ASCII-only hash would get right: astral plane (surrogate pairs), combining
#: marks, CJK, the last code point, quotes and NUL.
HOSTILE = ["😀", "中文キー", "e\u0301", "\U0010ffff", "\uffff\ue000", "it's", "a\x00b", "x" * 300]

#: What the foreign process runs: only duckdb, on the file alone.  It reads the keys
#: from stdin and prints the answers, the hashes and the view counts as JSON.
_FOREIGN = r"""
import json, sys
import duckdb
job = json.load(sys.stdin)
con = duckdb.connect(job["file"], read_only=True)
out = {"counts": {}, "answers": [], "hashes": [], "bulk": []}
for view in job["views"]:
    out["counts"][view] = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
for key, max_num, begin, end in job["queries"]:
    rows = con.execute(
        "SELECT phy_offset FROM index_lookup(?, ?, ?, ?) ORDER BY ordinal",
        [key, max_num, begin, end],
    ).fetchall()
    out["answers"].append([r[0] for r in rows])
for key in job["hash_keys"]:
    out["hashes"].append(con.execute("SELECT index_key_hash(?)", [key]).fetchone()[0])
con.execute("CREATE TEMP TABLE q (query_id BIGINT, key_hash INTEGER, max_num BIGINT, "
            "begin_ms BIGINT, end_ms BIGINT)")
for i, (key, max_num, begin, end) in enumerate(job["queries"]):
    con.execute("INSERT INTO q SELECT ?, index_key_hash(?), ?, ?, ?", [i, key, max_num, begin, end])
by_query = [[] for _ in job["queries"]]
for qid, off in con.execute(
    "SELECT query_id, phy_offset FROM index_lookups('q') ORDER BY query_id, ordinal"
).fetchall():
    by_query[qid].append(off)
out["bulk"] = by_query
out["imported_rmqarrow"] = any(m.startswith("rmqarrow") for m in sys.modules)
print(json.dumps(out))
"""


def _foreign(file: Path, views: list[str], queries: list[Any], hash_keys: list[str]) -> Any:
    job = {"file": str(file), "views": views, "queries": queries, "hash_keys": hash_keys}
    done = subprocess.run(
        [sys.executable, "-c", _FOREIGN],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert not out["imported_rmqarrow"]
    return out


def _append(g: GeneratedStore, first: int, keys: list[str]) -> None:
    """Records with ``keys`` appended to the store as a broker would index them."""
    ts = int(pa.compute.max(g.records.column("store_timestamp")).as_py())
    n = len(keys)
    batch = pa.table(
        {
            "topic": ["T"] * n,
            "keys": keys,
            "uniq_key": [f"u{i}" for i in range(first, first + n)],
            "commit_log_offset": pa.array([10**9 + 100 * i for i in range(first, first + n)]),
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


def _queries(g: GeneratedStore) -> list[Any]:
    keys = sorted(set(g.keys))[:40] + [f"T#{k}" for k in HOSTILE] + ["T#", "T#missing"]
    qs: list[Any] = [[k, 64, 0, 2**62] for k in keys]
    ts = sorted(g.records.column("store_timestamp").to_pylist())
    mid = ts[len(ts) // 2]
    qs += [[k, 3, mid, mid + 10_000] for k in keys[:10]] + [["T#k3", 0, 0, 2**62]]
    return qs


def _sql_count(capsys: pytest.CaptureFixture[str], ds: Path, view: str) -> int:
    status, out, _ = run(capsys, "sql", str(ds), f"SELECT count(*) AS n FROM {view}", "--json")
    assert status == 0
    return int(json.loads(out)["rows"][0]["n"])


@pytest.mark.parametrize("delta", [False, True], ids=["manifest", "delta"])
def test_a_saved_file_answers_as_rmqarrow_in_a_process_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], delta: bool
) -> None:
    """Over Delta tables, and over a dataset of the older layout (still read)."""
    g = build_generated(tmp_path / "g", 800)
    _append(g, 5000, [" ".join(HOSTILE)] * 3 + ["k3"] * 5)
    ds = tmp_path / "ds"
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    if not delta:
        legacy_layout(ds)
    db = tmp_path / "index.duckdb"
    status, out, _ = run(capsys, "sql", str(ds), "--save", str(db))
    assert status == 0
    assert f"refresh it with: rmqarrow sql {ds} --save {db}" in out
    views = ["files", "slots", "entries"]
    qs = _queries(g)
    native = rmqarrow.open(g.store).answers([tuple(q) for q in qs])
    hostile = [a for q, a in zip(qs, native, strict=True) if q[0][2:] in HOSTILE and q[1] == 64]
    assert len(hostile) == len(HOSTILE) and all(len(a) == 3 for a in hostile)  # found
    seen = _foreign(db, views, qs, [*HOSTILE, "", "T#"])
    assert seen["answers"] == native == rmqarrow.open(ds).answers([tuple(q) for q in qs])
    assert seen["bulk"] == native
    assert seen["hashes"] == [rmqarrow.index_key_hash(k) for k in [*HOSTILE, "", "T#"]]
    assert seen["counts"] == {v: _sql_count(capsys, ds, v) for v in views}

    # a run of the dataset, then the same command again: the new entries are seen
    _append(g, 6000, ["k3"] * 40 + ["fresh"] * 7)
    if not delta:  # an incremental run takes Delta tables: the older layout converted first
        rmqarrow.open(ds).convert_to_delta()
    assert sync_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num).changed
    status, out, _ = run(capsys, "sql", str(ds), "--save", str(db))
    assert status == 0 and out.startswith(f"replaced {db}")
    qs += [["T#fresh", 64, 0, 2**62], ["T#k3", 400, 0, 2**62]]
    native = rmqarrow.open(g.store).answers([tuple(q) for q in qs])
    assert len(native[-2]) == 7
    seen = _foreign(db, views, qs, [])
    assert seen["answers"] == native == seen["bulk"]
    assert seen["counts"] == {v: _sql_count(capsys, ds, v) for v in views}
    assert not list(tmp_path.glob(".index.duckdb.*"))  # nothing staged left behind


def test_a_saved_file_carries_the_messages_view(tmp_path: Path) -> None:
    from rmqarrow.demo.run import write_demo_commitlog

    g = build_generated(tmp_path / "g", 300)
    commitlog, _ = write_demo_commitlog(tmp_path / "log", 300, 7)
    ds = tmp_path / "ds"
    export_store(
        g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num, commitlog=commitlog
    )
    saved = save_database(ds, tmp_path / "m.duckdb")
    assert saved.views == ("files", "slots", "entries", "messages")
    con = duckdb.connect(str(saved.path), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM messages").fetchone()
    finally:
        con.close()
    assert n is not None and n[0] == rmqarrow.open(ds).scan("messages").read_all().num_rows > 0


def test_save_never_replaces_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = build_generated(tmp_path / "g", 200)
    ds = tmp_path / "ds"
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    mine = tmp_path / "mine.duckdb"
    con = duckdb.connect(str(mine))
    con.execute("CREATE TABLE precious AS SELECT 42 AS answer")
    con.close()
    before = mine.read_bytes()
    status, _, err = run(capsys, "sql", str(ds), "--save", str(mine))
    assert status == 1
    one_error(err, str(mine), "not a database file rmqarrow wrote", "--overwrite")
    assert mine.read_bytes() == before
    text = tmp_path / "notes.txt"
    text.write_text("keep me\n")
    status, _, err = run(capsys, "sql", str(ds), "--save", str(text))
    assert status == 1 and text.read_text() == "keep me\n"
    with pytest.raises(OutputExistsError):
        save_database(ds, ds / "files")
    status, _, err = run(capsys, "sql", str(g.store), "--save", str(tmp_path / "s.duckdb"))
    assert status == 2
    one_error(err, "not a dataset", "rmqarrow export")
    status, _, err = run(capsys, "sql", str(ds), "SELECT 1", "--save", str(tmp_path / "q.db"))
    assert status == 2 and not (tmp_path / "q.db").exists()
    status, out, _ = run(capsys, "sql", str(ds), "--save", str(mine), "--overwrite")
    assert status == 0 and out.startswith(f"replaced {mine}")
    con = duckdb.connect(str(mine), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
    finally:
        con.close()
    assert "precious" not in tables and "entries" in tables


def test_incremental_export_keeps_the_file_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = build_generated(tmp_path / "g", 400)
    ds = tmp_path / "ds"
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    db = tmp_path / "live.duckdb"
    geometry = ["--hash-slot-num", str(g.hash_slot_num), "--index-num", str(g.index_num)]
    sync = ["export", str(g.store), str(ds), "--incremental", *geometry, "--duckdb-file", str(db)]
    status, _, err = run(capsys, *sync)  # nothing new, but the file is missing: written
    assert status == 0 and "refreshed the DuckDB file" in err and db.exists()
    _append(g, 7000, ["fresh"] * 9)
    status, _, _ = run(capsys, *sync)
    assert status == 0
    qs = [["T#fresh", 64, 0, 2**62], ["T#k3", 400, 0, 2**62]]
    seen = _foreign(db, ["entries"], qs, [])
    assert seen["answers"] == rmqarrow.open(g.store).answers([tuple(q) for q in qs])
    assert len(seen["answers"][0]) == 9
    assert seen["counts"]["entries"] == _sql_count(capsys, ds, "entries")
    # a file rmqarrow did not write is refused before the run: the dataset is not touched
    foreign = tmp_path / "theirs.duckdb"
    foreign.write_text("not a database\n")
    _append(g, 8000, ["late"] * 3)
    before = rmqarrow.open(ds).scan("entries").read_all().num_rows
    sync[-1] = str(foreign)
    status, _, err = run(capsys, *sync)
    assert status == 1
    one_error(err, str(foreign), "not a database file rmqarrow wrote")
    assert rmqarrow.open(ds).scan("entries").read_all().num_rows == before
    assert foreign.read_text() == "not a database\n"


def test_follow_rounds_refresh_the_file(tmp_path: Path) -> None:
    import threading

    g = build_generated(tmp_path / "g", 300)
    ds, db = tmp_path / "ds", tmp_path / "f.duckdb"
    stop = threading.Event()
    store = rmqarrow.open(g.store, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    with store:
        for i, result in enumerate(store.follow(ds, interval=0.05, stop=stop, duckdb_file=db)):
            if i == 0:
                assert db.exists()  # the first round's export: written
                _append(g, 9000, ["followed"] * 4)
            elif result.changed:
                stop.set()
            assert i < 200, "the appended records never showed up in a round"
    seen = _foreign(db, ["entries"], [["T#followed", 64, 0, 2**62]], [])
    assert len(seen["answers"][0]) == 4


_CRASHED_WRITER = """
import os, sys
import duckdb
con = duckdb.connect(sys.argv[1])
con.execute("SET checkpoint_threshold = '1GB'")
con.execute("CREATE TABLE scratch AS SELECT range AS x FROM range(10)")
os._exit(9)  # no checkpoint: the change stays in the write-ahead log
"""


def test_a_write_ahead_log_left_by_a_dead_writer_does_not_break_the_refresh(
    tmp_path: Path,
) -> None:
    g = build_generated(tmp_path / "g", 200)
    ds, db = tmp_path / "ds", tmp_path / "w.duckdb"
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    save_database(ds, db)
    subprocess.run([sys.executable, "-c", _CRASHED_WRITER, str(db)], check=False, timeout=120)
    assert db.with_name("w.duckdb.wal").exists()
    save_database(ds, db)
    seen = _foreign(db, ["entries"], [], [])
    assert seen["counts"]["entries"] == rmqarrow.open(ds).scan("entries").read_all().num_rows
