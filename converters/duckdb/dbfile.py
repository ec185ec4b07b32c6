"""A DuckDB database file over a dataset: the views and lookup macros without Python.

:func:`save_database` writes a file that the DuckDB CLI (or any DuckDB client: JDBC, Go,
Node) opens as it is, with the ``files``, ``slots``, ``entries`` (and ``messages``) views
and the ``index_key_hash`` / ``index_lookup`` / ``index_lookups`` macros of
:func:`rmqarrow.converters.duckdb.sql.connect`, answering as rmqarrow does.

What a file can carry differs from a connection in two ways, both handled here:

* the views read one snapshot of the dataset: the Parquet parts its manifest (or, in
  the Delta layout, its pinned run) lists, by absolute path, because a database file
  cannot follow a Delta log (that needs DuckDB's delta extension).  A later run of the
  dataset is seen after the file is written again (the same call refreshes it);
* what :func:`~rmqarrow.converters.duckdb.sql.connect` registers from Python (the file
  order ``_rmq_files``, the part ranks) is stored as small tables, and the macros are
  persistent; the key hash is SQL already
  (:data:`~rmqarrow.converters.duckdb.walk.HASH_MACROS_SQL`),
  so nothing needs a Python function.

The file is written aside and renamed over ``out``; an existing file is replaced only when
this module wrote it (its ``_rmq_saved`` table says so) or ``overwrite`` is given.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rmqarrow.converters.duckdb.footer_facts import entry_facts
from rmqarrow.converters.duckdb.lazy import files_rows
from rmqarrow.converters.duckdb.sql import ENTRY_COLUMNS, entry_owners, file_ranks
from rmqarrow.converters.duckdb.walk import HASH_MACROS_SQL, LOOKUP_MACROS_SQL
from rmqarrow.converters.parquet.manifest import check_parts, trusted
from rmqarrow.converters.parquet.parts import duckdb_literal, manifest_or_none, table_parts

from rmqarrow._memory import duckdb_settings
from rmqarrow._staging import fsync_dir, remove_path, sibling, stale_siblings
from rmqarrow._version import __version__
from rmqarrow.errors import DatasetError, OutputExistsError, UsageError
from rmqarrow.format.detect import require_index_source

if TYPE_CHECKING:
    import duckdb

__all__ = ["FORMAT", "SavedDatabase", "check_target", "persistent_macros", "save_database"]

#: The ``format`` row of a file's ``_rmq_saved`` table: what marks it as one we wrote.
FORMAT = "rmqarrow-duckdb-file"
_MARK = "_rmq_saved"
_TAG = "save"


@dataclass(frozen=True)
class SavedDatabase:
    """What :func:`save_database` wrote."""

    path: Path
    dataset: Path
    views: tuple[str, ...]
    parts: int
    delta_version: int | None
    replaced: bool
    refresh: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "dataset": str(self.dataset),
            "views": list(self.views),
            "parts": self.parts,
            "delta_version": self.delta_version,
            "replaced": self.replaced,
            "refresh": self.refresh,
        }


def persistent_macros(sql: str) -> str:
    """The connection's macro text as macros stored in the database file."""
    out = sql.replace("CREATE OR REPLACE TEMP MACRO", "CREATE OR REPLACE MACRO")
    if "TEMP " in out:  # a temporary object the file would silently lack
        raise AssertionError("macro SQL holds a temporary object a database file cannot keep")
    return out


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _file_list(paths: list[str]) -> str:
    return "[" + ", ".join(_literal(duckdb_literal(p)) for p in paths) + "]"


def refresh_command(dataset: Path, out: Path) -> str:
    """The command that writes ``out`` again over the dataset's newest snapshot."""
    return f"rmqarrow sql {shlex.quote(str(dataset))} --save {shlex.quote(str(out))}"


def _ours(out: Path) -> bool | None:
    """True when ``out`` is a database file this module wrote, False when it is something
    else, None when DuckDB cannot open it to tell (held open for writing elsewhere)."""
    import duckdb

    try:
        con = duckdb.connect(str(out), read_only=True)
    except duckdb.Error as exc:
        text = str(exc)
        if "lock" in text.lower():
            return None
        return False
    try:
        row = con.execute(f"SELECT format FROM {_MARK}").fetchone()
    except duckdb.Error:
        return False
    finally:
        con.close()
    return row is not None and row[0] == FORMAT


def check_target(out: Path, *, overwrite: bool) -> bool:
    """Whether ``out`` exists (to be replaced); refuses what must not be."""
    if out.is_dir():
        raise OutputExistsError(f"{out}: a directory; give the database file's name")
    if not out.exists():
        if not out.parent.is_dir():
            raise UsageError(f"{out.parent}: no such directory for the database file")
        return False
    if overwrite:
        return True
    ours = _ours(out)
    if ours is None:
        raise OutputExistsError(
            f"{out}: open for writing in another DuckDB process, so it cannot be checked; "
            "close it there (or replace it anyway: rmqarrow sql DATASET --save FILE "
            "--overwrite)"
        )
    if not ours:
        raise OutputExistsError(
            f"{out}: exists and is not a database file rmqarrow wrote; choose another name, "
            "or replace it: rmqarrow sql DATASET --save FILE --overwrite"
        )
    return True


