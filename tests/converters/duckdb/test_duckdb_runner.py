"""The one DuckDB runner: inputs registered for a statement and always unregistered.

A connection keeps nothing of a finished statement's inputs (after it answered, after it
failed, after a Ctrl-C), and an input never replaces a view or table the connection
already holds: the caller's own connection (``to_duckdb(con)``) is left as it was.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from rmqarrow.converters.duckdb.runner import fresh_name, registered, run_arrow
from rmqarrow.converters.duckdb.sql import check_against_log, lookup_table

import rmqarrow
from rmqarrow.demo import make_docs_workspace
from rmqarrow.errors import UsageError

_CATALOG = """
SELECT 'view ' || view_name FROM duckdb_views() WHERE NOT internal
UNION ALL SELECT 'table ' || table_name FROM duckdb_tables()
ORDER BY 1
"""


def catalog(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every view and table of the connection, as ``kind name``."""
    return [row[0] for row in con.execute(_CATALOG).fetchall()]


def numbers(n: int) -> pa.Table:
    return pa.table({"n": pa.array(range(n), pa.int64())})


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    make_docs_workspace(root)
    return root


def test_run_arrow_answers_and_unregisters() -> None:
    con = duckdb.connect()
    got = run_arrow(
        con,
        "SELECT sum(a.n) AS s, count(*) AS c FROM a JOIN b ON a.n = b.n WHERE a.n >= $low",
        inputs={"a": numbers(5), "b": numbers(3)},
        params={"low": 1},
    )
    assert got.to_pylist() == [{"s": 3, "c": 2}]
    assert catalog(con) == []


def test_inputs_are_there_in_the_block_and_gone_after_an_error() -> None:
    con = duckdb.connect()
    with pytest.raises(duckdb.BinderException), registered(con, {"a": numbers(2)}) as names:
        assert names == {"a": "a"}
        assert catalog(con) == ["view a"]
        con.sql("SELECT no_such_column FROM a").fetchall()
    assert catalog(con) == []
    with pytest.raises(duckdb.CatalogException):
        run_arrow(con, "SELECT * FROM a, missing", inputs={"a": numbers(2)})
    assert catalog(con) == []


def test_inputs_are_gone_after_a_keyboard_interrupt() -> None:
    con = duckdb.connect()
    with pytest.raises(KeyboardInterrupt), registered(con, {"a": numbers(2), "b": numbers(1)}):
        assert catalog(con) == ["view a", "view b"]
        raise KeyboardInterrupt
    assert catalog(con) == []


@pytest.mark.parametrize(
    ("mine", "named"),
    [
        ("CREATE TEMP VIEW a AS SELECT 42 AS mine", "view a"),
        ("CREATE TABLE A AS SELECT 42 AS mine", "table A"),  # names compare without case
    ],
)
def test_a_name_the_connection_holds_is_refused_not_replaced(mine: str, named: str) -> None:
    con = duckdb.connect()
    con.execute(mine)
    before = catalog(con)
    with pytest.raises(UsageError) as err:
        run_arrow(con, "SELECT * FROM a", inputs={"free": numbers(1), "a": numbers(3)})
    assert f"holds {named}, which" in str(err.value) and "rename yours" in str(err.value)
    # the caller's object answers as before, and the free input was not left behind
    assert con.sql("SELECT mine FROM a").fetchall() == [(42,)]
    assert catalog(con) == before


def test_fresh_names_never_meet_the_callers() -> None:
    con = duckdb.connect()
    con.execute("CREATE TEMP VIEW a AS SELECT 42 AS mine")
    with registered(con, {"a": numbers(3)}, fresh=True) as names:
        assert names["a"].startswith("_rmq_a_") and names["a"] != fresh_name("a")
        assert con.sql(f"SELECT count(*) FROM {names['a']}").fetchall() == [(3,)]
        assert con.sql("SELECT mine FROM a").fetchall() == [(42,)]
    assert catalog(con) == ["view a"]


def test_a_callers_connection_keeps_no_input_of_a_lookup_or_check(ws: Path) -> None:
    con = duckdb.connect()
    with rmqarrow.open(ws / "store") as store:
        store.to_duckdb(con)
        before = catalog(con)
        assert "view entries" in before and "view messages" in before
        hits = lookup_table(con, [rmqarrow.Query("OrderTopic#order-1", 5)])
        assert hits.num_rows == 1
        figures = check_against_log(con)
        assert figures["entries"] > 0
        assert catalog(con) == before
        # a view the caller made after registering, under the check's input name, stays
        con.execute("CREATE TEMP VIEW _rmq_expected_keys AS SELECT 42 AS mine")
        with pytest.raises(UsageError):
            check_against_log(con)
        assert con.sql("SELECT mine FROM _rmq_expected_keys").fetchall() == [(42,)]
        assert catalog(con) == sorted([*before, "view _rmq_expected_keys"])
