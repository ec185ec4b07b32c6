"""Tables DuckDB reads on demand: a native store and a CommitLog, never loaded whole.

A :class:`LazyTable` is an Arrow stream that DuckDB may scan any number of times (the
Arrow PyCapsule protocol: every scan asks :meth:`LazyTable.__arrow_c_stream__` for a new
stream): registered once, it costs nothing until a statement reads it, and then one batch
at a time, so ``SELECT count(*) FROM files`` over a store of full files reads their
headers only, and a statement over ``entries`` streams them through DuckDB, which keeps
only what the statement itself needs (an aggregate's state, a sort's spill).

:func:`attach_native` registers ``files`` (the headers, read once), ``slots``, ``entries``
and the lookup macros' ``_rmq_entries`` / ``_rmq_files`` this way over a native store.
The store is pinned as it is when attached: its files and each file's committed entry
count (the header's ``indexCount``; a writer moves it last), so every statement of the
connection, and every scan within one statement, reads the same entries while a broker
appends.  A file the broker expires after that fails the statement reading it, in one line.

:func:`attach_messages` registers the ``messages`` view over a CommitLog the same way: a
damaged log fails only the statements that read ``messages`` (with the CommitLog's own
one-line error, :func:`statement_error`), and is said once as a note when it is attached.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA, messages_reader
from rmqarrow.converters.arrow.scan import decode_entries, files_batch, repeated_string
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow.errors import RmqArrowError, StoreChangedError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import (
    ENTRY_DTYPE,
    HASH_SLOT_SIZE,
    HEADER_SIZE,
    INDEX_SIZE,
    SLOT_DTYPE,
    Geometry,
    GeometryHint,
    check_header,
    map_regions,
)
from rmqarrow.format.naming import list_index_files

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "BATCH_ROWS",
    "LazyTable",
    "NativeSnapshot",
    "attach_messages",
    "attach_native",
    "native_views",
    "statement_error",
]

_log = logging.getLogger(__name__)

#: Rows per streamed batch: a few MB of Arrow, what a statement's scan holds at once.
BATCH_ROWS = 1 << 17

_FAILURE_LOCK = threading.Lock()
_LAST_FAILURE: list[BaseException | None] = [None]


class LazyTable:
    """An Arrow stream of ``schema`` made afresh by ``batches()`` for every scan.

    An rmqarrow error or a Ctrl-C raised while DuckDB reads it is remembered (DuckDB
    wraps it in its own error with a traceback in the text), so :func:`statement_error`
    can give the original instead.
    """

    def __init__(self, schema: pa.Schema, batches: Callable[[], Iterator[pa.RecordBatch]]):
        self.schema = schema
        self._batches = batches

    def _noting(self) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._batches()
        except (RmqArrowError, OSError, KeyboardInterrupt) as exc:
            with _FAILURE_LOCK:
                _LAST_FAILURE[0] = exc
            raise

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        reader = pa.RecordBatchReader.from_batches(self.schema, self._noting())
        return reader.__arrow_c_stream__(requested_schema)


def clear_failure() -> None:
    """Forget the last failure of a lazy table (call before a statement runs)."""
    with _FAILURE_LOCK:
        _LAST_FAILURE[0] = None


_DETAIL = re.compile(r"\s*(?:\. )?Detail: Python exception:.*", re.DOTALL)


def statement_error(exc: BaseException) -> BaseException:
    """What a failed statement says: the error a lazy table hit while DuckDB read it (an
    rmqarrow error, a Ctrl-C), else DuckDB's message without the Python traceback it
    quotes."""
    with _FAILURE_LOCK:
        failure, _LAST_FAILURE[0] = _LAST_FAILURE[0], None
    if failure is not None:
        return failure
    if type(exc).__name__ == "InterruptException" or str(exc) == "Query interrupted":
        return KeyboardInterrupt()  # DuckDB caught the Ctrl-C and stopped the statement
    text = _DETAIL.sub("", str(exc)).strip()
    return type(exc)(text) if text != str(exc) else exc


# --- a native store ---------------------------------------------------------------------


@dataclass(frozen=True)
class _File:
    path: Path
    geometry: Geometry
    count: int  # the header's indexCount when pinned: entries 1 .. count - 1
    begin_timestamp: int
    rank: int  # newest first, in Java name order


def _gone(path: Path) -> StoreChangedError:
    return StoreChangedError(
        f"{path}: removed from the store since it was opened (the broker expired it); "
        "run the statement again"
    )


def _read(fd: int, path: Path, size: int, offset: int) -> bytes:
    raw = os.pread(fd, size, offset)
    if len(raw) != size:
        raise StoreChangedError(
            f"{path}: {len(raw)} bytes at offset {offset}, expected {size}: the file was cut "
            "short since it was opened; run the statement again"
        )
    return raw


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise _gone(path) from None


class NativeSnapshot:
    """The files of a native store as they are now: headers read and checked once."""

    def __init__(
        self,
        root: Path,
        ranks: dict[str, int],
        geometry: GeometryHint,
    ) -> None:
        paths = [root] if root.is_file() else list_index_files(root)
        self.files: list[_File] = []
        rows: list[pa.RecordBatch] = []
        for path in paths:
            mapped = map_regions(path, geometry_of(path, geometry), writable=False)
            try:  # a bad file raises its own error before anything is registered
                check_header(path, mapped.geometry, mapped.header)
                h = mapped.header[0]
                rows.append(files_batch(mapped, path.name))
                self.files.append(
                    _File(
                        path,
                        mapped.geometry,
                        max(int(h["index_count"]), 1),
                        int(h["begin_timestamp"]),
                        ranks[path.name],
                    )
                )
            finally:
                mapped.close()
        self.files_table = pa.Table.from_batches(rows, schema=SCHEMAS["files"])
        self._facts: dict[str, tuple[int, int]] | None = None

    def slots(self) -> Iterator[pa.RecordBatch]:
        schema = SCHEMAS["slots"]
        for f in self.files:
            fd = _open(f.path)
            try:
                n = f.geometry.hash_slot_num
                for start in range(0, n, BATCH_ROWS):
                    stop = min(start + BATCH_ROWS, n)
                    raw = _read(
                        fd,
                        f.path,
                        (stop - start) * HASH_SLOT_SIZE,
                        HEADER_SIZE + start * HASH_SLOT_SIZE,
                    )
                    heads = np.frombuffer(raw, SLOT_DTYPE)
                    idx = np.flatnonzero(heads)
                    if idx.size:
                        yield pa.RecordBatch.from_arrays(
                            [
                                repeated_string(f.path.name, idx.size),
                                (idx + start).astype(np.int32),
                                heads[idx].astype(np.int32),
                            ],
                            schema=schema,
                        )
            finally:
                os.close(fd)

    def _records(self, f: _File) -> Iterator[tuple[int, np.ndarray]]:
        """(first position, records) of each batch of the file's pinned entries."""
        fd = _open(f.path)
        try:
            for start in range(1, f.count, BATCH_ROWS):
                stop = min(start + BATCH_ROWS, f.count)
                offset = f.geometry.entries_offset + start * INDEX_SIZE
                raw = _read(fd, f.path, (stop - start) * INDEX_SIZE, offset)
                yield start, np.frombuffer(raw, ENTRY_DTYPE)
        finally:
            os.close(fd)

    def entries(self) -> Iterator[pa.RecordBatch]:
        """``newest_rank`` and the ``entries`` columns."""
        schema = ranked_entries_schema()
        names = SCHEMAS["entries"].names
        for f in self.files:
            for start, records in self._records(f):
                cols = decode_entries(records, start, f.begin_timestamp, f.geometry.hash_slot_num)
                n = len(records)
                arrays = [
                    pa.array(np.full(n, f.rank, dtype=np.int32)),
                    repeated_string(f.path.name, n),
                    *(cols[c] for c in names[1:]),
                ]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    def entry_facts(self) -> dict[str, tuple[int, int]]:
        """Per file name, the least store time and time diff of its entries (files
        without entries are absent); read once, on first use."""
        if self._facts is None:
            facts: dict[str, tuple[int, int]] = {}
            for f in self.files:
                least: int | None = None
                for _, records in self._records(f):
                    low = int(records["time_diff"].min())
                    least = low if least is None else min(least, low)
                if least is not None:
                    facts[f.path.name] = (f.begin_timestamp + least * 1000, least)
            self._facts = facts
        return self._facts


