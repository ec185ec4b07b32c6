"""DuckDB over an index: the ``files``/``slots``/``entries`` views and the native lookup in SQL.

:func:`connect` opens an in-process DuckDB connection over a target, which is either an
exported Parquet dataset (a directory with ``files/``, ``slots/`` and ``entries/``, see
:mod:`rmqarrow.converters.parquet.export`) or a native store (a directory of index files, or one
index
file, streamed in through :mod:`rmqarrow.converters.arrow.scan`), and registers:

``files``, ``slots``, ``entries``
    the three tables in the schema of :mod:`rmqarrow.converters.schema`;
``index_key_hash(key)``
    RocketMQ's key hash in pure SQL, exact for any Unicode key (UTF-16 code units, int32
    wraparound, ``Integer.MIN_VALUE`` -> 0);
``index_lookup(key, max_num)`` / ``index_lookup(key, max_num, begin_ms, end_ms)``
    table macro: the offsets ``IndexService.queryOffset`` returns, in its order (columns
    ``ordinal, phy_offset, file_name, position, store_timestamp, key_hash``);
``index_lookups(tbl)``
    table macro: every query of the table (or view) named ``tbl``, with columns
    ``query_id, key_hash, max_num, begin_ms, end_ms``, answered in one statement (adds
    ``query_id`` to the columns above);
``messages``
    only with ``commitlog=`` (a broker's ``store/commitlog``, read by
    :mod:`rmqarrow.converters.arrow.messages`) or when a dataset holds a ``messages/`` directory:
    one
    row per CommitLog message with its real topic and keys, so joins of ``entries``
    (``phy_offset``) to ``messages`` (``physical_offset``) filtered on the real key answer
    without hash false positives; :func:`check_against_log` checks the index against it.

The lookup SQL and the semantics it reproduces are in :mod:`rmqarrow.converters.duckdb.walk`.
Keys and parameters only ever reach DuckDB as bound parameters or registered Arrow
tables; paths reach it through the relation API, never inside SQL text.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rmqarrow.converters.arrow.scan import scan_store
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.duckdb.footer_facts import entry_facts
from rmqarrow.converters.duckdb.lazy import (
    BATCH_ROWS,
    LazyTable,
    NativeSnapshot,
    attach_messages,
    attach_native,
    clear_failure,
    files_rows,
    native_views,
    statement_error,
)
from rmqarrow.converters.duckdb.native import attach_slots
from rmqarrow.converters.duckdb.runner import engine_failure, fetch_arrow, registered
from rmqarrow.converters.duckdb.walk import HASH_MACROS_SQL, LOOKUP_COLUMNS, LOOKUP_MACROS_SQL
from rmqarrow.converters.log_check_sql import (
    CHECK_DANGLING_SQL,
    CHECK_MISSING_SQL,
    EXPECTED_KEYS_VIEW,
    LOG_FACTS_SQL,
    expected_key_texts_sql,
    log_check_figures,
)
from rmqarrow.converters.parquet.manifest import check_parts, one_snapshot, trusted
from rmqarrow.converters.parquet.parts import duckdb_literal, single_file_name, table_parts
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow._memory import duckdb_settings
from rmqarrow.errors import (
    CorruptIndexError,
    DatasetError,
    InvalidKeyError,
    InvalidValueError,
    RmqArrowError,
    StoreNotFoundError,
    UsageError,
    WriteRefusedError,
)
from rmqarrow.format.detect import require_index_source
from rmqarrow.format.hashing import check_query_key
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import (
    Geometry,
    GeometryHint,
    StoreSnapshot,
    check_header,
    geometry_hint,
    map_regions,
)
from rmqarrow.format.naming import java_name_order, list_index_files
from rmqarrow.format.queries import Query
from rmqarrow.kernels.hashing import index_key_hashes

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "CHECK_DANGLING_SQL",
    "CHECK_MISSING_SQL",
    "ENTRY_COLUMNS",
    "EXPECTED_KEYS_SQL",
    "LOOKUP_COLUMNS",
    "Target",
    "answer_queries",
    "check_against_log",
    "check_names_free",
    "connect",
    "connect_for_queries",
    "entry_owners",
    "file_ranks",
    "lookup_table",
    "queries_table",
    "run_statement",
    "split_statements",
    "writing_statement",
]

Target = str | os.PathLike[str]

TABLES = ("files", "slots", "entries")
ENTRY_COLUMNS = (
    "position",
    "key_hash",
    "slot",
    "phy_offset",
    "time_diff",
    "store_timestamp",
    "prev_index",
)

# --- targets --------------------------------------------------------------------------


def _parquet_files(directory: Path) -> list[str]:
    """The data files of one dataset table (names starting with ``_`` or ``.`` are not)."""
    return [str(p) for p in table_parts(directory.parent, directory.name)]


def file_ranks(names: Sequence[str]) -> dict[str, int]:
    """Newest-first rank of each file name in Java string order (UTF-16 code units)."""
    ordered = sorted(set(names), key=java_name_order, reverse=True)
    if len(ordered) != len(names):
        dup = sorted(n for n in set(names) if list(names).count(n) > 1)[0]
        raise DatasetError(f"the files table holds file {dup!r} more than once")
    return {name: rank for rank, name in enumerate(ordered)}


def _attach_dataset(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Views over the Parquet files, and ``_rmq_entries`` with int file ranks.

    When each entries file holds a single index file (as :mod:`rmqarrow.converters.parquet.export`
    writes them), ``_rmq_entries`` gets each part's rank by the part's place in the scan
    (:func:`_attach_owned_entries`) and never reads the ``file_name`` strings; otherwise it
    joins the names to their ranks.
    """
    if not trusted():  # parts added, missing or changed since export: refused, never half-read
        check_parts(root)
    for table in TABLES:
        files = [duckdb_literal(p) for p in _parquet_files(root / table)]
        # register(): a temporary view (create_view() would write a persistent one into
        # the caller's database file)
        con.register(table, con.read_parquet(files))
    names = [r[0] for r in con.sql("SELECT file_name FROM files").fetchall()]
    ranks = file_ranks(names)
    owned = entry_owners(root, _parquet_files(root / "entries"), ranks)
    if owned is not None:
        _attach_owned_entries(con, owned)
        facts = entry_facts(owned)
        if facts is not None:  # the per-file minima from the footers, not a full scan
            con.register(_ENTRY_FACTS, facts)
        return
    _register_rank_table(con, ranks)
    con.execute(
        "CREATE OR REPLACE TEMP VIEW _rmq_entries AS "
        "SELECT r.newest_rank, e.* EXCLUDE (file_name) "
        "FROM entries e JOIN _rmq_rank r ON r.file_name = e.file_name"
    )


