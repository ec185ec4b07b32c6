"""Straightforward decoding of native index files into the three Arrow tables.

This is the reference decoder: one file at a time, fully in memory, no cleverness.  The
streaming scanner and the exporters must agree with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from rmqarrow.converters.schema import ENTRIES_SCHEMA, FILES_SCHEMA, SLOTS_SCHEMA

from rmqarrow.format.layout import (
    Geometry,
    GeometryHint,
    check_header,
    geometry_hint,
    map_regions,
)
from rmqarrow.format.naming import list_index_files

__all__ = ["IndexTables", "file_tables", "geometry_of", "store_tables"]


@dataclass(frozen=True)
class IndexTables:
    """The ``files``, ``slots`` and ``entries`` tables of one file or a whole store."""

    files: pa.Table
    slots: pa.Table
    entries: pa.Table

    @classmethod
    def concat(cls, parts: Iterable[IndexTables]) -> IndexTables:
        parts = list(parts)
        return cls(
            pa.concat_tables([p.files for p in parts]) if parts else FILES_SCHEMA.empty_table(),
            pa.concat_tables([p.slots for p in parts]) if parts else SLOTS_SCHEMA.empty_table(),
            pa.concat_tables([p.entries for p in parts]) if parts else ENTRIES_SCHEMA.empty_table(),
        )


def geometry_of(
    path: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> Geometry:
    """The geometry to read ``path`` with (given values, else defaults, else 1:4 ratio)."""
    return geometry.resolve(Path(path).stat().st_size)[0]


def file_tables(
    path: str | os.PathLike[str],
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    *,
    geometry: Geometry | GeometryHint | None = None,
) -> IndexTables:
    """Decode one native index file (geometry: ``geometry``, or ``hash_slot_num`` and
    ``index_num``, not both forms; what is not given is fitted from the size)."""
    p = Path(path)
    geometry = geometry_of(p, geometry_hint(geometry, hash_slot_num, index_num))
    mapped = map_regions(p, geometry, writable=False)
    try:
        check_header(p, geometry, mapped.header)
        h = mapped.header[0]
        name = p.name
        files = pa.table(
            {
                "file_name": [name],
                "begin_timestamp": [int(h["begin_timestamp"])],
                "end_timestamp": [int(h["end_timestamp"])],
                "begin_phy_offset": [int(h["begin_phy_offset"])],
                "end_phy_offset": [int(h["end_phy_offset"])],
                "hash_slot_count": [int(h["hash_slot_count"])],
                "index_count": [int(h["index_count"])],
                "hash_slot_num": [geometry.hash_slot_num],
                "index_num": [geometry.index_num],
            },
            schema=FILES_SCHEMA,
        )
        slot_idx = np.flatnonzero(mapped.slots).astype(np.int32)
        slots = pa.table(
            {
                "file_name": pa.array([name] * len(slot_idx), pa.string()),
                "slot": slot_idx,
                "head": mapped.slots[slot_idx].astype(np.int32),
            },
            schema=SLOTS_SCHEMA,
        )
        count = max(int(h["index_count"]), 1)
        e = mapped.entries[1:count]
        key_hash = e["key_hash"].astype(np.int32)
        time_diff = e["time_diff"].astype(np.int32)
        with np.errstate(over="ignore"):
            store_ts = np.int64(h["begin_timestamp"]) + time_diff.astype(np.int64) * 1000
        entries = pa.table(
            {
                "file_name": pa.array([name] * len(e), pa.string()),
                "position": np.arange(1, count, dtype=np.int32),
                "key_hash": key_hash,
                "slot": np.fmod(key_hash, np.int32(geometry.hash_slot_num)).astype(np.int32),
                "phy_offset": e["phy_offset"].astype(np.int64),
                "time_diff": time_diff,
                "store_timestamp": store_ts,
                "prev_index": e["prev_index"].astype(np.int32),
            },
            schema=ENTRIES_SCHEMA,
        )
        return IndexTables(files, slots, entries)
    finally:
        mapped.close()


def store_tables(
    store_dir: str | os.PathLike[str],
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    *,
    geometry: Geometry | GeometryHint | None = None,
) -> IndexTables:
    """Decode every index file of a store directory (oldest first) into one set of tables
    (geometry as for :func:`file_tables`)."""
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    return IndexTables.concat(file_tables(p, geometry=hint) for p in list_index_files(store_dir))