def ranked_entries_schema() -> pa.Schema:
    return pa.schema([pa.field("newest_rank", pa.int32()), *SCHEMAS["entries"]])


def attach_native(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    ranks: dict[str, int],
    geometry: GeometryHint,
    files_table: Callable[[NativeSnapshot], pa.Table],
) -> NativeSnapshot:
    """Register ``files``, ``slots``, ``entries``, ``_rmq_entries`` and ``_rmq_files``
    over the native store ``root`` as lazy tables of one pinned snapshot.

    ``files_table(snapshot)`` makes the ``_rmq_files`` table the lookup macros read (its
    per-file facts need one pass over the entries: done when a lookup first reads it).
    """
    snap = NativeSnapshot(root, ranks, geometry)
    con.register("_rmq_native_files", snap.files_table)
    con.register("_rmq_native_slots", LazyTable(SCHEMAS["slots"], snap.slots))
    con.register("_rmq_native_entries", LazyTable(ranked_entries_schema(), snap.entries))
    held: list[pa.Table] = []

    def rmq_files() -> Iterator[pa.RecordBatch]:
        if not held:
            held.append(files_table(snap))
        yield from held[0].to_batches()

    con.register("_rmq_files", LazyTable(files_table_schema(), rmq_files))
    native_views(con)
    return snap


