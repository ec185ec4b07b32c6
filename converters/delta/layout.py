"""What makes a dataset a Delta one, told from its folders alone (no deltalake import:
every reader asks this first, most datasets it asks about are in the manifest layout)."""

from __future__ import annotations

import os

from rmqarrow._paths import ObjectLocation, dataset_location
from rmqarrow.format.detect import MANIFEST_NAME

__all__ = ["LOG_DIR", "META_KEY", "PIN_TABLE", "is_delta_dataset"]

#: The table whose commit finishes a run of an index dataset and pins the others.
PIN_TABLE = "files"
#: The ``commitInfo`` key of a run's pin.
META_KEY = "rmqarrow"
#: A Delta table's log folder.
LOG_DIR = "_delta_log"


def is_delta_dataset(
    dataset: str | os.PathLike[str] | ObjectLocation, pin_table: str = PIN_TABLE
) -> bool:
    """Whether ``dataset`` is in the Delta layout: its pin table is a Delta table and no
    manifest of the older layout is left (its tables are then read through the pinned
    snapshot, never by listing their folders).  Converting a dataset commits its tables
    first and deletes the manifest last: killed in between, it is still the dataset the
    manifest describes, whose files the commits left untouched."""
    root = dataset_location(dataset)
    return (root / pin_table / LOG_DIR).is_dir() and not (root / MANIFEST_NAME).exists()
