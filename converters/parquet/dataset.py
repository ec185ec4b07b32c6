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
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA
from rmqarrow.converters.arrow.tables import IndexTables
from rmqarrow.converters.parquet.importer import list_parts
from rmqarrow.converters.parquet.manifest import one_snapshot, read_manifest
from rmqarrow.converters.parquet.parts import table_parts
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow.errors import DatasetError, InvalidValueError, StoreNotFoundError
from rmqarrow.format.naming import java_name_order

if TYPE_CHECKING:
    import pyarrow.dataset as pads

__all__ = ["TABLES", "open_dataset", "present_tables", "read_dataset"]


#: the tables a dataset can hold, in the order messages name them; ``messages`` only
#: when the dataset was exported with a CommitLog
TABLES = (*SCHEMAS, "messages")


def present_tables(dataset_dir: str | os.PathLike[str]) -> list[str]:
    """The tables whose directory ``dataset_dir`` holds, in :data:`TABLES` order."""
    d = Path(dataset_dir)
    return [t for t in TABLES if (d / t).is_dir()]


def _schema(table: str) -> pa.Schema:
    if table == "messages":
        return MESSAGES_SCHEMA
    return SCHEMAS[table]


def _message_parts(d: Path) -> list[Path]:
    """The parts of ``messages``, each checked to hold its schema (the columns of
    :mod:`rmqarrow.converters.arrow.messages`)."""
    want = [(f.name, f.type) for f in _schema("messages")]
    parts = table_parts(d, "messages")
    for p in parts:
        try:
            got = [(f.name, f.type) for f in pq.read_schema(p)]
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"{p}: not a readable Parquet file: {exc}") from None
        if got != want:
            raise DatasetError(
                f"{p}: wrong schema for table messages: expected the columns "
                f"{', '.join(n for n, _ in want)}; found {', '.join(n for n, _ in got)}"
            )
    return parts


def open_dataset(dataset_dir: str | os.PathLike[str], table: str) -> pads.Dataset:
    """One table of a dataset (``files``, ``slots``, ``entries``, or ``messages`` when it
    was exported with a CommitLog) as a pyarrow Dataset."""
    d = Path(dataset_dir)
    if not d.is_dir():
        raise StoreNotFoundError(f"{d}: no such dataset directory")
    if table not in TABLES:
        raise InvalidValueError(f"unknown table {table!r}; expected one of {', '.join(TABLES)}")
    manifest = read_manifest(d)
    if table == "messages":
        if not (d / table).is_dir():
            # the other tables are always there; messages only with a CommitLog
            raise DatasetError(
                f"{d}: no messages table; this dataset has "
                f"{', '.join(present_tables(d)) or 'no tables'} (export with "
                "commitlog=DIR to include the messages)"
            )
        parts = _message_parts(d)
    else:
        parts = list_parts(d, table, manifest)
    return pads.dataset([str(p) for p in parts], schema=_schema(table), format="parquet")


def read_dataset(dataset_dir: str | os.PathLike[str]) -> IndexTables:
    """All three tables, files in Java name order, slots/entries in file then slot/position
    order (the order of :func:`rmqarrow.converters.arrow.tables.store_tables`)."""
    with one_snapshot(dataset_dir):  # the three tables of one run
        files = open_dataset(dataset_dir, "files").to_table()
        slots = open_dataset(dataset_dir, "slots").to_table()
        entries = open_dataset(dataset_dir, "entries").to_table()
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
        ordered(slots, "slot"),
        ordered(entries, "position"),
    )
