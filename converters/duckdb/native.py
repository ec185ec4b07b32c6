"""DuckDB lookups over a native store that load only the slots the queries need.

:func:`rmqarrow.converters.duckdb.sql.connect` over a native store loads every entry of
every file into DuckDB (a full default file is 20 M rows), so one lookup over a store of
dozens of files would cost minutes and tens of GB.  A lookup reads one hash slot per file,
so :func:`rmqarrow.converters.duckdb.sql.connect_for_queries` (with :func:`attach_slots`)
gives DuckDB only that: for each file, the ``files`` row
(its header), the ``slots`` rows of the queries' slots, and every entry of those slots
(found by one streamed pass over the stored hashes, :func:`rmqarrow.kernels.chains.
slot_positions`, whose resident memory stays one chunk: a few entries per slot reach
DuckDB).  The same lookup SQL (:mod:`rmqarrow.converters.duckdb.walk`) then answers.

The answers equal the whole-store connection's on any file, damaged ones included (the
slot's entries are the same rows, reached by the chain or not).  The per-file facts the SQL
reads (least store time and time diff of the entries) are computed over the loaded
entries: that can only turn the plain join into the cut window, which is exact for any
set holding all of the slot's entries.  :func:`chain_positions` (the entries a chain walk
reaches) is kept for tests and diagnostics.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from rmqarrow.converters.arrow.scan import decode_entries, files_batch
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.duckdb.lazy import native_views
from rmqarrow.converters.schema import SCHEMAS, numpy_dtype

from rmqarrow.format.layout import (
    GeometryHint,
    HeaderState,
    MappedIndex,
    StoreSnapshot,
    as_of,
    check_header,
    map_regions,
)
from rmqarrow.format.naming import list_index_files
from rmqarrow.index.health import expired_during_run
from rmqarrow.kernels.chains import slot_positions
from rmqarrow.kernels.walk import committed_heads

if TYPE_CHECKING:
    import duckdb

__all__ = ["attach_slots", "chain_positions"]


def chain_positions(m: MappedIndex, slots: np.ndarray) -> np.ndarray:
    """The positions (sorted, distinct) of the entries on the chains of ``slots``.

    A chain is followed from its head while ``prev`` points strictly backwards to an
    entry the file holds (``1 .. index_count - 1``), all chains a step at a time.
    """
    count = max(int(m.header[0]["index_count"]), 1)
    heads = m.slots[slots].astype(np.int64)
    pos = heads[(heads >= 1) & (heads < count)]
    found: list[np.ndarray] = []
    prev_index = m.entries["prev_index"]
    while pos.size:
        found.append(pos)
        prev = prev_index[pos].astype(np.int64)
        pos = prev[(prev >= 1) & (prev < pos)]
    if not found:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(found))


class _Columns:
    """The rows of every file, gathered as plain columns and made into one Arrow table
    per relation at the end: a table (or batch) per file costs tens of kilobytes of
    Arrow and DuckDB bookkeeping each, which at thousands of files outweighs the rows."""

    def __init__(self) -> None:
        self.files: list[list[Any]] = [[] for _ in SCHEMAS["files"].names]
        self.slot_names: list[str] = []
        self.slot_counts: list[int] = []
        self.slots: list[np.ndarray] = []
        self.heads: list[np.ndarray] = []
        self.entry_ranks: list[np.ndarray] = []
        self.entry_names: list[str] = []
        self.entry_counts: list[int] = []
        self.entries: dict[str, list[np.ndarray]] = {f: [] for f in SCHEMAS["entries"].names[1:]}

    def add_file(
        self,
        path: Path,
        rank: int,
        key_hashes: np.ndarray,
        geometry: GeometryHint,
        pinned: HeaderState | None = None,
    ) -> None:
        """The files row, the needed slot rows and their chains' entries of one file, as
        of ``pinned`` (its header in a snapshot) when given."""
        mapped = map_regions(path, geometry_of(path, geometry), writable=False)
        try:
            check_header(path, mapped.geometry, mapped.header)
            m = mapped if pinned is None else as_of(mapped, pinned)
            name = path.name
            for column, value in zip(
                self.files, files_batch(m, name).to_pylist()[0].values(), strict=True
            ):
                column.append(value)
            wanted = np.unique(key_hashes % np.int64(m.geometry.hash_slot_num))
            count = max(int(m.header[0]["index_count"]), 1)
            # a head past the count (written after the header was read) leads back to the
            # newest committed entry, as in the native walk; one no walk explains is empty
            heads = committed_heads(m, m.slots[wanted].astype(np.int64), wanted, count)
            heads = np.where(heads < 0, 0, heads).astype(np.int32)
            used = heads != 0
            self.slot_names.append(name)
            self.slot_counts.append(int(used.sum()))
            self.slots.append(wanted[used].astype(np.int32))
            self.heads.append(heads[used])
            positions = slot_positions(m, wanted, count - 1)
            cols = decode_entries(
                m.entries[positions],
                0,
                int(m.header[0]["begin_timestamp"]),
                m.geometry.hash_slot_num,
            )
            cols["position"] = positions.astype(np.int32)
            self.entry_ranks.append(np.full(positions.size, rank, dtype=np.int32))
            self.entry_names.append(name)
            self.entry_counts.append(positions.size)
            for f, values in self.entries.items():
                values.append(np.asarray(cols[f]))
        finally:
            mapped.close()

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """``files``, ``slots`` and the entries with ``newest_rank`` first."""
        files = pa.table(self.files, schema=SCHEMAS["files"])
        slots = pa.table(
            [
                _names(self.slot_names, self.slot_counts),
                pa.array(_cat(self.slots, np.int32)),
                pa.array(_cat(self.heads, np.int32)),
            ],
            schema=SCHEMAS["slots"],
        )
        schema = SCHEMAS["entries"]
        entries = pa.table(
            [
                pa.array(_cat(self.entry_ranks, np.int32)),
                _names(self.entry_names, self.entry_counts),
                *(
                    pa.array(_cat(self.entries[f.name], numpy_dtype(f.type)), f.type)
                    for f in list(schema)[1:]
                ),
            ],
            names=["newest_rank", *schema.names],
        )
        return files, slots, entries


def _cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)


def _names(names: list[str], counts: list[int]) -> pa.Array:
    """Each name repeated its count of times, as one dictionary-free string array."""
    if not names:
        return pa.array([], pa.string())
    index = np.repeat(np.arange(len(names), dtype=np.int32), counts)
    return pa.DictionaryArray.from_arrays(pa.array(index), pa.array(names, pa.string())).cast(
        pa.string()
    )


def attach_slots(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    key_hashes: np.ndarray,
    ranks: dict[str, int],
    geometry: GeometryHint,
    snapshot: StoreSnapshot | None = None,
) -> None:
    """Register ``files``, ``slots``, ``entries`` and ``_rmq_entries`` holding only the
    slots of ``key_hashes`` (and their chains) of every file of the store ``root``.

    ``ranks`` is each file name's newest-first rank.  Every header is checked first, so
    a bad file raises its own error before anything is registered.  With ``snapshot``
    (pinned headers by file name), exactly its files are read, each as of its pinned
    header; a file expired (deleted) since is left out with a note.
    """
    if snapshot is not None:
        paths = [root] if root.is_file() else [root / name for name in snapshot]
    else:
        paths = [root] if root.is_file() else list_index_files(root)
    hashes = np.unique(np.asarray(key_hashes, dtype=np.int64))
    gathered = _Columns()
    for p in paths:
        pinned = None if snapshot is None else snapshot.get(p.name)
        try:
            gathered.add_file(p, ranks[p.name], hashes, geometry, pinned)
        except FileNotFoundError:  # StoreNotFoundError too
            if p.exists():
                raise
            expired_during_run(p)  # a broker expires its oldest files: no damage
    files, slots, entries = gathered.tables()
    tables: dict[str, Any] = {"files": files, "slots": slots}
    for name, table in tables.items():
        con.register(f"_rmq_native_{name}", table)
    con.register("_rmq_native_entries", entries)
    native_views(con)
