"""The DuckDB ``index_key_hash`` macro splits a key into characters in
one pass (linear; it took a ``substring`` per character, quadratic: 320 k characters,
89 s).  Its answers stay Java's, for the empty key, astral characters and long keys
(costs are measured in benchmarks/bench_storage.py, not here)."""

from __future__ import annotations

import duckdb
import pytest
from rmqarrow.converters.duckdb.walk import HASH_MACROS_SQL

from rmqarrow.format.hashing import index_key_hash


@pytest.mark.parametrize("key", ["", "a", "T#ключ😀x", "😀" * 3, "T#" + "k9" * 50_000])
def test_macro_matches_java(key: str) -> None:
    con = duckdb.connect()
    con.execute(HASH_MACROS_SQL)
    assert con.execute("SELECT index_key_hash(?)", [key]).fetchone() == (index_key_hash(key),)
