"""The data files of a dataset table, listed one way for every reader.

A table's parts are the ``*.parquet`` files anywhere below ``DATASET/TABLE/`` (exporters
may nest them in subfolders); names starting with ``_`` or ``.`` are metadata or staging,
never data.  The list is explicit, so readers never see a user's path as a glob pattern
(and :func:`duckdb_literal` / :func:`hadoop_literal` keep the engines from globbing the
names themselves); each part is checked to be a readable Parquet file (magic at both
ends).
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from rmqarrow.errors import DatasetError

__all__ = ["duckdb_literal", "hadoop_literal", "single_file_name", "table_parts"]


def _is_data(path: Path, table_dir: Path) -> bool:
    hidden = any(part.startswith(("_", ".")) for part in path.relative_to(table_dir).parts)
    return path.suffix == ".parquet" and not hidden and path.is_file()


def table_parts(dataset_dir: str | os.PathLike[str], table: str) -> list[Path]:
    """Sorted data files of ``table``; :class:`DatasetError` when the table has none."""
    directory = Path(dataset_dir) / table
    if not directory.is_dir():
        raise DatasetError(
            f"{directory}: missing; a dataset has the directories files/, slots/ and entries/"
        )
    try:
        parts = sorted(p for p in directory.rglob("*.parquet") if _is_data(p, directory))
    except OSError as exc:
        raise DatasetError(f"{directory}: cannot list: {exc.strerror or exc}") from None
    if not parts:
        raise DatasetError(f"{directory}: no .parquet files; not a complete dataset")
    for p in parts:
        _check_part(p)
    return parts


def _check_part(path: Path) -> None:
    """A part must be a readable file with Parquet's magic at both ends: an empty,
    truncated, unreadable or foreign file is one clear error here, not an engine's
    traceback later."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(max(size - 4, 0))
            tail = fh.read(4)
    except PermissionError:
        raise DatasetError(f"{path}: permission denied; cannot read this part") from None
    except OSError as exc:
        raise DatasetError(f"{path}: unreadable: {exc.strerror or exc}") from None
    if size < 12 or head != b"PAR1" or tail != b"PAR1":
        what = "empty" if size == 0 else f"{size} bytes without Parquet's magic"
        raise DatasetError(
            f"{path}: {what}; not a Parquet file (truncated or foreign): remove it or "
            "re-export the dataset"
        )


def duckdb_literal(path: str | os.PathLike[str]) -> str:
    """``path`` as a DuckDB file name that matches only itself.

    DuckDB treats every name given to ``read_parquet`` as a glob (``*``, ``?``, ``[...]``);
    a dataset at ``g/ds[12]`` would read ``g/ds1``.  Each special character is put in a
    one-character class (``[[]``, ``[*]``, ``[?]``), which DuckDB matches literally.
    """
    return glob.escape(str(path))


def hadoop_literal(path: str | os.PathLike[str]) -> str:
    """``path`` as a Hadoop/Spark path that matches only itself: the glob characters
    ``* ? [ ] { } \\`` escaped with a backslash (Hadoop's ``GlobPattern``)."""
    return re.sub(r"([*?\[\]{}\\])", r"\\\1", str(path))


def single_file_name(path: str | os.PathLike[str]) -> str | None:
    """The one ``file_name`` a Parquet part holds, read from its row-group statistics;
    None when they cannot prove it (no column, missing or truncated statistics, several
    names, an unreadable footer): callers then read the names themselves."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
        index = meta.schema.names.index("file_name")
    except (ValueError, pa.ArrowException, OSError):
        return None
    values: set[object] = set()
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max:
            return None
        # truncated string statistics (some writers shorten long values) prove nothing
        if not getattr(stats, "is_min_value_exact", True) or not getattr(
            stats, "is_max_value_exact", True
        ):
            return None
        values.update((stats.min, stats.max))
    if len(values) != 1:
        return None
    value = values.pop()
    return value.decode() if isinstance(value, bytes) else str(value)