def entry_owners(
    root: Path, parts: Sequence[str], ranks: dict[str, int]
) -> dict[int, list[str]] | None:
    """The entries ``parts`` by the rank of the one index file each holds, when every
    part's statistics prove it holds one (as the exporter writes them); None when some
    cannot tell (the names are then joined to their ranks).  A part of a file the
    ``files`` table does not list is refused."""
    owners = [single_file_name(p) for p in parts]
    if not parts or any(o is None for o in owners):
        return None
    owned: dict[int, list[str]] = {}
    for part, owner in zip(parts, owners, strict=True):
        rank = ranks.get(owner) if owner is not None else None
        if rank is None:
            raise DatasetError(
                f"{root}: entries of file {owner!r}, which the files table does not list"
            )
        owned.setdefault(rank, []).append(part)
    return owned


def _attach_owned_entries(con: duckdb.DuckDBPyConnection, owned: dict[int, list[str]]) -> None:
    """``_rmq_entries`` over parts that each hold one index file's entries (``owned[rank]``).

    One scan of every part, its rank joined on by the part's place in the list DuckDB
    reads (``file_index``), never by the ``file_name`` strings: the cost of binding and
    planning stays flat in the number of parts (a union per part nested one level per
    file, past DuckDB's expression depth limit at about 500 files).
    """
    import duckdb

    ordered = sorted((rank, part) for rank, paths in owned.items() for part in paths)
    con.register(
        _PART_RANKS,
        pa.table(
            {
                "file_index": pa.array(range(len(ordered)), pa.uint64()),
                "newest_rank": pa.array([rank for rank, _ in ordered], pa.int32()),
            }
        ),
    )
    parts = con.read_parquet([duckdb_literal(p) for _, p in ordered]).select(
        duckdb.ColumnExpression("file_index"),
        *(duckdb.ColumnExpression(c) for c in ENTRY_COLUMNS),
    )
    con.register(_ENTRY_PARTS, parts)
    columns = ", ".join(f"e.{c}" for c in ENTRY_COLUMNS)
    con.execute(
        "CREATE OR REPLACE TEMP VIEW _rmq_entries AS "
        f"SELECT r.newest_rank, {columns} "
        f"FROM {_ENTRY_PARTS} e JOIN {_PART_RANKS} r ON r.file_index = e.file_index"
    )


