"""The Delta add action of a Parquet part rmqarrow wrote, with statistics from its footer.

Delta readers skip files by the statistics of their add actions (``numRecords``,
``minValues``, ``maxValues``, ``nullCount``), as they skip row groups by the footer's:
the part's own footer already holds them per row group, so they are folded here rather
than computed again from the data.  A column gets a bound only when every non-empty row
group proves it (statistics present and exact, never a truncated string); a bound left
out only means a reader cannot skip the file by that column, never a wrong answer.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake.transaction import AddAction

from rmqarrow._paths import DatasetLocation, ObjectLocation
from rmqarrow.errors import DatasetError

__all__ = ["add_action", "file_stats", "relative_path"]

#: Part names rmqarrow writes; a Delta path is a relative URI, so these need no escaping.
_SAFE = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


def _bounded(type_: pa.DataType) -> bool:
    """Column types whose min/max Delta records: integers, strings, booleans (the types
    of every published table; lists and binaries get a null count at most)."""
    return bool(
        pa.types.is_integer(type_) or pa.types.is_string(type_) or pa.types.is_boolean(type_)
    )


def parquet_source(path: str | os.PathLike[str] | ObjectLocation) -> Any:
    """What pyarrow's Parquet reader opens for ``path``: the path itself, or a file of
    object storage opened through its file system (close it when done)."""
    if isinstance(path, ObjectLocation):
        fs, key = path.filesystem()
        return fs.open_input_file(key)
    return path


def file_stats(path: str | os.PathLike[str] | ObjectLocation) -> dict[str, Any]:
    """Delta statistics of the Parquet file at ``path``, from its footer only."""
    try:
        meta = pq.ParquetFile(parquet_source(path)).metadata
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{path}: not a readable Parquet file: {exc}") from None
    schema = meta.schema.to_arrow_schema()
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for index, field in enumerate(schema):
        if pa.types.is_nested(field.type):
            continue  # a list's leaves are not the column Delta names
        low: Any = None
        high: Any = None
        count: int | None = 0
        exact = _bounded(field.type)
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            if group.num_rows == 0:
                continue
            stats = group.column(index).statistics
            if stats is None:
                exact, count = False, None
                break
            if count is not None:
                count = count + stats.null_count if stats.has_null_count else None
            if not exact:
                continue
            if (
                not stats.has_min_max
                or not getattr(stats, "is_min_value_exact", True)
                or not getattr(stats, "is_max_value_exact", True)
            ):
                exact = False
                continue
            lo, hi = stats.min, stats.max
            low = lo if low is None or lo < low else low
            high = hi if high is None or hi > high else high
        if count is not None:
            nulls[field.name] = count
        if exact and low is not None:
            mins[field.name], maxs[field.name] = low, high
    return {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def relative_path(table_dir: DatasetLocation, part: DatasetLocation) -> str:
    """``part``'s path inside the table folder, as a Delta action names it ("/"-separated);
    :class:`DatasetError` for a part outside the folder or with a name that would need
    URI escaping (rmqarrow never writes one)."""
    try:
        if isinstance(part, ObjectLocation) or isinstance(table_dir, ObjectLocation):
            head = f"{table_dir}/"
            if not str(part).startswith(head):
                raise ValueError(part)
            rel = str(part)[len(head) :]
        else:
            rel = part.absolute().relative_to(table_dir.absolute()).as_posix()
    except ValueError:
        raise DatasetError(
            f"{part}: not inside the table folder {table_dir}; a Delta table only holds its "
            "own folder's files"
        ) from None
    if not _SAFE.match(rel) or rel.startswith("_"):
        raise DatasetError(f"{part}: the name {rel!r} is no data part's (letters, digits, ._-)")
    return rel


def add_action(
    table_dir: str | os.PathLike[str] | ObjectLocation,
    part: str | os.PathLike[str] | ObjectLocation,
) -> AddAction:
    """The add action committing ``part`` (a Parquet file already in ``table_dir``, both
    local or both on object storage) with its size, modification time and footer
    statistics."""
    root = table_dir if isinstance(table_dir, ObjectLocation) else Path(table_dir)
    path = part if isinstance(part, ObjectLocation) else Path(part)
    rel = relative_path(root, path)
    try:
        if isinstance(path, ObjectLocation):
            if not path.is_file():
                raise FileNotFoundError(2, "no such object")
            size, mtime_ns = path.size(), path.mtime_ns()
        else:
            st = path.stat()
            size, mtime_ns = st.st_size, st.st_mtime_ns
    except OSError as exc:
        raise DatasetError(f"{path}: cannot commit it: {exc.strerror or exc}") from None
    stats = json.dumps(file_stats(path), separators=(",", ":"))
    return AddAction(rel, size, {}, mtime_ns // 1_000_000, True, stats)
