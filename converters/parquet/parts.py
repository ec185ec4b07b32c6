"""The data files of a dataset table, listed one way for every reader.

A table's parts are the ``*.parquet`` files anywhere below ``DATASET/TABLE/`` (exporters
may nest them in subfolders); names starting with ``_`` or ``.`` are metadata or staging,
never data.  The list is explicit, so readers never see a user's path as a glob pattern.
"""

from __future__ import annotations

import os
from pathlib import Path

from rmqarrow.errors import DatasetError

__all__ = ["table_parts"]


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
    parts = sorted(p for p in directory.rglob("*.parquet") if _is_data(p, directory))
    if not parts:
        raise DatasetError(f"{directory}: no .parquet files; not a complete dataset")
    return parts
