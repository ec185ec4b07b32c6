"""SQL statements over an opened store's tables, one engine's session: what
:meth:`~rmqarrow.store.Store.sql` returns, the same for every kind that answers SQL."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rmqarrow._closing import Closing
from rmqarrow.errors import (
    EngineError,
    EngineUnavailableError,
    RmqArrowError,
    UsageError,
    WriteRefusedError,
)
from rmqarrow.format.layout import GeometryHint

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = ["SqlSession", "check_sql_engine", "duckdb_session", "spark_session", "sql_session"]

Runner = Callable[[str, bool], "pa.RecordBatchReader | None"]


def check_sql_engine(engine: str) -> str:
    """``engine`` when SQL runs on it (duckdb or spark), else refused naming both."""
    if engine not in ("duckdb", "spark"):
        raise UsageError(f"SQL runs on engine='duckdb' or 'spark', got {engine!r}")
    return engine


class SqlSession(Closing):
    """Statements run one at a time, each one's rows streamed (a reader, or None for a
    statement without rows).  ``read_only`` (the default) refuses a statement that may
    write a file or load code, before it runs, with
    :class:`~rmqarrow.errors.WriteRefusedError`."""

    def __init__(self, engine: str, run: Runner, close: Callable[[], object]) -> None:
        #: the engine the statements run on: duckdb or spark
        self.engine = engine
        self._run = run
        self._close: Callable[[], object] | None = close

    def run(self, statement: str, *, read_only: bool = True) -> pa.RecordBatchReader | None:
        """One statement's rows."""
        return self._run(statement, read_only)

    def close(self) -> None:
        close, self._close = self._close, None
        if close is not None:
            close()


def duckdb_session(con: duckdb.DuckDBPyConnection, close: Callable[[], object]) -> SqlSession:
    """Statements on ``con`` (its views and macros registered); ``close`` ends it."""
    from rmqarrow.converters.duckdb import run_statement

    def run(statement: str, read_only: bool) -> pa.RecordBatchReader | None:
        try:
            return run_statement(con, statement, read_only=read_only)
        except EngineError as exc:
            raise _name_the_tables(con, exc) from None

    return SqlSession("duckdb", run, close)


#: DuckDB's line for a missing table, and the suggestion it adds from its own catalog
_MISSING_TABLE = re.compile(r"Table with name (\S+) does not exist!")
_SYSTEM_SUGGESTION = re.compile(r' Did you mean "(pg_|duckdb_|information_schema)[^"]*"\?')


def _name_the_tables(con: duckdb.DuckDBPyConnection, exc: EngineError) -> EngineError:
    """A missing table's error naming the session's tables, not DuckDB's catalog (which
    suggests ``pg_settings`` for a table nobody registered)."""
    text = str(exc)
    if not _MISSING_TABLE.search(text):
        return exc
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables ORDER BY table_name"
    ).fetchall()
    names = [name for (name,) in rows if not name.startswith("_")]
    text = _SYSTEM_SUGGESTION.sub("", text)
    return EngineError(f"{text} This session's tables: {', '.join(names) or 'none'}.")


def spark_session(spark: Any) -> SqlSession:
    """Statements on the SparkSession ``spark`` (its temporary views registered); Spark's
    own errors come back as one rmqarrow error.  The session is Spark's: closing this one
    leaves it running."""
    from rmqarrow.converters.spark import writing_statement

    def run(statement: str, read_only: bool) -> pa.RecordBatchReader | None:
        if read_only:
            kind = writing_statement(spark, statement)
            if kind is not None:
                raise WriteRefusedError(
                    f"{kind} statement refused: it may write, and only queries, SHOW, "
                    "DESCRIBE, EXPLAIN and SET run read-only"
                )
        try:
            result: pa.Table = spark.sql(statement).toArrow()
        except RmqArrowError:
            raise
        except Exception as exc:
            raise _name_the_views(spark, _spark_failure(exc)) from None
        return result.to_reader()

    return SqlSession("spark", run, lambda: None)


def _name_the_views(spark: Any, exc: Exception) -> Exception:
    """A missing table's error naming the session's views, as DuckDB's does: Spark's
    line says only that the name is not found."""
    text = str(exc)
    if not isinstance(exc, EngineError) or "TABLE_OR_VIEW_NOT_FOUND" not in text:
        return exc
    try:
        tables = spark.catalog.listTables()
    except Exception:  # the JVM gone: Spark's own line still says what failed
        return exc
    names = sorted(t.name for t in tables if t.isTemporary and not t.name.startswith("_"))
    head, sep, log = text.partition("; Spark's log: ")
    listed = f" This session's tables: {', '.join(names) or 'none'}"
    return EngineError(f"{head}{listed}{sep}{log}" if sep else f"{head}{listed}.")


def _spark_failure(exc: Exception) -> Exception:
    """A statement's error as one line; pyspark/py4j errors quote Spark's first line."""
    if type(exc).__module__.startswith(("pyspark", "py4j")):
        from rmqarrow.converters.spark import spark_error

        return spark_error(exc)
    return exc


def sql_session(
    engine: str,
    target: str,
    master: str | None,
    *,
    geometry: GeometryHint,
    commitlog: str | None,
) -> SqlSession:
    """A session over the index format's tables at ``target`` (index files or their
    dataset): DuckDB reading the files lazily, with the lookup macros; or Spark."""
    if check_sql_engine(engine) == "spark":
        try:
            from rmqarrow.converters.spark import get_spark, register_tables
        except ImportError as exc:
            raise EngineUnavailableError(f"engine=spark needs pyspark ({exc})") from None
        spark = get_spark(master)
        register_tables(spark, target, geometry=geometry, commitlog=commitlog)
        return spark_session(spark)
    from rmqarrow.converters.duckdb import connect

    con = connect(
        target,
        geometry=geometry,
        commitlog=commitlog,
        lazy=True,  # each statement reads what it needs from the files, a batch at a time
    )
    return duckdb_session(con, con.close)
