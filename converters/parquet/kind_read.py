"""Reading a tiered or RocksDB dataset: its manifest (:func:`read_kind_manifest`, once a
reader; the one a store opened ``as_of`` pinned, when it did) and each table's files by it
(:func:`kind_files`): the pinned files of a Delta dataset, the folder's parts of one in the
manifest layout.  Below both the writer (:mod:`.kind_dataset`) and the conversion
(:mod:`.to_delta`), which read a dataset the same way.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.manifests import KindManifest, PartRecord, RocksDBManifest, TieredManifest
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

__all__ = [
    "KIND_TABLES",
    "checked_kind_manifest",
    "kind_files",
    "kind_manifest",
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
_CLASSES: dict[str, type[KindManifest]] = {
    TIERED_DATASET_FORMAT: TieredManifest,
    ROCKSDB_DATASET_FORMAT: RocksDBManifest,
}


def read_kind_manifest(
    dataset: str | os.PathLike[str] | ObjectLocation, fmt: str
) -> dict[str, Any]:
    """The manifest of the ``fmt`` dataset at ``dataset`` as JSON holds it
    (:func:`kind_manifest` as a dict)."""
    return kind_manifest(dataset, fmt).to_dict()


def kind_manifest(dataset: str | os.PathLike[str] | ObjectLocation, fmt: str) -> KindManifest:
    """The manifest of the ``fmt`` dataset at ``dataset`` (local, or on object storage):
    the one a reader pinned (:func:`~rmqarrow.converters.parquet.manifest.pinned_snapshot`),
    the pinned run's record (Delta), or ``_rmqarrow.json`` (the older layout, local only);
    checked for its format, schema version, every key and row counts.  :class:`DatasetError`
    when it is not one."""
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
    return checked_kind_manifest(manifest, fmt, where)


def checked_kind_manifest(raw: object, fmt: str, where: object) -> KindManifest:
    """The ``fmt`` manifest ``raw`` (parsed JSON) typed and checked: its format, schema
    version, every key, each table's rows.  ``where``: what an error names."""
    fmt_read = raw.get("format") if isinstance(raw, dict) else None
    if fmt_read != fmt or fmt not in _CLASSES:
        raise DatasetError(f"{where}: format is not {fmt!r}")
    manifest = _CLASSES[fmt].from_dict(raw, str(where))
    want = _SCHEMA_VERSIONS[fmt]
    if manifest.schema_version != want:
        raise DatasetError(
            f"{where}: schema_version {manifest.schema_version!r}, expected {want!r}; "
            "export it again"
        )
    for t in KIND_TABLES[fmt]:
        manifest.rows(t, str(where))
    return manifest


def kind_files(
    dataset: str | os.PathLike[str], table: str, manifest: KindManifest | dict[str, Any]
) -> list[Path]:
    """The data files of ``table`` as ``manifest`` (:func:`read_kind_manifest`) has them,
    absolute and sorted: what DuckDB, Spark or pyarrow read to get exactly the table."""
    return table_parts(dataset, table, manifest)


def kind_table(dataset: str | os.PathLike[str], table: str, manifest: KindManifest) -> pa.Table:
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
    want = manifest.rows(table, dataset)
    if out.num_rows != want:
        raise DatasetError(f"{Path(dataset) / table}: {out.num_rows} rows, manifest says {want}")
    return out


def listed_manifest(root: Path, manifest: KindManifest, fmt: str) -> KindManifest:
    """``manifest`` (the older layout's, which lists no parts) with the parts of its table
    folders listed (:func:`~rmqarrow.converters.parquet.manifest.part_record`), each
    table's rows checked against its count: what a conversion commits, nothing rewritten."""
    parts: list[PartRecord] = []
    for table in KIND_TABLES[fmt]:
        records = [
            PartRecord.from_dict(part_record(root, p)) for p in kind_files(root, table, manifest)
        ]
        rows = sum(r.rows for r in records)
        want = manifest.rows(table, root)
        if rows != want:
            raise DatasetError(
                f"{root / table}: {rows} rows, the manifest says {want}; nothing converted: "
                "export it again"
            )
        parts += records
    return replace(manifest, parts=tuple(parts))
