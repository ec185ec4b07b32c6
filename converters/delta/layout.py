"""What makes a dataset a Delta one, told from its folders alone (no deltalake import:
every reader asks this first, whatever the dataset turns out to be)."""

from __future__ import annotations

import os

from rmqarrow._paths import ObjectLocation, dataset_location
from rmqarrow.format.detect import MANIFEST_NAME, PIN_TABLES

__all__ = [
    "LOG_DIR",
    "META_KEY",
    "PIN_TABLE",
    "PIN_TABLES",
    "is_delta_dataset",
    "pin_table_of",
]

#: The table whose commit finishes a run of an index dataset and pins the others.
PIN_TABLE = "files"
#: The ``commitInfo`` key of a run's pin.
META_KEY = "rmqarrow"
#: A Delta table's log folder.
LOG_DIR = "_delta_log"


def pin_table_of(dataset: str | os.PathLike[str] | ObjectLocation) -> str:
    """The pin table of ``dataset``'s kind (``files``, ``tiered_files`` or
    ``rocksdb_records``: the first of :data:`PIN_TABLES` that is a Delta table there),
    ``files`` when none is: the generic verbs (versions, vacuum, ``as_of``) serve every
    kind through it."""
    root = dataset_location(dataset)
    for table in PIN_TABLES.values():
        if (root / table / LOG_DIR).is_dir():
            return table
    return PIN_TABLE


def is_delta_dataset(
    dataset: str | os.PathLike[str] | ObjectLocation, pin_table: str | None = None
) -> bool:
    """Whether ``dataset`` is in the Delta layout: its pin table (``pin_table``, or that
    of any kind: :func:`pin_table_of`) is a Delta table and no manifest of the older
    layout is left (its tables are then read through the pinned snapshot, never by
    listing their folders).  Converting a dataset commits its tables first and deletes
    the manifest last: killed in between, it is still the dataset the manifest
    describes, whose files the commits left untouched."""
    root = dataset_location(dataset)
    table = pin_table_of(root) if pin_table is None else pin_table
    return (root / table / LOG_DIR).is_dir() and not (root / MANIFEST_NAME).exists()
