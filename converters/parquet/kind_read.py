"""Reading a tiered or RocksDB dataset: its manifest (:func:`read_kind_manifest`, once a
reader; the one a store opened ``as_of`` pinned, when it did) and each table's files by it
(:func:`kind_files`): the pinned files of a Delta dataset, the folder's parts of one in the
manifest layout.  Below both the writer (:mod:`.kind_dataset`) and the conversion
(:mod:`.to_delta`), which read a dataset the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet.manifest import (
    delta_manifest,
    load_manifest_json,
    part_record,
    pinned_manifest,
)
from rmqarrow.converters.parquet.parts import table_parts
from rmqarrow.converters.schema import (
    ROCKSDB_SCHEMA_VERSION,
    ROCKSDB_SCHEMAS,
    TIERED_SCHEMA_VERSION,
    TIERED_SCHEMAS,
)

from rmqarrow._paths import ObjectLocation, dataset_location
from rmqarrow.errors import DatasetError
from rmqarrow.format.detect import (
    MANIFEST_NAME,
    PIN_TABLES,
    ROCKSDB_DATASET_FORMAT,
    TIERED_DATASET_FORMAT,
)

__all__ = ["KIND_TABLES", "kind_files", "kind_table", "listed_manifest", "read_kind_manifest"]

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