def save_database(
    dataset: str | os.PathLike[str], out: str | os.PathLike[str], *, overwrite: bool = False
) -> SavedDatabase:
    """Write the DuckDB database file ``out`` over the exported ``dataset`` (module doc).

    ``dataset`` is a dataset in either layout (manifest or Delta): the views read the
    parts of its current snapshot, checked against its record first (as every reader
    does).  ``out`` is replaced atomically; an existing file is replaced only when this
    function wrote it, or with ``overwrite``.  Calling it again refreshes the file.
    """
    import duckdb

    source = require_index_source(dataset)
    if source.kind != "dataset":
        raise UsageError(
            f"{source.path}: a store, not a dataset; a database file reads an exported "
            "dataset's Parquet parts (rmqarrow export STORE DIR first)"
        )
    root = Path(source.path).absolute()
    target = Path(out).absolute()
    replaced = check_target(target, overwrite=overwrite)
    manifest = manifest_or_none(root)
    if manifest is not None and not trusted():
        check_parts(root, manifest)
    tables = ["files", "slots", "entries"]
    if (root / "messages").is_dir():
        tables.append("messages")
    parts = {t: [str(p) for p in table_parts(root, t, manifest)] for t in tables}
    version = None if manifest is None else manifest.delta_version
    for stale in stale_siblings(target, _TAG):
        _remove_database(stale)
    staged = sibling(target, _TAG)
    try:
        con = duckdb.connect(str(staged), config=duckdb_settings())
        try:
            _write(con, root, target, parts, version)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        _fsync(staged)
        # A write-ahead log left by a writer of the old file that died: DuckDB would
        # replay it onto the new file and refuse to open it ("WAL does not match").
        # Its changes are the old file's, which this replaces.
        remove_path(target.with_name(target.name + ".wal"))
        os.replace(staged, target)
    except BaseException:
        _remove_database(staged)
        raise
    fsync_dir(target.parent)
    return SavedDatabase(
        path=target,
        dataset=root,
        views=tuple(tables),
        parts=sum(len(v) for v in parts.values()),
        delta_version=version,
        replaced=replaced,
        refresh=refresh_command(root, target),
    )


def _remove_database(path: Path) -> None:
    remove_path(path)
    remove_path(path.with_name(path.name + ".wal"))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _write(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    target: Path,
    parts: dict[str, list[str]],
    version: int | None,
) -> None:
    """The views, tables and macros of the file (on a fresh database)."""
    import duckdb

    try:
        for table, paths in parts.items():
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({_file_list(paths)})")
        files = con.sql("SELECT * FROM files").to_arrow_table().to_pylist()
        ranks = file_ranks([r["file_name"] for r in files])
        owned = entry_owners(root, parts["entries"], ranks)
        columns = ", ".join(f"e.{c}" for c in ENTRY_COLUMNS)
        facts_table = None
        if owned is not None:
            ordered = sorted((rank, part) for rank, ps in owned.items() for part in ps)
            part_ranks = pa.table(  # noqa: F841 read by name below
                {
                    "file_index": pa.array(range(len(ordered)), pa.uint64()),
                    "newest_rank": pa.array([rank for rank, _ in ordered], pa.int32()),
                }
            )
            con.execute("CREATE TABLE _rmq_part_ranks AS SELECT * FROM part_ranks")
            con.execute(
                "CREATE VIEW _rmq_entries AS "
                f"SELECT r.newest_rank, {columns} "
                f"FROM read_parquet({_file_list([p for _, p in ordered])}) e "
                "JOIN _rmq_part_ranks r ON r.file_index = e.file_index"
            )
            facts_table = entry_facts(owned)
        else:
            rank_table = pa.table(  # noqa: F841 read by name below
                {
                    "file_name": pa.array(list(ranks), pa.string()),
                    "newest_rank": pa.array(list(ranks.values()), pa.int32()),
                }
            )
            con.execute("CREATE TABLE _rmq_rank AS SELECT * FROM rank_table")
            con.execute(
                "CREATE VIEW _rmq_entries AS "
                "SELECT r.newest_rank, e.* EXCLUDE (file_name) "
                "FROM entries e JOIN _rmq_rank r ON r.file_name = e.file_name"
            )
        if facts_table is None:  # the statistics cannot tell: one pass over the entries
            facts_table = con.sql(
                "SELECT newest_rank, min(store_timestamp) AS min_store_timestamp, "
                "min(time_diff) AS min_time_diff FROM _rmq_entries GROUP BY newest_rank"
            ).to_arrow_table()
        by_rank = {r: n for n, r in ranks.items()}
        facts = {
            by_rank[r["newest_rank"]]: (r["min_store_timestamp"], r["min_time_diff"])
            for r in facts_table.to_pylist()
            if r["min_store_timestamp"] is not None
        }
        file_order = files_rows(files, ranks, facts)  # noqa: F841 read by name below
        con.execute("CREATE TABLE _rmq_files AS SELECT * FROM file_order")
        con.execute(persistent_macros(HASH_MACROS_SQL))
        con.execute(persistent_macros(LOOKUP_MACROS_SQL))
        mark = pa.table(  # noqa: F841 read by name below
            {
                "format": [FORMAT],
                "rmqarrow_version": [__version__],
                "dataset": [str(root)],
                "delta_version": pa.array([version], pa.int64()),
                "written_at": [_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")],
                "refresh": [refresh_command(root, target)],
            }
        )
        con.execute(f"CREATE TABLE {_MARK} AS SELECT * FROM mark")
    except duckdb.Error as exc:
        raise DatasetError(
            f"{root}: writing the database file failed: {' '.join(str(exc).split())}"
        ) from None