_PART_RANKS = "_rmq_part_ranks"
_ENTRY_PARTS = "_rmq_entry_parts"


def _register_rank_table(con: duckdb.DuckDBPyConnection, ranks: dict[str, int]) -> None:
    con.register(
        "_rmq_rank",
        pa.table(
            {
                "file_name": pa.array(list(ranks), pa.string()),
                "newest_rank": pa.array(list(ranks.values()), pa.int32()),
            }
        ),
    )


def _attach_store(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    geometry: GeometryHint,
) -> None:
    """Stream each table of the native files into a DuckDB temp table (batch by batch).

    The streaming reader (:mod:`rmqarrow.converters.arrow.scan`) can be read once, so the rows are
    loaded into DuckDB's own (compressed, columnar) storage, which every later statement
    of the connection can read; only one Arrow batch is in Python memory at a time.
    Entries get their file's rank as they load, so lookups join on an int.
    """
    import duckdb

    paths = [root] if root.is_file() else list_index_files(root)
    # Check every file up front, so a bad one raises its own error rather than a DuckDB
    # error wrapped around it mid-stream.
    for path in paths:
        mapped = map_regions(path, geometry_of(path, geometry), writable=False)
        try:
            check_header(path, mapped.geometry, mapped.header)
        finally:
            mapped.close()
    _register_rank_table(con, file_ranks([p.name for p in paths]))
    loads = {
        "files": "SELECT * FROM {src}",
        "slots": "SELECT * FROM {src}",
        "entries": "SELECT r.newest_rank, s.* FROM {src} s JOIN _rmq_rank r USING (file_name)",
    }
    for name in TABLES:
        clear_failure()
        stream = scan_store(root, name, geometry=geometry)
        reader = LazyTable(SCHEMAS[name], functools.partial(iter, stream))
        source = f"_rmq_stream_{name}"
        try:
            with registered(con, {source: reader}):
                con.execute(
                    f"CREATE OR REPLACE TEMP TABLE _rmq_native_{name} AS "
                    + loads[name].format(src=source)
                )
        except duckdb.Error as exc:
            found = statement_error(exc)  # what the scan hit, or DuckDB's line
            if isinstance(found, RmqArrowError | KeyboardInterrupt):
                raise found from None
            text = " ".join(str(found).split())
            raise CorruptIndexError(f"{root}: reading the {name} table failed: {text}") from None
    native_views(con)


def _attach_lazy_store(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    geometry: GeometryHint,
) -> None:
    """The native store as lazy tables of one pinned snapshot, ``_rmq_files`` included."""
    names = [root.name] if root.is_file() else [p.name for p in list_index_files(root)]
    ranks = file_ranks(names)

    def rmq_files(snap: NativeSnapshot) -> pa.Table:
        return files_rows(snap.files_table.to_pylist(), ranks, snap.entry_facts())

    attach_native(con, root, ranks, geometry, rmq_files)


_FILE_FACTS_SQL = """
SELECT f.file_name, f.begin_timestamp, f.end_timestamp, f.hash_slot_num, f.index_count,
       e.min_store_timestamp, e.min_time_diff, e.newest_rank
FROM files f LEFT JOIN _rmq_rank r ON r.file_name = f.file_name
LEFT JOIN _rmq_entry_facts e ON e.newest_rank = r.newest_rank
"""

#: Per file rank, the smallest store time and time diff of its entries: registered from
#: the footers for an exporter's dataset (:mod:`rmqarrow.converters.duckdb.footer_facts`),
#: else this view.
_ENTRY_FACTS = "_rmq_entry_facts"
_ENTRY_FACTS_SQL = f"""
CREATE TEMP VIEW IF NOT EXISTS {_ENTRY_FACTS} AS
SELECT newest_rank, min(store_timestamp) AS min_store_timestamp,
       min(time_diff) AS min_time_diff
FROM _rmq_entries GROUP BY newest_rank
"""


