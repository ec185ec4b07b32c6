"""The tiered and RocksDB datasets: Delta tables committed as one pinned run, as the index
dataset's are, and read through that run (or through the manifest of the older layout).

Each kind has its own tables and pin table (:data:`~rmqarrow.format.detect.PIN_TABLES`:
``tiered_files``, ``rocksdb_records``); its run commits every table and finishes with
the pin table's commit, whose record is the manifest but its parts list
(:func:`rmqarrow.converters.parquet.to_delta.commit_manifest`).  A reader reads the
manifest here once (:func:`read_kind_manifest`; the one a store opened ``as_of`` pinned,
when it did) and lists each table's files by it (:func:`kind_files`): the pinned files
of a Delta dataset, the folder's parts of one in the manifest layout.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.schema import (
    ROCKSDB_SCHEMA_VERSION,
    ROCKSDB_SCHEMAS,
    TIERED_SCHEMA_VERSION,
    TIERED_SCHEMAS,
)

from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait
from rmqarrow._paths import ObjectLocation, dataset_location, local_path
from rmqarrow.errors import DatasetError
from rmqarrow.format.detect import (
    MANIFEST_NAME,
    PIN_TABLES,
    ROCKSDB_DATASET_FORMAT,
    TIERED_DATASET_FORMAT,
)

__all__ = [
    "KIND_TABLES",
    "export_kind",
    "kind_files",
    "kind_table",
    "listed_manifest",
    "read_kind_manifest",
]

#: Each kind's tables, the pin table first.
KIND_TABLES = {
    TIERED_DATASET_FORMAT: ("tiered_files", "tiered_slots", "tiered_items"),
    ROCKSDB_DATASET_FORMAT: ("rocksdb_records", "rocksdb_bookkeeping"),
}
_SCHEMA_VERSIONS = {
    TIERED_DATASET_FORMAT: TIERED_SCHEMA_VERSION,
    ROCKSDB_DATASET_FORMAT: ROCKSDB_SCHEMA_VERSION,
}
_SCHEMAS = {**TIERED_SCHEMAS, **ROCKSDB_SCHEMAS}


def read_kind_manifest(
    dataset: str | os.PathLike[str] | ObjectLocation, fmt: str
) -> dict[str, Any]:
    """The manifest of the ``fmt`` dataset at ``dataset`` (local, or on object storage):
    the one a reader pinned (:func:`~rmqarrow.converters.parquet.manifest.pinned_snapshot`),
    the pinned run's record (Delta), or ``_rmqarrow.json`` (the older layout, local only);
    checked for its format, schema version and row counts.  :class:`DatasetError` when it
    is not one."""
    from rmqarrow.converters.delta.layout import is_delta_dataset
    from rmqarrow.converters.parquet.manifest import (
        delta_manifest,
        load_manifest_json,
        pinned_manifest,
    )

    root = dataset_location(dataset)
    where = root / MANIFEST_NAME
    manifest: Any = pinned_manifest(root)
    if manifest is None and is_delta_dataset(root, PIN_TABLES[fmt]):
        where = root / PIN_TABLES[fmt] / "_delta_log"
        manifest = delta_manifest(root, pin_table=PIN_TABLES[fmt])
    elif manifest is None:
        if isinstance(root, ObjectLocation):  # object storage holds Delta tables only
            raise DatasetError(
                f"{root}: no Delta table {PIN_TABLES[fmt]}/ here: format is not {fmt!r}"
            )
        manifest = load_manifest_json(root)
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise DatasetError(f"{where}: format is not {fmt!r}")
    want = _SCHEMA_VERSIONS[fmt]
    if manifest.get("schema_version") != want:
        raise DatasetError(
            f"{where}: schema_version {manifest.get('schema_version')!r}, expected {want!r}; "
            "export it again"
        )
    try:
        for t in KIND_TABLES[fmt]:
            int(manifest["tables"][t]["rows"])
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{where}: malformed manifest ({exc!r} missing or wrong)") from None
    return manifest


def kind_files(dataset: str | os.PathLike[str], table: str, manifest: dict[str, Any]) -> list[Path]:
    """The data files of ``table`` as ``manifest`` (:func:`read_kind_manifest`) has them,
    absolute and sorted: what DuckDB, Spark or pyarrow read to get exactly the table."""
    from rmqarrow.converters.parquet.parts import table_parts

    return table_parts(dataset, table, manifest)


def kind_table(dataset: str | os.PathLike[str], table: str, manifest: dict[str, Any]) -> pa.Table:
    """``table`` read whole, in its published schema, its rows checked against
    ``manifest``'s count."""
    schema = _SCHEMAS[table]
    pieces = []
    for part in kind_files(dataset, table, manifest):
        try:
            t = pq.read_table(part)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DatasetError(f"{part}: unreadable Parquet: {exc}") from None
        if t.schema.remove_metadata() != schema.remove_metadata():
            raise DatasetError(
                f"{part}: columns {t.schema.names} with types that are not "
                f"the {table} schema {schema.names}"
            )
        pieces.append(t.cast(schema))
    out = pa.concat_tables(pieces)
    want = int(manifest["tables"][table]["rows"])
    if out.num_rows != want:
        raise DatasetError(f"{Path(dataset) / table}: {out.num_rows} rows, manifest says {want}")
    return out


