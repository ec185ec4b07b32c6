"""Keys and parameters never become SQL text: hostile keys are just keys."""

from __future__ import annotations

from pathlib import Path

from rmqarrow.converters.duckdb import sql as duckdb_sql

import rmqarrow

HOSTILE = [
    "t#it's",
    't#"quoted"',
    "t#a'); DROP VIEW entries; --",
    "t#; SELECT 1; --",
    "t#/* comment */",
    "t#-- trailing comment",
    "t#\\'",
    "t#${x}",
    "t#?",
    "t#$1",
    "t#😀'🙂",
    "t#ключ'; --",
    "t#\x00",
    "t#",
    "",
]


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    with rmqarrow.IndexFile.create(root / "00000", 16, 64) as f:
        for i, key in enumerate(HOSTILE):
            assert f.put_key(key, 1000 + i, 1_700_000_000_000 + i * 1000)
    return root


def test_hostile_keys_bulk_and_single(tmp_path: Path) -> None:
    store = _store(tmp_path)
    queries = [rmqarrow.Query(k, 10) for k in HOSTILE]
    expected = rmqarrow.answer_queries(store, queries, hash_slot_num=16, index_num=64)
    assert all(expected)  # each key finds at least its own put
    with duckdb_sql.connect(store, hash_slot_num=16, index_num=64) as con:
        assert duckdb_sql.answer_queries(con, queries) == expected
        for q, want in zip(queries, expected, strict=True):
            rows = con.execute(
                "SELECT phy_offset FROM index_lookup(?, ?) ORDER BY ordinal", [q.key, q.max_num]
            ).fetchall()
            assert [r[0] for r in rows] == want
        # the views are intact after all of that
        names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        assert {"files", "slots", "entries"} <= names
        assert con.execute("SELECT count(*) FROM entries").fetchall() == [(len(HOSTILE),)]


def test_hostile_paths_are_not_sql(tmp_path: Path) -> None:
    # a directory whose name is SQL-ish is still just a path
    odd = tmp_path / "x'); DROP VIEW files; --"
    odd.mkdir()
    store = _store(odd)
    with duckdb_sql.connect(store, hash_slot_num=16, index_num=64) as con:
        assert con.execute("SELECT count(*) FROM files").fetchall() == [(1,)]
