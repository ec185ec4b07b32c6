"""Tiered index files (RocketMQ RIP-65, both forms) as Arrow tables, and back to bytes.

:func:`tiered_tables` reads a file or folder that :func:`rmqarrow.tiered.open_tiered`
accepts into the three tables of :data:`rmqarrow.converters.schema.TIERED_SCHEMAS`;
:func:`file_bytes` turns one file's rows back into its exact bytes.  The tables carry
every byte of a file: the header fields, every slot whose 8 bytes are not zero, every
local item record ``1 .. itemCount`` and any other record that is not zero, every
compacted item.  The export, the import and the SQL engines all go through here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from rmqarrow.converters.schema import (
    TIERED_FILES_SCHEMA,
    TIERED_ITEMS_SCHEMA,
    TIERED_SLOTS_SCHEMA,
    numpy_dtype,
)
from rmqarrow.errors import DatasetError
from rmqarrow.format.layout import GeometryHint
from rmqarrow.tiered import (
    CompactedIndexFile,
    TieredIndexFile,
    TieredIndexStore,
    folder_geometry,
    open_file,
    open_tiered,
    tiered_file_paths,
)
from rmqarrow.tiered.layout import (
    COMPACT_ITEM_DTYPE,
    COMPACT_ITEM_SIZE,
    COMPACT_SLOT_DTYPE,
    HEADER_DTYPE,
    HEADER_SIZE,
    ITEM_DTYPE,
    SLOT_DTYPE,
    items_position,
    unsealed_size,
)

__all__ = ["TieredTables", "file_bytes", "tiered_tables"]

_ITEM_FIELDS = ("hash_code", "topic_id", "queue_id", "offset", "size", "time_diff")


@dataclass(frozen=True)
class TieredTables:
    """The three tables of one tiered export (see the schemas)."""

    files: pa.Table
    slots: pa.Table
    items: pa.Table

    def file_rows(self) -> list[dict[str, object]]:
        """The files table as dicts, in table order."""
        rows: list[dict[str, object]] = self.files.to_pylist()
        return rows


def _names(file_name: str, n: int) -> pa.Array:
    """The file name ``n`` times, without a Python list of ``n`` strings."""
    return pa.repeat(pa.scalar(file_name, pa.string()), n)


def _store_times(diff: np.ndarray, begin: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        out: np.ndarray = diff.astype(np.int64) * np.int64(1000) + np.int64(begin)
    return out


def _local(f: TieredIndexFile, rel: str) -> tuple[dict[str, object], pa.Table, pa.Table]:
    s, n = f.hash_slot_num, f.index_num
    raw = np.memmap(f.path, np.uint8, mode="r")
    header = np.frombuffer(raw, HEADER_DTYPE, 1, 0)[0]
    slots = np.frombuffer(raw, SLOT_DTYPE, s, HEADER_SIZE)
    records = np.frombuffer(raw, ITEM_DTYPE, n, items_position(s))
    count = int(header["item_count"])
    nonzero: np.ndarray = np.asarray(raw[items_position(s) :].reshape(n, 32).any(axis=1))
    nonzero[1 : count + 1] = True
    idx = np.flatnonzero(nonzero)
    items = records[idx]
    keep = np.flatnonzero((slots["item_index"] != 0) | (slots["unused"] != 0))
    file_name = f.path.name
    info = _file_row(f.path.name, rel, "unsealed", header, s, n, f.begin_timestamp, int(raw.size))
    slot_table = pa.table(
        {
            "file_name": _names(file_name, len(keep)),
            "slot": pa.array(keep.astype(np.int32)),
            "head": pa.array(slots["item_index"][keep].astype(np.int32)),
            "unused": pa.array(slots["unused"][keep].astype(np.int32)),
            "position": pa.nulls(len(keep), pa.int32()),
            "length": pa.nulls(len(keep), pa.int32()),
        },
        schema=TIERED_SLOTS_SCHEMA,
    )
    hashes = items["hash_code"].astype(np.int64)
    item_table = pa.table(
        {
            "file_name": _names(file_name, len(idx)),
            "position": pa.array(idx.astype(np.int32)),
            "slot": pa.array(np.fmod(hashes, s).astype(np.int32)),
            "slot_rank": pa.nulls(len(idx), pa.int32()),
            **{
                k: pa.array(items[k].astype(numpy_dtype(TIERED_ITEMS_SCHEMA.field(k).type)))
                for k in _ITEM_FIELDS
            },
            "next_index": pa.array(items["next_index"].astype(np.int32)),
            "store_time": pa.array(_store_times(items["time_diff"], f.begin_timestamp)),
        },
        schema=TIERED_ITEMS_SCHEMA,
    )
    del raw
    return info, slot_table, item_table


def _file_row(
    name: str,
    rel: str,
    form: str,
    header: np.void,
    s: int,
    n: int | None,
    query_begin: int,
    size: int,
) -> dict[str, object]:
    return {
        "file_name": name,
        "relative_path": rel,
        "form": form,
        "file_size": size,
        "magic": int(header["magic"]),
        "begin_timestamp": int(header["begin_timestamp"]),
        "end_timestamp": int(header["end_timestamp"]),
        "hash_slot_count": int(header["hash_slot_count"]),
        "item_count": int(header["item_count"]),
        "hash_slot_num": s,
        "index_num": n,
        "query_begin_timestamp": query_begin,
    }


def _compacted(f: CompactedIndexFile, rel: str) -> tuple[dict[str, object], pa.Table, pa.Table]:
    s = f.hash_slot_num
    file_name = f.path.name
    size = f.size
    if size == 0:
        empty_header = np.zeros(1, HEADER_DTYPE)[0]
        info = _file_row(file_name, rel, "compacted", empty_header, s, None, f.begin_timestamp, 0)
        return info, TIERED_SLOTS_SCHEMA.empty_table(), TIERED_ITEMS_SCHEMA.empty_table()
    raw = np.fromfile(f.path, np.uint8)
    header = np.frombuffer(raw, HEADER_DTYPE, 1, 0)[0]
    slots = np.frombuffer(raw, COMPACT_SLOT_DTYPE, s, HEADER_SIZE)
    base = items_position(s)
    k = (size - base) // COMPACT_ITEM_SIZE
    items = np.frombuffer(raw, COMPACT_ITEM_DTYPE, k, base)
    slot_of = np.full(k, -1, np.int64)
    rank = np.full(k, -1, np.int64)
    pos = slots["position"].astype(np.int64)
    length = slots["length"].astype(np.int64)
    ok = (length > 0) & (pos >= base) & ((pos - base) % COMPACT_ITEM_SIZE == 0)
    for sl in np.flatnonzero(ok).tolist():  # S iterations over slot ranges (not items)
        start = (int(pos[sl]) - base) // COMPACT_ITEM_SIZE
        stop = min(start + int(length[sl]) // COMPACT_ITEM_SIZE, k)
        if start < stop:
            slot_of[start:stop] = sl
            rank[start:stop] = np.arange(stop - start)
    keep = np.flatnonzero((slots["position"] != 0) | (slots["length"] != 0))
    info = _file_row(file_name, rel, "compacted", header, s, None, f.begin_timestamp, size)
    slot_table = pa.table(
        {
            "file_name": _names(file_name, len(keep)),
            "slot": pa.array(keep.astype(np.int32)),
            "head": pa.nulls(len(keep), pa.int32()),
            "unused": pa.nulls(len(keep), pa.int32()),
            "position": pa.array(slots["position"][keep].astype(np.int32)),
            "length": pa.array(slots["length"][keep].astype(np.int32)),
        },
        schema=TIERED_SLOTS_SCHEMA,
    )
    has = slot_of >= 0
    item_table = pa.table(
        {
            "file_name": _names(file_name, k),
            "position": pa.array(np.arange(k, dtype=np.int32)),
            "slot": pa.array(slot_of.astype(np.int32), mask=~has),
            "slot_rank": pa.array(rank.astype(np.int32), mask=~has),
            **{
                c: pa.array(items[c].astype(numpy_dtype(TIERED_ITEMS_SCHEMA.field(c).type)))
                for c in _ITEM_FIELDS
            },
            "next_index": pa.nulls(k, pa.int32()),
            "store_time": pa.array(_store_times(items["time_diff"], f.begin_timestamp)),
        },
        schema=TIERED_ITEMS_SCHEMA,
    )
    return info, slot_table, item_table


def tiered_tables(
    path: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> TieredTables:
    """The tables of a tiered file or folder (files oldest first, as a store lists them);
    what ``geometry`` does not give is found by the tiered rules."""
    root = Path(path)
    opened, _note = open_tiered(root, geometry)
    if isinstance(opened, TieredIndexStore):  # every file, replaced by a segment or not
        opened.close()
        s, n, _ = folder_geometry(root, geometry)
        files = [open_file(p, s, n) for p in tiered_file_paths(root)]
    else:
        files = [opened]
    try:
        infos: list[dict[str, object]] = []
        slot_tables: list[pa.Table] = []
        item_tables: list[pa.Table] = []
        for f in files:
            rel = f.path.name if f.path == root else f.path.relative_to(root).as_posix()
            if isinstance(f, TieredIndexFile):
                info, st, it = _local(f, rel)
            else:
                info, st, it = _compacted(f, rel)
            infos.append(info)
            slot_tables.append(st)
            item_tables.append(it)
    finally:
        for f in files:
            f.close()
    return TieredTables(
        pa.Table.from_pylist(infos, schema=TIERED_FILES_SCHEMA),
        pa.concat_tables(slot_tables) if slot_tables else TIERED_SLOTS_SCHEMA.empty_table(),
        pa.concat_tables(item_tables) if item_tables else TIERED_ITEMS_SCHEMA.empty_table(),
    )


def _fail(name: str, what: str) -> DatasetError:
    return DatasetError(f"tiered file {name!r}: {what}; the dataset is damaged or was edited")


def file_bytes(info: dict[str, object], slots: pa.Table, items: pa.Table) -> bytes:
    """The exact bytes of one file from its files row and its slot and item rows."""
    name = str(info["file_name"])
    s = int(info["hash_slot_num"])  # type: ignore[call-overload]
    size = int(info["file_size"])  # type: ignore[call-overload]
    form = info["form"]
    if form == "compacted" and size == 0:
        if items.num_rows or slots.num_rows:
            raise _fail(name, "an empty segment with slot or item rows")
        return b""
    if s < 1 or size < HEADER_SIZE:
        raise _fail(name, f"hash_slot_num {s} or file_size {size} impossible")
    if form == "unsealed":
        n = int(info["index_num"])  # type: ignore[call-overload]
        if size != unsealed_size(s, n):
            raise _fail(name, f"file_size {size} is not 28 + 8*S + 32*N")
        item_dtype, item_size, slot_dtype = ITEM_DTYPE, 32, SLOT_DTYPE
        slot_cols, count = ("head", "unused"), n
    elif form == "compacted":
        rest = size - items_position(s)
        if rest < 0 or rest % COMPACT_ITEM_SIZE:
            raise _fail(name, f"file_size {size} is not 28 + 8*S + 28*k")
        item_dtype, item_size, slot_dtype = COMPACT_ITEM_DTYPE, 28, COMPACT_SLOT_DTYPE
        slot_cols, count = ("position", "length"), rest // COMPACT_ITEM_SIZE
    else:
        raise _fail(name, f"form {form!r} is neither 'unsealed' nor 'compacted'")
    out = np.zeros(size, np.uint8)
    header = np.zeros(1, HEADER_DTYPE)
    for field in HEADER_DTYPE.names or ():
        header[field] = info[field]
    out[:HEADER_SIZE] = header.view(np.uint8)
    slot_no = slots.column("slot").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(slot_no) and (
        slot_no.min() < 0 or slot_no.max() >= s or len(np.unique(slot_no)) != len(slot_no)
    ):
        raise _fail(name, "slot numbers outside 0 .. S-1 or repeated")
    slot_rec = np.zeros(len(slot_no), slot_dtype)
    for col, field in zip(slot_cols, slot_dtype.names or (), strict=True):
        column = slots.column(col)
        if column.null_count:
            raise _fail(name, f"null {col} in its slot rows")
        slot_rec[field] = column.to_numpy(zero_copy_only=False)
    slot_area = out[HEADER_SIZE : items_position(s)].view(slot_dtype)
    slot_area[slot_no] = slot_rec
    pos = items.column("position").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(pos) and (pos.min() < 0 or pos.max() >= count or len(np.unique(pos)) != len(pos)):
        raise _fail(name, "item positions outside the file or repeated")
    rec = np.zeros(len(pos), item_dtype)
    for field in item_dtype.names or ():
        column = items.column(field)
        if column.null_count:
            raise _fail(name, f"null {field} in its item rows")
        rec[field] = column.to_numpy(zero_copy_only=False)
    item_area = out[items_position(s) :].view(item_dtype)
    assert item_size == item_dtype.itemsize
    item_area[pos] = rec
    return out.tobytes()