def listed_manifest(root: Path, manifest: dict[str, Any], fmt: str) -> dict[str, Any]:
    """``manifest`` (the older layout's, which lists no parts) with the parts of its table
    folders listed (:func:`~rmqarrow.converters.parquet.manifest.part_record`), each
    table's rows checked against its count: what a conversion commits, nothing rewritten."""
    from rmqarrow.converters.parquet.manifest import part_record

    parts = []
    for table in KIND_TABLES[fmt]:
        records = [part_record(root, p) for p in kind_files(root, table, manifest)]
        rows = sum(int(r["rows"]) for r in records)
        want = int(manifest["tables"][table]["rows"])
        if rows != want:
            raise DatasetError(
                f"{root / table}: {rows} rows, the manifest says {want}; nothing converted: "
                "export it again"
            )
        parts += records
    return {**manifest, "parts": parts}


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
    from rmqarrow.converters.delta.layout import is_delta_dataset
    from rmqarrow.converters.parquet.atomic import atomic_dir
    from rmqarrow.converters.parquet.export import EXPORT_APP
    from rmqarrow.converters.parquet.to_delta import (
        commit_manifest,
        commit_replacement,
        replacing,
    )

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
    from rmqarrow.converters.parquet.manifest import part_record

    manifest = write(tmp)
    manifest["parts"] = [
        part_record(tmp, p)
        for table in KIND_TABLES[fmt]
        for p in sorted((tmp / table).glob("*.parquet"))
    ]
    crash_point("export:manifest")
    return manifest


def _export_kind_remote(
    out: ObjectLocation, fmt: str, write: Callable[[Path], dict[str, Any]], *, overwrite: bool
) -> dict[str, Any]:
    """:func:`export_kind` to object storage: what may not be replaced is refused before
    anything is written, the run staged locally, then published."""
    import tempfile

    from rmqarrow.converters.parquet.export import EXPORT_APP
    from rmqarrow.converters.parquet.remote import check_export_target, publish_run

    pin_table = PIN_TABLES[fmt]
    check_export_target(out, pin_table, KIND_TABLES[fmt], overwrite=overwrite)
    with tempfile.TemporaryDirectory(prefix="rmqarrow-export-") as stage:
        tmp = Path(stage) / "dataset"
        tmp.mkdir()
        manifest = _staged_manifest(tmp, fmt, write)
        publish_run(out, tmp, manifest, pin_table=pin_table, overwrite=overwrite, app=EXPORT_APP)
    return read_kind_manifest(out, fmt)
