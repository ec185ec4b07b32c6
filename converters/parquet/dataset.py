"""Read an exported Parquet dataset back as Arrow, in exactly the schema of
rmqarrow.converters.schema.

:func:`open_dataset` gives a :class:`pyarrow.dataset.Dataset` over one table's parts
(checked against the schema first), so filters such as
``pc.field("slot") == s`` prune row groups by their statistics; :func:`read_dataset`
loads all three tables (small datasets, tests, verify).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from rmqarrow.converters.arrow.tables import IndexTables
from rmqarrow.converters.parquet.importer import list_parts
from rmqarrow.converters.parquet.manifest import read_manifest
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow.errors import InvalidValueError, StoreNotFoundError

if TYPE_CHECKING:
    import pyarrow.dataset as pads

__all__ = ["open_dataset", "read_dataset"]


def open_dataset(dataset_dir: str | os.PathLike[str], table: str) -> pads.Dataset:
    """One table of a dataset (``files``, ``slots`` or ``entries``) as a pyarrow Dataset."""
    import pyarrow.dataset as pads

    d = Path(dataset_dir)
    if not d.is_dir():
        raise StoreNotFoundError(f"{d}: no such dataset directory")
    if table not in SCHEMAS:
        raise InvalidValueError(f"unknown table {table!r}; expected one of {', '.join(SCHEMAS)}")
    read_manifest(d)
    parts = list_parts(d, table)
    return pads.dataset([str(p) for p in parts], schema=SCHEMAS[table], format="parquet")


def read_dataset(dataset_dir: str | os.PathLike[str]) -> IndexTables:
    """All three tables, files in Java name order, slots/entries in file then slot/position
    order (the order of :func:`rmqarrow.converters.arrow.tables.store_tables`)."""
    from rmqarrow.format.naming import java_name_order

    files = open_dataset(dataset_dir, "files").to_table()
    rank = {
        n: i
        for i, n in enumerate(sorted(files.column("file_name").to_pylist(), key=java_name_order))
    }

    def ordered(table: pa.Table, column: str) -> pa.Table:
        ranks = pa.array(
            [rank.get(n, len(rank)) for n in table.column("file_name").to_pylist()], pa.int64()
        )
        keyed = table.append_column("__rank", ranks)
        keyed = keyed.sort_by([("__rank", "ascending"), (column, "ascending")])
        return keyed.drop_columns(["__rank"]).cast(table.schema)

    return IndexTables(
        ordered(files, "file_name"),
        ordered(open_dataset(dataset_dir, "slots").to_table(), "slot"),
        ordered(open_dataset(dataset_dir, "entries").to_table(), "position"),
    )
