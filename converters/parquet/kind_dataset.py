"""Writing a tiered or RocksDB dataset: Delta tables committed as one pinned run, as the
index dataset's are.

Each kind has its own tables and pin table (:data:`~rmqarrow.format.detect.PIN_TABLES`:
``tiered_files``, ``rocksdb_records``); its run commits every table and finishes with
the pin table's commit, whose record is the manifest but its parts list
(:func:`rmqarrow.converters.parquet.to_delta.commit_manifest`).  Readers read it through
:mod:`.kind_read`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet.atomic import atomic_dir
from rmqarrow.converters.parquet.export import EXPORT_APP
from rmqarrow.converters.parquet.kind_read import KIND_TABLES, read_kind_manifest
from rmqarrow.converters.parquet.manifest import part_record
from rmqarrow.converters.parquet.remote import check_export_target, publish_run
from rmqarrow.converters.parquet.to_delta import commit_manifest, commit_replacement, replacing

from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait
from rmqarrow._paths import ObjectLocation, dataset_location, local_path
from rmqarrow.format.detect import PIN_TABLES

__all__ = ["export_kind"]


def export_kind(
    out: str | os.PathLike[str] | ObjectLocation,
    fmt: str,
    write: Callable[[Path], dict[str, Any]],
    *,
    overwrite: bool,
    wait: Wait,
) -> dict[str, Any]:
    """Export a ``fmt`` dataset to ``out`` as Delta tables; returns its manifest as readers
    read it.  ``write`` writes every table's parts into the (empty) folder it is given,
    ``TABLE/part-*.parquet``, and returns the manifest but its parts.

    A new dataset is built beside ``out`` and appears by one rename, its run already
    committed (:func:`~rmqarrow.converters.parquet.atomic.atomic_dir`); an existing one is
    refused unless ``overwrite``, which commits the new parts as its next version and
    removes every part of the one before
    (:func:`~rmqarrow.converters.parquet.to_delta.commit_replacement`: killed at any step,
    readers read the old run or the new, and the next writer restores what no pin holds).
    A dataset of the older layout overwritten is replaced by one rename, as it was.

    ``out`` may be a URI of object storage (:func:`rmqarrow._paths.dataset_location`): the
    run is staged in a local temporary folder and published as an index dataset's is
    (:func:`~rmqarrow.converters.parquet.remote.publish_run`; no writer lock there, a
    concurrent writer's commit fails one of the two)."""
    where = dataset_location(out)
    if isinstance(where, ObjectLocation):
        return _export_kind_remote(where, fmt, write, overwrite=overwrite)
    target = local_path(where)
    pin_table = PIN_TABLES[fmt]
    replace = overwrite and is_delta_dataset(target, pin_table)
    stage = (
        replacing(target.absolute(), wait=wait)
        if replace
        else atomic_dir(target, overwrite=overwrite, wait=wait)
    )
    with stage as tmp:
        manifest = _staged_manifest(tmp, fmt, write)
        if replace:
            commit_replacement(target.absolute(), tmp, manifest, EXPORT_APP, pin_table=pin_table)
        else:
            commit_manifest(tmp, manifest, EXPORT_APP, pin_table=pin_table)
    return read_kind_manifest(target, fmt)


def _staged_manifest(
    tmp: Path, fmt: str, write: Callable[[Path], dict[str, Any]]
) -> dict[str, Any]:
    """The run ``write`` stages in ``tmp``, and its manifest with the parts listed."""
    written = write(tmp)  # the parts first: their records are read from the files
    parts = [
        part_record(tmp, p)
        for table in KIND_TABLES[fmt]
        for p in sorted((tmp / table).glob("*.parquet"))
    ]
    manifest = {**written, "parts": parts}
    crash_point("export:manifest")
    return manifest


def _export_kind_remote(
    out: ObjectLocation, fmt: str, write: Callable[[Path], dict[str, Any]], *, overwrite: bool
) -> dict[str, Any]:
    """:func:`export_kind` to object storage: what may not be replaced is refused before
    anything is written, the run staged locally, then published."""
    pin_table = PIN_TABLES[fmt]
    check_export_target(out, pin_table, KIND_TABLES[fmt], overwrite=overwrite)
    with tempfile.TemporaryDirectory(prefix="rmqarrow-export-") as stage:
        tmp = Path(stage) / "dataset"
        tmp.mkdir()
        manifest = _staged_manifest(tmp, fmt, write)
        publish_run(out, tmp, manifest, pin_table=pin_table, overwrite=overwrite, app=EXPORT_APP)
    return read_kind_manifest(out, fmt)
