"""The pure-SQL ``index_key_hash`` macro equals rmqarrow.index_key_hash for any key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from golden_data import golden_set
from hypothesis import given, settings
from hypothesis import strategies as st
from rmqarrow.converters.duckdb import sql as duckdb_sql

import rmqarrow

TRICKY = [
    "",
    "a",
    "Aa",
    "BB",
    "polygenelubricants",
    "😀",
    "topic#😀key",
    "e\u0301",
    "\U0010ffff",
    "\uffff\ue000",
    "中文#キー",
    "x" * 1000,
    "TopicTest#ORDER-000123",
    "a\x00b",
    "tab\tnew\nline",
    "'; DROP TABLE entries; --",
]


@pytest.fixture(scope="module")
def con() -> Iterator[Any]:
    g = golden_set("basic")
    c = duckdb_sql.connect(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    yield c
    c.close()


def _sql_hashes(con: Any, keys: list[str]) -> list[int]:
    con.register("_keys", pa.table({"i": range(len(keys)), "k": keys}))
    try:
        rows = con.execute("SELECT index_key_hash(k) FROM _keys ORDER BY i").fetchall()
    finally:
        con.unregister("_keys")
    return [r[0] for r in rows]


def test_tricky_keys(con: Any) -> None:
    assert _sql_hashes(con, TRICKY) == [rmqarrow.index_key_hash(k) for k in TRICKY]
    assert _sql_hashes(con, ["polygenelubricants"]) == [0]
    assert _sql_hashes(con, ["Aa", "BB"]) == [2112, 2112]


def test_bound_parameter(con: Any) -> None:
    for key in TRICKY:
        got = con.execute("SELECT index_key_hash(?)", [key]).fetchall()[0]
        assert got == (rmqarrow.index_key_hash(key),)


# DuckDB strings are UTF-8, so lone surrogates cannot reach it; every other code point can.
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(_TEXT, min_size=1, max_size=30))
def test_any_unicode_key(con: Any, keys: list[str]) -> None:
    assert _sql_hashes(con, keys) == [rmqarrow.index_key_hash(k) for k in keys]
