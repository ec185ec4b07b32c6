"""A lazily attached native store answers as the loaded one, reading only what it needs.

``connect(store, lazy=True)`` registers the tables as Arrow streams DuckDB scans on
demand (:mod:`rmqarrow.converters.duckdb.lazy`): the same rows and the same lookups as a
store loaded into DuckDB, a snapshot pinned while a writer appends, and a damaged
CommitLog that fails only the statements reading ``messages``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from golden_data import GoldenSet, golden_set
from rmqarrow.converters.duckdb import sql as duckdb_sql

from rmqarrow.errors import CommitLogError, StoreChangedError

ORDER = {
    "files": "file_name",
    "slots": "file_name, slot",
    "entries": "file_name, position",
}


def _read_all(con: Any, sql: str) -> Any:
    reader = duckdb_sql.run_statement(con, sql)
    assert reader is not None
    return reader.read_all()


def test_lazy_tables_and_lookups_equal_the_loaded_store(golden: GoldenSet) -> None:
    geometry = {"hash_slot_num": golden.hash_slot_num, "index_num": golden.index_num}
    loaded = duckdb_sql.connect(golden.store_dir, **geometry)
    lazy = duckdb_sql.connect(golden.store_dir, lazy=True, **geometry)
    with loaded, lazy:
        for table, order in ORDER.items():
            sql = f"SELECT * FROM {table} ORDER BY {order}"
            assert lazy.sql(sql).to_arrow_table() == loaded.sql(sql).to_arrow_table(), table
        # a self-join: the stream is scanned twice in one statement
        twice = "SELECT count(*) FROM entries a JOIN entries b USING (file_name, position)"
        assert lazy.sql(twice).fetchall() == loaded.sql(twice).fetchall()
        step = 1 if len(golden.queries) <= 400 else 7
        queries = golden.queries[::step]
        got = duckdb_sql.answer_queries(lazy, queries)
        assert got == golden.expected[::step]


def test_a_lazy_store_is_pinned_while_a_writer_appends(tmp_path: Path) -> None:
    from rmqarrow.index.service import IndexService

    g = golden_set("rolling")
    store = tmp_path / "store"
    shutil.copytree(g.store_dir, store)
    con = duckdb_sql.connect(store, hash_slot_num=g.hash_slot_num, index_num=g.index_num, lazy=True)
    with con:
        before = con.sql("SELECT count(*) FROM entries").fetchall()
        with IndexService(store, g.hash_slot_num, g.index_num) as service:
            service.load()
            service.build_index_batch(
                pa.table(
                    {
                        "topic": ["T"] * 5,
                        "keys": [f"late-{i}" for i in range(5)],
                        "uniq_key": [f"u{i}" for i in range(5)],
                        "commit_log_offset": pa.array([10**9 + i for i in range(5)], pa.int64()),
                        "store_timestamp": pa.array([1_900_000_000_000] * 5, pa.int64()),
                        "sys_flag": pa.array([0] * 5, pa.int32()),
                    }
                )
            )
            service.flush()
        grown = duckdb_sql.connect(store, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
        with grown:
            assert grown.sql("SELECT count(*) FROM entries").fetchall() != before
        assert con.sql("SELECT count(*) FROM entries").fetchall() == before
        oldest = sorted(store.iterdir())[0]
        oldest.unlink()  # the broker expires a file the connection holds
        with pytest.raises(StoreChangedError) as err:
            _read_all(con, "SELECT count(*) FROM entries")
        assert str(oldest) in str(err.value) and "Traceback" not in str(err.value)


def test_a_torn_commitlog_fails_only_the_statements_reading_messages(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from rmqarrow.commitlog import CommitLogWriter, Message

    log = tmp_path / "commitlog"
    with CommitLogWriter(log, mapped_file_size=4096) as w:
        for i in range(40):
            w.append(Message(topic="T", keys=f"k{i}", body=b"x" * 40))
    # a record torn at the newest file's write end is "not yet written"; one torn in an
    # older file, with records after it, is damage
    damaged = sorted(log.iterdir())[0]
    data = damaged.read_bytes()
    damaged.write_bytes(data[:4] + b"\xff" * 4 + data[8:])  # its first magic code
    g = golden_set("rolling")
    con = duckdb_sql.connect(
        g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num, commitlog=log
    )
    with con:
        assert con.sql("SELECT count(*) FROM files").fetchall()[0][0] == len(g.files)
        with pytest.raises(CommitLogError) as err:
            _read_all(con, "SELECT count(*) FROM messages")
        assert str(damaged) in str(err.value) and "Traceback" not in str(err.value)
        assert con.sql("SELECT count(*) FROM entries").fetchall()[0][0] > 0
