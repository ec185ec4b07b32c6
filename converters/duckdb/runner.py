"""One statement over Arrow inputs on a DuckDB connection: register, run, fetch, unregister.

Every engine module of the converters answers the same way: a few Arrow tables (queries,
search plans, lookup relations, streamed figures) are registered as temporary views, one
or more statements read them, and the views go again.  :func:`registered` is that cycle,
written once: the views are dropped whatever ends the block (an error, a Ctrl-C), so the
caller's own connection (``to_duckdb(con)``) is never left holding an input of ours, and
a name the connection already uses (the caller's view or table, or the store's) is
refused rather than replaced, as :func:`rmqarrow.converters.duckdb.sql.check_names_free`
refuses them for the store's own names.  :func:`run_arrow` runs one statement inside it
and returns the rows as an Arrow table.

Failures of the statement propagate as DuckDB raises them; :func:`engine_failure` is the
one mapping of them to rmqarrow's errors, for the callers that report them.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rmqarrow.converters.duckdb.lazy import statement_error

from rmqarrow.errors import EngineError, RmqArrowError, UsageError

if TYPE_CHECKING:
    import duckdb

__all__ = ["engine_failure", "fetch_arrow", "fresh_name", "registered", "run_arrow"]

#: Views and tables the connection already holds under one of ``$names`` (lower case, as
#: DuckDB compares identifiers), in the schemas a registered view would shadow or replace.
_TAKEN_SQL = """
SELECT 'view ' || view_name FROM duckdb_views()
WHERE NOT internal AND database_name IN (current_database(), 'temp')
  AND list_contains($names, lower(view_name))
UNION ALL
SELECT 'table ' || table_name FROM duckdb_tables()
WHERE database_name IN (current_database(), 'temp') AND list_contains($names, lower(table_name))
ORDER BY 1
"""


def fresh_name(stem: str) -> str:
    """A view name no connection holds yet: ``_rmq_<stem>_<12 hex digits>``."""
    return f"_rmq_{stem.removeprefix('_rmq_')}_{uuid.uuid4().hex[:12]}"


def _refuse_taken(con: duckdb.DuckDBPyConnection, names: Sequence[str]) -> None:
    wanted = {"names": [n.lower() for n in names]}
    taken = [row[0] for row in con.execute(_TAKEN_SQL, wanted).fetchall()]
    if taken:
        raise UsageError(
            f"this DuckDB connection already holds {', '.join(taken)}, which a statement's "
            "input of the same name would replace; drop or rename yours, or give the store "
            "a connection of its own (store.to_duckdb() opens one)"
        )


@contextlib.contextmanager
def registered(
    con: duckdb.DuckDBPyConnection, inputs: Mapping[str, Any], *, fresh: bool = False
) -> Iterator[dict[str, str]]:
    """Register each of ``inputs`` (name -> Arrow table, record batch reader, relation or
    anything else ``con.register`` takes) as a temporary view for the block; yields the
    name each is registered under.

    Under its own name unless ``fresh`` (then under :func:`fresh_name`, for statements
    that take the name as a parameter or a format field): an own name the connection
    already holds as a view or table raises :class:`~rmqarrow.errors.UsageError` before
    anything is registered.  Every view registered is unregistered when the block ends,
    however it ends.
    """
    names = {given: fresh_name(given) if fresh else given for given in inputs}
    if not fresh and names:
        _refuse_taken(con, list(names.values()))
    done: list[str] = []
    try:
        for given, value in inputs.items():
            con.register(names[given], value)
            done.append(names[given])
        yield names
    finally:
        for name in reversed(done):
            con.unregister(name)


def fetch_arrow(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: Sequence[object] | Mapping[str, object] | None = None,
) -> pa.Table:
    """The rows of one statement as an Arrow table."""
    result: pa.Table = con.sql(sql, params=params).to_arrow_table()
    return result


def run_arrow(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    inputs: Mapping[str, Any] | None = None,
    params: Sequence[object] | Mapping[str, object] | None = None,
) -> pa.Table:
    """The rows of ``sql`` as an Arrow table, with ``inputs`` registered under their own
    names while it runs (:func:`registered`)."""
    with registered(con, inputs or {}):
        return fetch_arrow(con, sql, params)


def engine_failure(exc: BaseException) -> BaseException:
    """A failed statement as one error: what a lazy table hit (an rmqarrow error, a
    Ctrl-C), else DuckDB's line as an :class:`EngineError`."""
    import duckdb

    found = statement_error(exc)
    if isinstance(found, RmqArrowError | KeyboardInterrupt):
        return found
    # a RuntimeError or OSError not quoting a DuckDB "... Error: " is not DuckDB's
    foreign = isinstance(exc, RuntimeError | OSError) and not isinstance(exc, duckdb.Error)
    if foreign and "Error: " not in str(exc):
        return exc
    return EngineError(f"DuckDB: {' '.join(str(found).split())}")
