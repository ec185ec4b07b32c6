"""``rmqarrow sql`` and ``rmqarrow stats``: SQL and index-health analysis over an index.

``sql TARGET [QUERY]`` runs one statement (or, without QUERY, every statement read from
stdin, ``;``-terminated, as an interactive prompt on a terminal) over the ``files``,
``slots`` and ``entries`` views, with DuckDB (default; the lookup macros are registered)
or Spark.  ``stats TARGET`` prints the analyses of :mod:`rmqarrow.converters.stats.sql`.  With
``--commitlog DIR`` (a broker's ``store/commitlog``) both also get the ``messages`` view
(a dataset exported with its messages has it without the option), and ``stats`` adds the
check of the index against the log (:func:`rmqarrow.converters.duckdb.sql.check_against_log`;
with ``--engine spark``, :func:`rmqarrow.converters.spark.log_check.check_against_log`).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import rmqarrow
from rmqarrow._text import json_line, json_text, table_lines
from rmqarrow.cli._datasets import object_dataset_copy, pinned_dataset
from rmqarrow.cli._output import (
    add_as_of_option,
    add_geometry_options,
    add_json_options,
    add_spark_options,
    dataset_arg,
    geometry_option,
    location_arg,
    print_document,
    print_table,
    progress_bar,
)
from rmqarrow.cli._rocksdb import add_index_option, open_options
from rmqarrow.cli._schemas import document
from rmqarrow.cli._show import render
from rmqarrow.errors import RmqArrowError, UsageError, WriteRefusedError
from rmqarrow.format.times import parse_time

if TYPE_CHECKING:
    import pyarrow as pa


__all__ = ["register"]

#: Largest --top/--limit: rows printed to a terminal, not a dump (use sql for that).
_MAX_ROWS = 1_000_000

PROMPT = "rmqarrow> "


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sql",
        help="run SQL over an index (views files, slots, entries; lookup macros)",
        description=(
            "Run SQL over a store or exported dataset. Views: files, slots, entries "
            "(and messages with --commitlog, or from a dataset exported with one). "
            "DuckDB macros: index_key_hash(key), index_lookup(key, max_num[, begin, end]), "
            "index_lookups('table'). Without QUERY, statements are read from stdin "
            "(end each with ';'; '.help' lists the prompt's commands, '.tables' the views)."
        ),
    )
    p.add_argument(
        "target",
        type=dataset_arg,
        help="store directory, index file, or exported dataset (local or s3://)",
    )
    p.add_argument("query", nargs="?", help="one SQL statement (omit for a prompt)")
    fmt = p.add_mutually_exclusive_group()
    add_json_options(
        fmt, help="print a JSON document: the columns and every row (rmqarrow schema sql)"
    )
    fmt.add_argument("--csv", action="store_true", help="print rows as CSV")
    p.add_argument(
        "--allow-write",
        action="store_true",
        help="also run statements that may write a file or load code (COPY, EXPORT DATABASE, "
        "ATTACH, INSTALL/LOAD, SET; Spark: any command but SHOW, DESCRIBE, EXPLAIN, SET); "
        "without it sql is read-only and refuses them before they run",
    )
    p.add_argument(
        "--engine",
        choices=("duckdb", "spark"),
        default="duckdb",
        help="duckdb (default; with the lookup macros) or spark (the three views)",
    )
    p.add_argument("--master", default=None, help="Spark master URL (--engine spark)")
    add_spark_options(p)
    p.add_argument(
        "--commitlog",
        type=location_arg,
        metavar="DIR",
        default=None,
        help="a broker's store/commitlog: adds the messages view (real topic and keys)",
    )
    p.add_argument(
        "--save",
        metavar="FILE",
        type=Path,
        default=None,
        help="write a DuckDB database file over the dataset instead of running SQL: its "
        "views read the dataset's current snapshot and it holds the lookup macros, so the "
        "duckdb CLI or any DuckDB client opens it without rmqarrow; run the same command "
        "again to refresh it after the dataset changes",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="with --save: replace FILE even when rmqarrow did not write it",
    )
    add_geometry_options(p)
    add_as_of_option(p)
    add_index_option(p)
    p.set_defaults(func=_run_sql)

    s = sub.add_parser(
        "stats",
        help="index health: fill, slot load vs Poisson, chain depth, hot keys, duplicates",
        description=(
            "Analyse an index with DuckDB: per-file time coverage and fill, slot-load and "
            "chain-depth distributions next to the Poisson expectation, the hottest key "
            "hashes, duplicated offsets, and (with --between) what was indexed in a time range."
        ),
    )
    s.add_argument(
        "target",
        type=dataset_arg,
        help="store directory, index file, or exported dataset (local or s3://)",
    )
    s.add_argument(
        "--between",
        nargs=2,
        metavar=("T1", "T2"),
        help="also list entries stored in [T1, T2] (epoch ms or ISO 8601; local zone when "
        "none is given)",
    )
    add_as_of_option(s)
    s.add_argument("--top", type=int, default=10, help="rows of hot keys / duplicates (10)")
    s.add_argument("--limit", type=int, default=20, help="entries listed by --between (20)")
    s.add_argument(
        "--plot", type=location_arg, metavar="DIR", help="also write PNG charts into DIR"
    )
    s.add_argument(
        "--html",
        type=location_arg,
        metavar="FILE",
        help="also write one self-contained HTML report (check's health banner, charts) to FILE",
    )
    s.add_argument(
        "--overwrite", action="store_true", help="let --plot and --html replace their files"
    )
    s.add_argument("--json", action="store_true", help="print everything as JSON")
    s.add_argument(
        "--epoch",
        action="store_true",
        help="print times as epoch milliseconds (default: ISO 8601 UTC, as info does; "
        "--json always has epoch milliseconds)",
    )
    s.add_argument(
        "--commitlog",
        type=location_arg,
        metavar="DIR",
        default=None,
        help="a broker's store/commitlog: also check the index against the log",
    )
    s.add_argument(
        "--engine",
        choices=("duckdb", "spark"),
        default="duckdb",
        help="who checks the index against --commitlog: duckdb (default) or spark (the log "
        "decoded by the executors, a task per file; the other analyses stay DuckDB's)",
    )
    s.add_argument("--master", default=None, help="Spark master URL (--engine spark)")
    add_spark_options(s)
    add_geometry_options(s)
    add_index_option(s)
    s.set_defaults(func=_run_stats)


# --- sql ------------------------------------------------------------------------------


#: Rows rendered at a time: output goes out block by block, never held whole.
_PRINT_ROWS = 4096


def _blocks(reader: pa.RecordBatchReader) -> Iterator[list[dict[str, Any]]]:
    for batch in reader:
        for start in range(0, batch.num_rows, _PRINT_ROWS):
            rows = batch.slice(start, _PRINT_ROWS).to_pylist()
            if rows:
                yield rows


def _print_result(
    reader: pa.RecordBatchReader | None, args: argparse.Namespace, out: TextIO
) -> None:
    """Print a statement's rows as they come, a block at a time (flushed), so memory and
    the wait for the first line stay one block however large the result.  A text table
    keeps the first block's column widths (a later, wider value widens its column from
    there on); a statement without rows to show (``CREATE``: an empty status) prints
    nothing."""
    if reader is None or not reader.schema.names:
        return
    columns = reader.schema.names
    status = columns in (["Count"], ["Success"])  # DDL: printed only when it says something
    started = False
    widths: list[int] = []
    writer = csv.writer(out, lineterminator="\n")
    jsonl = getattr(args, "jsonl", False)
    for rows in _blocks(reader):
        if jsonl:
            out.write("".join(json_line(row) + "\n" for row in rows))
        elif args.json:
            for row in rows:
                head = _rows_head(columns) + "\n" if not started else ",\n"
                out.write(head + textwrap.indent(json_text(row), "    "))
                started = True
        elif args.csv:
            if not started:
                writer.writerow(columns)
            for row in rows:
                writer.writerow(["" if v is None else v for v in row.values()])
        else:
            values = [list(r.values()) for r in rows]
            lines, widths = table_lines(values, columns, widths=widths, header=not started)
            out.write("\n".join(lines) + "\n")
        started = True
        out.flush()
    if jsonl:
        pass  # no rows: no lines
    elif args.json:
        out.write("\n  ]\n}\n" if started else _rows_head(columns) + "]\n}\n")
    elif not started and not status:
        if args.csv:
            writer.writerow(columns)
        else:
            print_table([], columns, out)
    out.flush()


def _rows_head(columns: list[str]) -> str:
    """The start of a statement's ``--json`` document, up to its ``rows`` array's ``[``:
    the rows follow as they come, so the document is written without being held."""
    head = json_text(document("sql", {"columns": columns, "rows": []}))
    return head[: head.rindex("[")] + "["


Runner = Callable[[str], "pa.RecordBatchReader | None"]


def _read_only(run: Callable[[], pa.RecordBatchReader | None]) -> pa.RecordBatchReader | None:
    """``run()``, its refusal of a statement that writes naming the option that allows it."""
    try:
        return run()
    except WriteRefusedError as exc:
        raise WriteRefusedError(f"{exc}; pass --allow-write to run it") from None


#: The interactive prompt's history, kept between sessions.
HISTORY_FILE = Path("~/.rmqarrow_sql_history")


def _read_lines(stream: TextIO, interactive: bool) -> Any:
    """Lines of input: with line editing and history (:mod:`readline`) at a terminal."""
    if not interactive:
        yield from iter(stream.readline, "")
        return
    try:
        import readline
    except ImportError:  # a Python built without it: plain input() still works
        readline = None  # type: ignore[assignment]
    history = HISTORY_FILE.expanduser()
    if readline is not None:
        with contextlib.suppress(OSError):
            readline.read_history_file(history)
        readline.set_history_length(1000)
    continued = False
    try:
        while True:
            try:
                line = input("      ...> " if continued else PROMPT)
            except EOFError:
                return
            continued = (
                bool(line.strip())
                and not line.strip().endswith(";")
                and not (not continued and line.strip().startswith("."))
            )
            yield line + "\n"
    finally:
        if readline is not None:
            with contextlib.suppress(OSError):
                readline.write_history_file(history)


def _statements(stream: TextIO, interactive: bool) -> Any:
    """Yield ``;``-terminated statements (and dot commands) read line by line."""
    buffer: list[str] = []
    for line in _read_lines(stream, interactive):
        stripped = line.strip()
        if not buffer and stripped.startswith("."):
            yield stripped
            continue
        if not stripped and not buffer:
            continue
        buffer.append(line.rstrip("\n"))
        if stripped.endswith(";"):
            yield "\n".join(buffer)
            buffer = []
    if any(b.strip() for b in buffer):
        yield "\n".join(buffer)


#: The prompt's own commands (a line starting with '.'), as ``.help`` lists them.
DOT_COMMANDS = {
    ".help": "list these commands",
    ".tables": "list the views to query (files, slots, entries; messages, rocksdb_* when present)",
    ".quit": "leave (also .exit, or Ctrl-D)",
}


def _views(run: Runner) -> list[str]:
    """Every view and table the session registered, as the engine lists them (DuckDB's
    ``name``, Spark's ``tableName``), without rmqarrow's internal ``_rmq_`` ones."""
    reader = run("SHOW TABLES")
    if reader is None:
        return []
    table = reader.read_all()
    column = "tableName" if "tableName" in table.column_names else "name"
    names = [str(n) for n in table.column(column).to_pylist()]
    return [n for n in names if not n.startswith("_rmq_")]


def _prompt(run: Runner, args: argparse.Namespace) -> int:
    interactive = sys.stdin.isatty()
    failures = 0
    for statement in _statements(sys.stdin, interactive):
        if statement in (".quit", ".exit"):
            break
        if statement == ".help":
            print_table([[c, what] for c, what in DOT_COMMANDS.items()], ["command", "what"])
            continue
        if statement.startswith(".") and statement != ".tables":
            print(f"unknown command {statement}; try .help", file=sys.stderr)
            failures += 1
            continue
        try:
            if statement == ".tables":
                import pyarrow as pa  # the parser (and --help) loads without it

                # printed as a statement's rows are, so --csv/--json/--jsonl hold here too
                names = pa.table({"name": _views(run)})
                _print_result(
                    pa.RecordBatchReader.from_batches(names.schema, names.to_batches()),
                    args,
                    sys.stdout,
                )
                continue
            _print_result(run(statement), args, sys.stdout)
        except RmqArrowError as exc:
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            failures += 1
            continue
        except Exception as exc:  # one bad statement never ends the session
            print(
                f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:400]}", file=sys.stderr
            )
            failures += 1
            continue
    if interactive:
        print(file=sys.stderr)
    return 1 if failures and not interactive else 0


def _run_sql(args: argparse.Namespace) -> int:
    if args.save is not None or args.overwrite:
        return _save(args)
    with contextlib.ExitStack() as stack:
        target, as_of = object_dataset_copy(args.target, args.as_of, stack)
        with pinned_dataset(target, as_of):  # every reader below reads that version
            return _sql(target, args)


def _sql(target: Any, args: argparse.Namespace) -> int:
    store = rmqarrow.open(target, geometry=geometry_option(args), **open_options(args))
    with store, store.sql(args.engine, commitlog=args.commitlog, master=args.master) as session:

        def run(statement: str) -> pa.RecordBatchReader | None:
            return _read_only(lambda: session.run(statement, read_only=not args.allow_write))

        if args.query is None:
            return _prompt(run, args)
        statements = [args.query]
        if args.engine != "spark":  # each statement's result, as the duckdb shell prints
            from rmqarrow.converters.duckdb import split_statements

            statements = split_statements(args.query)
        if len(statements) > 1 and args.engine != "spark" and not args.allow_write:
            from rmqarrow.converters.duckdb import refuse_writing

            _read_only(lambda: refuse_writing(None, args.query))  # every one, before any runs
        if len(statements) > 1 and args.json and not getattr(args, "jsonl", False):
            raise UsageError(
                f"--json prints one result and the query holds {len(statements)} statements: "
                "give one, or use --jsonl (a line per row of each)"
            )
        for i, statement in enumerate(statements):
            if i and not (args.csv or getattr(args, "jsonl", False)):
                print()
            _print_result(run(statement), args, sys.stdout)
        return 0


def _save(args: argparse.Namespace) -> int:
    """``sql DATASET --save FILE``: the database file, then where it is and how to refresh."""
    if args.save is None:
        raise UsageError("--overwrite goes with --save FILE")
    if (
        args.query is not None
        or args.engine != "duckdb"
        or args.commitlog is not None
        or args.as_of is not None
    ):
        raise UsageError(
            "--save writes a database file over a dataset's current snapshot: it takes no "
            "QUERY, --engine, --as-of or --commitlog (export the dataset with its messages "
            "instead)"
        )
    from rmqarrow.converters.duckdb import save_database

    saved = save_database(args.target, args.save, overwrite=args.overwrite)
    if args.json or args.jsonl:
        print_document("sql.saved", saved.to_dict(), args)
        return 0
    snapshot = "" if saved.delta_version is None else f" (Delta version {saved.delta_version})"
    print(
        f"{'replaced' if saved.replaced else 'wrote'} {saved.path}: views "
        f"{', '.join(saved.views)} over {saved.parts} Parquet part(s) of {saved.dataset}"
        f"{snapshot}; macros index_key_hash, index_lookup, index_lookups"
    )
    print(f"open it with: duckdb -readonly {saved.path}")
    print(f"it reads this snapshot; after the dataset changes, refresh it with: {saved.refresh}")
    return 0


# --- stats ----------------------------------------------------------------------------


def _run_stats(args: argparse.Namespace) -> int:
    if not (0 <= args.top <= _MAX_ROWS and 0 <= args.limit <= _MAX_ROWS):
        raise UsageError(
            f"--top and --limit must be 0..{_MAX_ROWS:,}, got {args.top} and {args.limit}"
        )
    between = None
    if args.between:
        between = (
            parse_time(args.between[0], "--between"),
            parse_time(args.between[1], "--between"),
        )
        if between[0] > between[1]:
            raise UsageError(f"--between {between[0]} {between[1]}: the first time is later")
    store = rmqarrow.open(  # a dataset (on s3:// too) pinned as of a version, when given
        args.target,
        geometry=geometry_option(args),
        **open_options(args),
        as_of=args.as_of,
    )
    with store:  # inside, every reader of the dataset reads the pinned version
        if args.html:  # refused now, not after the minutes a large store's stats take
            from rmqarrow.converters.stats import html_target

            html_target(args.html, overwrite=args.overwrite)
        report = store.stats(
            top=args.top,
            between=between,
            limit=args.limit,
            commitlog=args.commitlog,
            engine=args.engine,
            master=args.master,
            progress=progress_bar(),
            with_check=bool(args.html),  # the page shows the check's verdict
        )
    return render(report, args)