#: The ``_rmq_files`` table the lookup SQL reads (:mod:`rmqarrow.converters.duckdb.walk`).
_FILES_SCHEMA = pa.schema(
    [
        ("newest_rank", pa.int32()),
        ("file_name", pa.string()),
        ("begin_timestamp", pa.int64()),
        ("end_timestamp", pa.int64()),
        ("newer_min_begin", pa.int64()),
        ("hash_slot_num", pa.int32()),
        ("index_count", pa.int32()),
        ("min_store_timestamp", pa.int64()),
        ("min_time_diff", pa.int32()),
    ]
)


def files_table_schema() -> pa.Schema:
    return _FILES_SCHEMA


def files_rows(
    files: list[dict[str, Any]], ranks: dict[str, int], facts: dict[str, tuple[int, int]]
) -> pa.Table:
    """``_rmq_files`` from the ``files`` rows, the names' ranks and each file's least store
    time and time diff (a file without entries is never searched)."""
    by_name = {r["file_name"]: r for r in files}
    rows = []
    newer_min = JAVA_LONG_MAX
    for name in sorted(ranks, key=ranks.__getitem__):
        r = by_name[name]
        least = facts.get(name)
        rows.append(
            {
                "newest_rank": ranks[name],
                "file_name": name,
                "begin_timestamp": r["begin_timestamp"],
                "end_timestamp": r["end_timestamp"],
                "newer_min_begin": newer_min,
                "hash_slot_num": r["hash_slot_num"],
                "index_count": r["index_count"],
                "min_store_timestamp": JAVA_LONG_MAX if least is None else least[0],
                "min_time_diff": 0 if least is None else least[1],
            }
        )
        newer_min = min(newer_min, r["begin_timestamp"])
    return pa.Table.from_pylist(rows, schema=_FILES_SCHEMA)


# --- a CommitLog ------------------------------------------------------------------------


def attach_messages(con: duckdb.DuckDBPyConnection, commitlog: str | os.PathLike[str]) -> None:
    """The ``messages`` view over ``commitlog``, decoded each time a statement reads it.

    The log is opened once now: when that fails (a newest file being born, a torn tail,
    a wrong folder) the problem is said once as a note and the view stays, failing with
    the same line only in the statements that read it.
    """
    try:
        messages_reader(commitlog).close()
    except RmqArrowError as exc:
        _log.info(
            "the messages view cannot be read (%s); statements over files, slots and "
            "entries are not affected",
            " ".join(str(exc).split()),
        )

    def batches() -> Iterator[pa.RecordBatch]:
        yield from messages_reader(commitlog)

    con.register("_rmq_messages_stream", LazyTable(MESSAGES_SCHEMA, batches))
    con.execute("CREATE OR REPLACE TEMP VIEW messages AS SELECT * FROM _rmq_messages_stream")


def native_views(con: Any) -> None:
    """The published views over a native store's ``_rmq_native_*`` relations, however
    they were registered (materialised or streamed)."""
    con.execute("CREATE OR REPLACE TEMP VIEW files AS SELECT * FROM _rmq_native_files")
    con.execute("CREATE OR REPLACE TEMP VIEW slots AS SELECT * FROM _rmq_native_slots")
    con.execute(
        "CREATE OR REPLACE TEMP VIEW entries AS "
        "SELECT * EXCLUDE (newest_rank) FROM _rmq_native_entries"
    )
    con.execute(
        "CREATE OR REPLACE TEMP VIEW _rmq_entries AS "
        "SELECT * EXCLUDE (file_name) FROM _rmq_native_entries"
    )