def _add_views_and_macros(con: duckdb.DuckDBPyConnection, *, files: bool = True) -> None:
    """What every connection gets once its tables are attached: the file order view
    (unless ``files`` is False: a lazy attach registered its own) and the hash and lookup
    macros."""
    if files:
        _register_files(con)
    con.execute(HASH_MACROS_SQL)
    con.execute(LOOKUP_MACROS_SQL)


def _register_files(con: duckdb.DuckDBPyConnection) -> None:
    """``_rmq_files`` (see :mod:`rmqarrow.converters.duckdb.walk`), computed once per connection."""
    names = [r[0] for r in con.sql("SELECT file_name FROM files").fetchall()]
    ranks = file_ranks(names)
    _register_rank_table(con, ranks)
    con.execute(_ENTRY_FACTS_SQL)
    facts = {
        r["file_name"]: (r["min_store_timestamp"], r["min_time_diff"])
        for r in con.sql(_FILE_FACTS_SQL).to_arrow_table().to_pylist()
        if r["min_store_timestamp"] is not None
    }
    files = con.sql("SELECT * FROM files").to_arrow_table().to_pylist()
    con.register("_rmq_files", files_rows(files, ranks, facts))


def _attach_messages(
    con: duckdb.DuckDBPyConnection, root: Path, kind: str, commitlog: Target | None
) -> None:
    """The ``messages`` view: from ``commitlog`` (wins; decoded by each statement that
    reads it, :func:`rmqarrow.converters.duckdb.lazy.attach_messages`) or the dataset's
    ``messages/``."""
    if commitlog is not None:
        attach_messages(con, commitlog)
    elif kind == "dataset" and (root / "messages").is_dir():
        files = [duckdb_literal(p) for p in _parquet_files(root / "messages")]
        con.register("messages", con.read_parquet(files))


