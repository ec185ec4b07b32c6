"""``to_duckdb(con)`` on the caller's own connection never replaces what it holds.

The views and macros are registered as temporary objects (nothing is written into the
caller's database file); a connection already holding one of their names (the caller's
own, or a store registered before) is refused in one line naming the clash.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import rmqarrow
from rmqarrow.demo import make_docs_workspace
from rmqarrow.errors import UsageError


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    make_docs_workspace(root)
    return root


@pytest.mark.parametrize("target", ["store", "lake/idx"])
@pytest.mark.parametrize(
    ("mine", "named"),
    [
        ("CREATE TABLE files AS SELECT 42 AS mine", "table files"),
        ("CREATE TEMP VIEW entries AS SELECT 42 AS mine", "view entries"),
        ("CREATE MACRO index_key_hash(x) AS x + 42", "macro index_key_hash"),
    ],
)
def test_the_callers_objects_are_refused_not_replaced(
    ws: Path, target: str, mine: str, named: str
) -> None:
    con = duckdb.connect()
    con.execute(mine)
    with rmqarrow.open(ws / target) as store, pytest.raises(UsageError) as err:
        store.to_duckdb(con)
    assert named in str(err.value) and "connection of its own" in str(err.value)
    if named.startswith("macro"):
        assert con.sql("SELECT index_key_hash(1)").fetchall() == [(43,)]
    else:
        assert con.sql(f"SELECT mine FROM {named.split()[1]}").fetchall() == [(42,)]
    # nothing of the store was left behind
    assert con.sql("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchall()[0][0] == (
        1 if named.startswith("view") else 0
    )


def test_a_second_store_on_one_connection_is_refused(ws: Path) -> None:
    con = duckdb.connect()
    with rmqarrow.open(ws / "store") as a, rmqarrow.open(ws / "lake" / "idx") as b:
        a.to_duckdb(con)
        before = con.sql("SELECT count(*) FROM entries").fetchall()
        with pytest.raises(UsageError) as err:
            b.to_duckdb(con)
        assert "already holds a store's views" in str(err.value)
        assert con.sql("SELECT count(*) FROM entries").fetchall() == before
        # each on a connection of its own: both answer
        assert b.to_duckdb().sql("SELECT count(*) FROM entries").fetchall() == before


@pytest.mark.parametrize("target", ["store", "lake/idx"])
def test_nothing_is_written_into_the_callers_database(
    ws: Path, tmp_path: Path, target: str
) -> None:
    db = tmp_path / "mine.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    with rmqarrow.open(ws / target) as store:
        store.to_duckdb(con)
        assert con.sql("SELECT count(*) FROM messages").fetchall()[0][0] > 0
        hit = "SELECT count(*) FROM index_lookup('OrderTopic#order-1', 5)"
        assert con.sql(hit).fetchall() == [(1,)]
    con.close()
    con = duckdb.connect(str(db))
    assert con.sql("SHOW TABLES").fetchall() == [("mine",)]
    macros = (
        "SELECT count(*) FROM duckdb_functions() WHERE NOT internal AND function_type LIKE '%macro'"
    )
    assert con.sql(macros).fetchall() == [(0,)]


def test_a_store_root_holding_only_index_points_at_it(tmp_path: Path, ws: Path) -> None:
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(ws / "store" / "index", root / "index")
    with pytest.raises(UsageError) as err:
        rmqarrow.open(root)
    assert f"pass {root / 'index'}" in str(err.value)
