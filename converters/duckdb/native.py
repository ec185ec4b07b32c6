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
from rmqarrow.converters.arrow.scan import decode_entries, files_batch, repeated_string
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow.format.layout import MappedIndex, check_header, map_regions
from rmqarrow.format.naming import list_index_files
from rmqarrow.kernels.chains import slot_positions

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


def _file_tables(
    path: Path, rank: int, key_hashes: np.ndarray, hash_slot_num: int | None,
    index_num: int | None,
) -> tuple[pa.RecordBatch, pa.Table, pa.Table]:
    """The files row, the needed slot rows and their chains' entries of one file."""
    m = map_regions(path, geometry_of(path, hash_slot_num, index_num), writable=False)
    try:
        check_header(path, m.geometry, m.header)
        name = path.name
        files = files_batch(m, name)
        wanted = np.unique(key_hashes % np.int64(m.geometry.hash_slot_num))
        heads = m.slots[wanted].astype(np.int32)
        used = heads != 0
        slots = pa.table([repeated_string(name, int(used.sum())),
                          pa.array(wanted[used].astype(np.int32)), pa.array(heads[used])],
                         schema=SCHEMAS["slots"])
        positions = slot_positions(m, wanted, max(int(m.header[0]["index_count"]), 1) - 1)
        cols = decode_entries(m.entries[positions], 0, int(m.header[0]["begin_timestamp"]),
                              m.geometry.hash_slot_num)
        cols["position"] = positions.astype(np.int32)
        schema = SCHEMAS["entries"]
        entries = pa.table(
            [pa.array(np.full(positions.size, rank, dtype=np.int32)),
             repeated_string(name, positions.size),
             *(pa.array(cols[f]) for f in schema.names[1:])],
            names=["newest_rank", *schema.names],
        )
        return files, slots, entries
    finally:
        m.close()


def attach_slots(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    key_hashes: np.ndarray,
    ranks: dict[str, int],
    hash_slot_num: int | None,
    index_num: int | None,
) -> None:
    """Register ``files``, ``slots``, ``entries`` and ``_rmq_entries`` holding only the
    slots of ``key_hashes`` (and their chains) of every file of the store ``root``.

    ``ranks`` is each file name's newest-first rank.  Every header is checked first, so
    a bad file raises its own error before anything is registered.
    """
    paths = [root] if root.is_file() else list_index_files(root)
    hashes = np.unique(np.asarray(key_hashes, dtype=np.int64))
    parts = [_file_tables(p, ranks[p.name], hashes, hash_slot_num, index_num) for p in paths]
    tables: dict[str, Any] = {
        "files": pa.Table.from_batches([f for f, _, _ in parts], schema=SCHEMAS["files"]),
        "slots": pa.concat_tables([s for _, s, _ in parts]) if parts
        else SCHEMAS["slots"].empty_table(),
    }
    entries = (pa.concat_tables([e for _, _, e in parts]) if parts else pa.table(
        [pa.array([], pa.int32())] + [pa.array([], f.type) for f in SCHEMAS["entries"]],
        names=["newest_rank", *SCHEMAS["entries"].names]))
    for name, table in tables.items():
        con.register(f"_rmq_native_{name}", table)
    con.register("_rmq_native_entries", entries)
    con.execute("CREATE OR REPLACE TEMP VIEW files AS SELECT * FROM _rmq_native_files")
    con.execute("CREATE OR REPLACE TEMP VIEW slots AS SELECT * FROM _rmq_native_slots")
    con.execute("CREATE OR REPLACE TEMP VIEW entries AS "
                "SELECT * EXCLUDE (newest_rank) FROM _rmq_native_entries")
    con.execute("CREATE OR REPLACE TEMP VIEW _rmq_entries AS "
                "SELECT * EXCLUDE (file_name) FROM _rmq_native_entries")
