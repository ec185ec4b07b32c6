"""A Delta dataset after several incremental runs, for the tests of foreign readers
(tests/converters/delta/test_foreign_readers.py, the cluster's): each reader is asked the
same SQL, and what rmqarrow's own ``sql`` (DuckDB over the pinned snapshot) answers on the
dataset and on a fresh full export of the store is the expected answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute
from generated_store import build_generated
from rmqarrow.converters.delta.run import open_snapshot
from rmqarrow.converters.duckdb.sql import connect

import rmqarrow
from rmqarrow.index.service import IndexService

TABLES = ("files", "slots", "entries")
RUNS = 3


@dataclass(frozen=True)
class Lake:
    ds: Path  #: exported, then RUNS incremental runs
    fresh: Path  #: a full export of the store as it is after the runs
    first_entries: int  #: entries rows of the export, before the runs
    statements: dict[str, str]  #: name -> SQL over the tables files, slots, entries
    want: dict[str, list[tuple[Any, ...]]]  #: what rmqarrow answers


def _append(store: Path, hash_slot_num: int, index_num: int, records: Any, first: int) -> None:
    """150 more records indexed as a broker would (the newest file grows, new files roll)."""
    n = 150
    ts = int(pa.compute.max(records.column("store_timestamp")).as_py())
    batch = pa.table(
        {
            "topic": ["T"] * n,
            "keys": [f"k{i % 7}" for i in range(first, first + n)],
            "uniq_key": [f"u{i}" for i in range(first, first + n)],
            "commit_log_offset": pa.array([10**9 + 100 * i for i in range(first, first + n)]),
            "store_timestamp": pa.array([ts + i for i in range(first, first + n)], pa.int64()),
            "sys_flag": pa.array([0] * n, pa.int32()),
        }
    )
    with IndexService(store, hash_slot_num, index_num) as service:
        service.load()
        service.build_index_batch(batch)


def _statements(key_hash: int) -> dict[str, str]:
    counts = {f"rows_{t}": f"SELECT count(*) AS n FROM {t}" for t in TABLES}
    return {
        **counts,
        "key_hash": (
            "SELECT file_name, position, phy_offset, prev_index FROM entries "
            f"WHERE key_hash = {key_hash} ORDER BY file_name, position"
        ),
        "join": (
            "SELECT f.file_name, f.index_count, count(*) AS n, max(e.store_timestamp) AS last "
            "FROM entries e JOIN files f ON e.file_name = f.file_name "
            "GROUP BY f.file_name, f.index_count ORDER BY f.file_name"
        ),
    }


def rmqarrow_answers(ds: Path, statements: dict[str, str]) -> dict[str, list[tuple[Any, ...]]]:
    con = connect(ds)
    try:
        return {name: con.sql(sql).fetchall() for name, sql in statements.items()}
    finally:
        con.close()


def build_lake(root: Path) -> Lake:
    """A store exported and grown by RUNS incremental runs, a fresh
    full export of it, and rmqarrow's answers (checked equal on both)."""
    g = build_generated(root / "g", 600)
    ds, fresh = root / "ds", root / "fresh"
    rmqarrow.open(g.store).export(ds)
    first = rmqarrow.open(ds).scan("entries").read_all().num_rows
    for run in range(1, RUNS + 1):
        _append(g.store, g.hash_slot_num, g.index_num, g.records, 1000 * run)
        assert rmqarrow.open(g.store).sync(ds).changed
    assert open_snapshot(ds).version == RUNS
    rmqarrow.open(g.store).export(fresh)
    ((hot,),) = connect(fresh).sql("SELECT mode(key_hash) FROM entries").fetchall()
    statements = _statements(int(hot))
    want = rmqarrow_answers(fresh, statements)
    assert rmqarrow_answers(ds, statements) == want
    assert want["rows_entries"][0][0] > first  # the runs added rows
    assert len(want["key_hash"]) > 1
    return Lake(ds, fresh, first, statements, want)
