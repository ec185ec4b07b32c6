"""DuckDB lookups over a native store that load only the queries' slots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from golden_data import GoldenSet
from rmqarrow.converters.duckdb import sql as duckdb_sql
from rmqarrow.converters.duckdb.native import chain_positions

from rmqarrow import IndexFile
from rmqarrow.errors import RmqArrowError
from rmqarrow.format.queries import Query


def test_slots_connection_equals_whole_store(golden: GoldenSet) -> None:
    """Every column of every answer is the whole-store connection's, on every golden set."""
    hashes = duckdb_sql.queries_table(golden.queries).column("key_hash").to_numpy()
    geometry = {"hash_slot_num": golden.hash_slot_num, "index_num": golden.index_num}
    whole = duckdb_sql.connect(golden.store_dir, **geometry)
    part = duckdb_sql.connect_for_queries(golden.store_dir, hashes, **geometry)
    try:
        assert duckdb_sql.lookup_table(part, golden.queries) == duckdb_sql.lookup_table(
            whole, golden.queries
        )
        loaded = part.execute("SELECT count(*) FROM entries").fetchall()
        total = whole.execute("SELECT count(*) FROM entries").fetchall()
        assert loaded[0][0] <= total[0][0]
    finally:
        whole.close()
        part.close()


def test_loads_only_the_chains_of_the_wanted_slots(tmp_path: Path) -> None:
    with IndexFile.create(tmp_path / "00000", 16, 400) as f:
        for i in range(300):
            f.put_key(f"T#k{i % 50}", 1000 + i, 1_700_000_000_000 + i)
    key = "T#k7"
    q = [Query(key, 64)]
    hashes = duckdb_sql.queries_table(q).column("key_hash").to_numpy()
    con = duckdb_sql.connect_for_queries(tmp_path, hashes, hash_slot_num=16, index_num=400)
    try:
        slot = int(hashes[0]) % 16
        rows = con.execute("SELECT DISTINCT slot FROM entries").fetchall()
        assert rows == [(slot,)]
        n = con.execute("SELECT count(*) FROM entries").fetchall()[0][0]
        with IndexFile.open(tmp_path / "00000", 16, 400) as f:
            assert n == chain_positions(f.regions, np.array([slot])).size
            assert 0 < n < 300
        assert duckdb_sql.answer_queries(tmp_path, q, hash_slot_num=16, index_num=400) == [
            [1000 + i for i in reversed(range(300)) if i % 50 == 7]
        ]
    finally:
        con.close()


def test_damaged_chain_pointing_forward_ends(tmp_path: Path) -> None:
    """A prev that points forward (a damaged file) ends the chain; nothing loops."""
    with IndexFile.create(tmp_path / "00000", 1, 8) as f:
        for i in range(5):
            f.put_key("T#a", 10 + i, 1_700_000_000_000 + i)
        f.regions.entries["prev_index"][2] = 4  # 2 -> 4 -> 3 -> 2 ...
        assert sorted(chain_positions(f.regions, np.array([0])).tolist()) == [2, 3, 4, 5]


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RmqArrowError, match="no such store"):
        duckdb_sql.answer_queries(tmp_path / "nope", [Query("T#a", 1)])