def connect(
    target: Target,
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    commitlog: Target | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    lazy: bool = False,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the index views and lookup macros registered
    (on ``con`` when given: the caller's own connection, which it keeps and closes; every
    object is temporary, and a connection already holding one of the names is refused,
    :func:`check_names_free`, so nothing of the caller's is replaced).

    ``target`` is an exported dataset or a native store (see
    :func:`rmqarrow.format.detect.require_index_source`); the geometry options (``geometry``,
    a :class:`~rmqarrow.GeometryHint` or a complete :class:`~rmqarrow.Geometry`, or
    ``hash_slot_num``/``index_num``, not both forms) apply to native files only (a dataset
    records its geometry).  ``commitlog`` (a broker's
    ``store/commitlog`` directory) adds the ``messages`` table
    (:func:`rmqarrow.converters.arrow.messages.messages_table`, held in memory); without it,
    a dataset that holds a ``messages/`` directory of Parquet parts gets a ``messages`` view
    over it.  The CommitLog is decoded by each statement that reads ``messages``, so a
    damaged one fails those statements only.

    A native store's tables are loaded into DuckDB once (fast for many statements, memory
    grows with the store) unless ``lazy``: then each statement reads from the files what
    it needs, a batch at a time (:mod:`rmqarrow.converters.duckdb.lazy`: ``files`` is the
    headers, ``entries`` streams), with memory bounded by the statement, not the store.
    A dataset is always read that way (views over its Parquet parts).
    """
    import duckdb

    hint = geometry_hint(geometry, hash_slot_num, index_num)
    source = require_index_source(target)
    root = source.path if source.kind == "dataset" else source.index_path
    kind = "dataset" if source.kind == "dataset" else "store"
    own = con is None
    if con is not None:
        check_names_free(con)  # the caller's views and macros are never replaced
    con = duckdb.connect(config=duckdb_settings()) if con is None else con  # ulimit -v
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute("SET parquet_metadata_cache = true")
        with one_snapshot(root) if kind == "dataset" else contextlib.nullcontext():
            if kind == "dataset":
                _attach_dataset(con, root)
            elif lazy:
                _attach_lazy_store(con, root, hint)
            else:
                _attach_store(con, root, hint)
            _attach_messages(con, root, kind, commitlog)
        _add_views_and_macros(con, files=not (lazy and kind == "store"))
    except BaseException:
        if own:
            con.close()
        raise
    return con


#: What :func:`connect` creates: the views, the macros; and every internal name starts
#: with ``_rmq_``.
VIEWS = ("files", "slots", "entries", "messages")
MACROS = ("index_key_hash", "index_lookup", "index_lookups")

_NAMES_SQL = """
SELECT 'view ' || view_name FROM duckdb_views()
WHERE NOT internal AND database_name IN (current_database(), 'temp')
UNION ALL
SELECT 'table ' || table_name FROM duckdb_tables()
WHERE database_name IN (current_database(), 'temp')
UNION ALL
SELECT 'macro ' || function_name FROM duckdb_functions()
WHERE NOT internal AND function_type IN ('macro', 'table_macro')
  AND database_name IN (current_database(), 'temp')
"""


def check_names_free(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a connection that already holds a name :func:`connect` would create (one of
    :data:`VIEWS`, :data:`MACROS`, or ``_rmq_...``): the caller's own objects are never
    replaced, and a second store on one connection is refused rather than silently
    swapped in for the first."""
    wanted = set(VIEWS) | set(MACROS)
    clashes = sorted(
        {
            label
            for (label,) in con.execute(_NAMES_SQL).fetchall()
            if label.split(" ", 1)[1] in wanted or label.split(" ", 1)[1].startswith("_rmq_")
        }
    )
    if not clashes:
        return
    advice = (
        "give each store a connection of its own (store.to_duckdb() opens one), or drop or "
        "rename yours"
    )
    if any(label.split(" ", 1)[1].startswith("_rmq_") for label in clashes):
        raise UsageError(
            "this DuckDB connection already holds a store's views and macros (registered "
            f"on it before), which registering another store would replace; {advice}"
        )
    raise UsageError(
        f"this DuckDB connection already holds {', '.join(clashes)}, which registering the "
        f"store would replace; {advice}"
    )


def connect_for_queries(
    target: Target,
    key_hashes: np.ndarray,
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    snapshot: StoreSnapshot | None = None,
) -> duckdb.DuckDBPyConnection:
    """A connection like :func:`connect` over the native store ``target`` that holds only
    the slots of ``key_hashes`` (the queries' key hashes) in every file
    (:mod:`rmqarrow.converters.duckdb.native`): lookups of those keys (``index_lookup``,
    ``index_lookups``) answer as over the whole store, at a cost that does not grow with
    the files' size; any other statement sees only the loaded slots.  ``snapshot``
    (headers pinned by file name) reads exactly those files as of those headers.  The
    geometry options are :func:`connect`'s.
    """
    import duckdb

    hint = geometry_hint(geometry, hash_slot_num, index_num)
    source = require_index_source(target)
    if source.kind == "dataset":
        raise DatasetError(
            f"{source.path}: connect_for_queries reads a native store, not a dataset"
        )
    root = source.index_path
    if root.is_file():
        names = [root.name]
    elif snapshot is not None:
        names = list(snapshot)
    else:
        names = [p.name for p in list_index_files(root)]
    con = duckdb.connect(config=duckdb_settings())  # fits ulimit -v
    try:
        con.execute("SET enable_progress_bar = false")
        attach_slots(con, root, key_hashes, file_ranks(names), hint, snapshot)
        _add_views_and_macros(con)
    except BaseException:
        con.close()
        raise
    return con


#: What ``run_statement(read_only=True)`` runs, by DuckDB's own statement type: queries
#: (``SELECT``, ``WITH``, ``DESCRIBE``, ``SHOW``, ``FROM ...``), ``EXPLAIN``, ``PRAGMA`` and
#: ``CALL`` (DuckDB's table functions), and the statements that change only the
#: connection's in-memory catalog (``CREATE``, ``INSERT``, ``UPDATE``, ``DELETE``, ``DROP``,
#: ``ALTER``, macros, transactions): with ``ATTACH`` refused there is no database file for
#: them to write.  Every other type may write a file or load code: ``COPY ... TO``,
#: ``EXPORT DATABASE``, ``COPY FROM DATABASE``, ``ATTACH`` of a database file,
#: ``INSTALL``/``LOAD`` (an extension downloaded into the home directory, code loaded),
#: ``PREPARE``/``EXECUTE`` (of any of those), and ``SET``/``RESET`` (also ``PRAGMA x = y``):
#: a setting can name a file DuckDB then writes (``log_query_path``, ``temp_directory``,
#: ``profiling_output``, ``extension_directory``).  A type DuckDB adds later is refused
#: until it is named here.
READING_STATEMENTS = frozenset(
    {
        "SELECT", "EXPLAIN", "PRAGMA", "CALL", "RELATION",
        "CREATE", "CREATE_FUNC", "INSERT", "UPDATE", "DELETE", "DROP", "ALTER",
        "TRANSACTION", "ANALYZE", "MERGE_INTO",
    }
)  # fmt: skip

#: Settings a read-only connection runs with (and, with ``SET`` refused, keeps): no
#: extension installed or loaded behind a statement's back, no secret written to disk.
READ_ONLY_SETTINGS = (
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_persistent_secrets = false",
)


def refuse_writing(con: duckdb.DuckDBPyConnection | None, query: str) -> None:
    """Raise :class:`~rmqarrow.errors.WriteRefusedError` when any statement of ``query``
    may write (:func:`writing_statement`; parsed on ``con``, or on a new in-memory
    connection: parsing needs no tables), before anything runs."""
    import duckdb

    kind = writing_statement(con if con is not None else duckdb.connect(), query)
    if kind is not None:
        raise WriteRefusedError(
            f"{kind} statement refused: it may write a file or load code, and read-only "
            "runs only queries, DESCRIBE, SHOW, EXPLAIN, PRAGMA, CALL and changes to "
            "the in-memory catalog (CREATE, INSERT, DROP)"
        )


def writing_statement(con: duckdb.DuckDBPyConnection, query: str) -> str | None:
    """The first statement of ``query`` that may write, as DuckDB's parser types it
    (``"COPY"``, ``"CREATE"``, ...; see :data:`READING_STATEMENTS`), or None when every
    statement reads.  Nothing is run; a statement DuckDB cannot parse raises
    :class:`~rmqarrow.errors.EngineError` with its line."""
    import duckdb

    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise engine_failure(exc) from None
    for statement in statements:
        kind = statement.type.name
        if kind not in READING_STATEMENTS:
            return "INSTALL/LOAD" if kind == "LOAD" else kind
    return None


def split_statements(text: str) -> list[str]:
    """The statements of ``text`` (``SELECT 1; SELECT 2`` is two), split by DuckDB's own
    parser, so a ``;`` inside a string or a comment splits nothing.  Text the parser
    refuses comes back whole: running it reports the syntax error."""
    import duckdb

    try:
        with duckdb.connect() as con:
            parts = [st.query.strip() for st in con.extract_statements(text)]
    except duckdb.Error:
        return [text]
    return [p for p in parts if p.rstrip(";").strip()] or [text]


def run_statement(
    con: duckdb.DuckDBPyConnection,
    query: str,
    *,
    batch_rows: int = BATCH_ROWS,
    read_only: bool = False,
) -> pa.RecordBatchReader | None:
    """Run one SQL statement; its rows as a stream of batches of at most ``batch_rows``
    (None for a statement without a result: ``CREATE``, ``SET``, an empty one).

    With ``read_only``, a statement that may write (:func:`writing_statement`) is refused
    with :class:`~rmqarrow.errors.WriteRefusedError` before anything runs.

    Rows are produced as the reader is read, so printing them holds one batch, not the
    result.  A failure, when running or while reading, raises one error: the rmqarrow
    error a lazily read table hit (a damaged CommitLog, a file the broker expired), a
    :class:`KeyboardInterrupt` for Ctrl-C, else :class:`EngineError` with DuckDB's line.
    """
    import duckdb

    if not query.strip().rstrip(";").strip():
        return None
    if read_only:
        refuse_writing(con, query)
        for setting in READ_ONLY_SETTINGS:
            con.execute(setting)
    clear_failure()
    try:
        rel = con.sql(query)
        if rel is None:
            return None
        reader = rel.to_arrow_reader(batch_rows)
    except (duckdb.Error, pa.ArrowException, RuntimeError, OSError) as exc:
        raise engine_failure(exc) from None

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            yield from reader
        except (duckdb.Error, pa.ArrowException, RuntimeError, OSError) as exc:
            raise engine_failure(exc) from None

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


# --- the index against the log --------------------------------------------------------

#: The keys ``IndexService.buildIndex`` puts for each message of the ``messages`` view
#: (:func:`rmqarrow.converters.log_check_sql.expected_key_texts_sql`, shared with Spark).
EXPECTED_KEY_TEXTS_SQL = expected_key_texts_sql("unnest")

#: The same with each key's hash computed in SQL (the form to run by hand);
#: :func:`check_against_log` hashes :data:`EXPECTED_KEY_TEXTS_SQL` vectorized instead.
EXPECTED_KEYS_SQL = f"""
SELECT physical_offset, key, index_key_hash(key) AS key_hash
FROM ({EXPECTED_KEY_TEXTS_SQL})
"""


def check_against_log(con: duckdb.DuckDBPyConnection, *, examples: int = 5) -> dict[str, Any]:
    """Check the index (``entries``) against the log (``messages``) of a connection.

    The connection comes from :func:`connect` with a ``messages`` view (``commitlog=`` or
    a dataset with ``messages/``).  Returns counts and up to ``examples`` rows of each
    problem: ``dangling`` entries (:data:`CHECK_DANGLING_SQL`) and ``missing`` keys
    (:data:`CHECK_MISSING_SQL` over :data:`EXPECTED_KEYS_SQL`).  Both are 0 for an index
    RocketMQ (or ``rmqarrow build --from-commitlog``) built from this whole log in order.
    Legitimate exceptions: RocketMQ's offset guard skips a message whose offset is below
    the newest index file's end offset (replays, resumed builds), the index may start
    after the log's first message (built from a later offset) and the log may have lost
    old files to retention (their entries are then dangling).
    """
    import duckdb

    if examples < 0:
        raise InvalidValueError(f"examples must be >= 0, got {examples}")
    try:
        con.sql("SELECT 1 FROM messages LIMIT 0").fetchall()
    except duckdb.CatalogException:
        raise DatasetError(
            "no messages view on this connection; connect(..., commitlog=DIR) or export the "
            "dataset with a commitlog"
        ) from None
    clear_failure()
    try:
        return _check_against_log(con, examples)
    except (duckdb.Error, pa.ArrowException) as exc:  # a damaged log: its own line
        raise engine_failure(exc) from None


def _check_against_log(con: duckdb.DuckDBPyConnection, examples: int) -> dict[str, Any]:
    # The SQL hash macro is exact but slow on millions of keys: hash in numpy instead.
    texts = con.sql(EXPECTED_KEY_TEXTS_SQL).to_arrow_table()
    expected = texts.append_column(
        "key_hash", pa.array(index_key_hashes(texts.column("key")), pa.int32())
    )

    def count(sql: str) -> int:
        return int(con.sql(f"SELECT count(*) FROM ({sql})").fetchall()[0][0])

    def first(sql: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = con.sql(sql).limit(examples).to_arrow_table().to_pylist()
        return rows

    with registered(con, {EXPECTED_KEYS_VIEW: expected}):
        facts = con.sql(LOG_FACTS_SQL).fetchall()[0]
        return log_check_figures(facts, count, first)


# --- bulk lookups from Python ---------------------------------------------------------


def queries_table(queries: pa.Table | Sequence[Query]) -> pa.Table:
    """Normalize queries to ``query_id, key_hash, max_num, begin_ms, end_ms``.

    Accepts a list of :class:`rmqarrow.Query` or an Arrow table with ``key`` (the full
    index key), ``topic`` and ``key`` (joined as ``topic#key``) or a precomputed
    ``key_hash`` (:func:`rmqarrow.index_key_hash` values), and optional
    ``max_num`` (default 64, RocketMQ's maxMsgsNumBatch), ``begin``/``end`` (defaults 0 and
    Long.MAX; nulls take the default) and ``query_id`` (default: row number).  Key hashes
    are computed vectorized (:func:`rmqarrow.index_key_hashes`).
    """
    if not isinstance(queries, pa.Table):
        qs = list(queries)
        for q in qs:
            check_query_key(q.key)  # a str, and no byte that is not UTF-8
            for field in ("max_num", "begin", "end"):
                value = getattr(q, field)
                if isinstance(value, bool) or not isinstance(value, int | np.integer):
                    raise InvalidValueError(f"{field} must be an int, got {value!r:.80}")
                if not -(2**63) <= value <= JAVA_LONG_MAX:
                    raise InvalidValueError(f"{field} must fit a Java long, got {value}")
        queries = pa.table(
            {
                "key": pa.array([q.key for q in qs], pa.large_string()),
                "max_num": pa.array([q.max_num for q in qs], pa.int64()),
                "begin": pa.array([q.begin for q in qs], pa.int64()),
                "end": pa.array([q.end for q in qs], pa.int64()),
            }
        )
    names = set(queries.column_names)
    n = queries.num_rows
    if "key" in names:
        keys: Any = queries.column("key")
        if "topic" in names:
            keys = pc.binary_join_element_wise(
                queries.column("topic").cast(pa.large_string()),
                keys.cast(pa.large_string()),
                pa.scalar("#", pa.large_string()),
            )
        key_hash = pa.array(index_key_hashes(keys), pa.int32())
    elif "key_hash" in names:
        key_hash = queries.column("key_hash").cast(pa.int32()).combine_chunks()
        if key_hash.null_count:
            raise InvalidKeyError(f"the key_hash column holds {key_hash.null_count} nulls")
    else:
        raise DatasetError(
            "a queries table needs a 'key' column (the full index key, or the key with a "
            f"'topic' column) or a precomputed 'key_hash'; found columns {sorted(names)}"
        )

    def column(name: str, default: int) -> pa.Array:
        if name not in names:
            return pa.array(np.full(n, default, dtype=np.int64))

        col = queries.column(name).cast(pa.int64())
        return pc.fill_null(col, default).combine_chunks()

    query_id = (
        queries.column("query_id").cast(pa.int64()).combine_chunks()
        if "query_id" in names
        else pa.array(np.arange(n, dtype=np.int64))
    )
    if query_id.null_count or pc.count_distinct(query_id).as_py() != n:
        raise DatasetError("query_id must be unique and non-null in a queries table")
    max_num = column("max_num", 64)
    if n and pc.min(max_num).as_py() < 0:
        bad = pc.min(max_num).as_py()
        raise InvalidValueError(f"max_num must be >= 0, got {bad}")
    return pa.table(
        {
            "query_id": query_id,
            "key_hash": key_hash,
            "max_num": max_num,
            "begin_ms": column("begin", 0),
            "end_ms": column("end", JAVA_LONG_MAX),
        }
    )


def lookup_table(con: duckdb.DuckDBPyConnection, queries: pa.Table | Sequence[Query]) -> pa.Table:
    """Every match of every query in one statement, as an Arrow table.

    Columns: ``query_id``, then :data:`LOOKUP_COLUMNS`; sorted by query and ordinal.
    """
    # a name of this call's own: the macro takes it as a parameter
    with registered(con, {"queries": queries_table(queries)}, fresh=True) as names:
        return fetch_arrow(con, "SELECT * FROM index_lookups(?)", [names["queries"]])


def answer_queries(
    target: Target | duckdb.DuckDBPyConnection | None,
    queries: Sequence[Query],
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    dataset: Target | None = None,
    snapshot: StoreSnapshot | None = None,
) -> list[list[int]]:
    """The native answer to each query, computed by DuckDB (same contract as
    :func:`rmqarrow.answer_queries`).

    ``target`` is a store, a dataset or an open :func:`connect` connection; ``dataset``,
    when given, is read instead of ``target`` (so ``answer_queries(store, qs,
    dataset=export_dir)`` answers from the export).  ``snapshot`` (a native store's
    headers pinned by file name, :meth:`rmqarrow.IndexFile.pin`) answers as of it.  The
    geometry options are :func:`connect`'s.
    """
    import duckdb

    hint = geometry_hint(geometry, hash_slot_num, index_num)
    qs = list(queries)
    source = dataset if dataset is not None else target
    if source is None:
        raise StoreNotFoundError("answer_queries needs a store, a dataset or a connection")
    if isinstance(source, duckdb.DuckDBPyConnection):
        con, own = source, False
    elif require_index_source(source).is_index:  # only the queries' slots, never whole files
        con = connect_for_queries(
            source,
            queries_table(qs).column("key_hash").to_numpy(),
            geometry=hint,
            snapshot=snapshot,
        )
        own = True
    else:
        if snapshot is not None:
            raise UsageError("a snapshot pins a native store's headers; this is a dataset")
        con, own = connect(source, geometry=hint), True
    try:
        result = lookup_table(con, qs)
    finally:
        if own:
            con.close()
    ids = result.column("query_id").to_numpy()
    offsets = result.column("phy_offset").to_numpy()
    bounds = np.searchsorted(ids, np.arange(len(qs) + 1))
    return [offsets[bounds[i] : bounds[i + 1]].tolist() for i in range(len(qs))]
