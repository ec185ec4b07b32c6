"""Datasets of the older manifest layout (``_rmqarrow.json`` beside plain Parquet folders).

rmqarrow no longer writes that layout, but still reads it and converts it; the tests that
need one make it from a Delta export: the same parts, listed by the manifest instead of
Delta logs, as that layout's writers listed them.  ``tests/legacy/`` (:data:`LEGACY`)
holds datasets those writers wrote, one of each kind, and the tests check these helpers
against them (``tests/converters/parquet/test_legacy_dataset.py``,
``tests/tiered/test_tiered_delta.py``, ``tests/rocksdb/test_rocksdb_delta.py``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.kind_read import KIND_TABLES, kind_files, read_kind_manifest
from rmqarrow.converters.parquet.manifest import read_manifest

from rmqarrow.format.detect import MANIFEST_NAME

__all__ = [
    "LEGACY",
    "comparable",
    "layout_files",
    "legacy_export",
    "legacy_layout",
    "manifest_layout",
]

LEGACY = Path(__file__).resolve().parent / "legacy"

#: What a Delta run's record holds that the older tiered and RocksDB manifests did not.
_DELTA_ONLY = ("parts", "delta", "digests", "run", "versions")


def legacy_layout(ds: Path) -> Path:
    """Turn the Delta dataset ``ds`` into one of the manifest layout, in place."""
    manifest = read_manifest(ds)
    manifest.pop("delta", None)
    for log in sorted(ds.glob("*/_delta_log")):
        shutil.rmtree(log)
    text = json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    (ds / MANIFEST_NAME).write_text(text, encoding="utf-8")
    return ds


def legacy_export(
    store: str | os.PathLike[str], out: str | os.PathLike[str], **options: Any
) -> dict[str, Any]:
    """Export ``store`` to ``out`` in the manifest layout; its manifest."""
    export_store(store, out, **options)
    legacy_layout(Path(out))
    return read_manifest(out)


def manifest_layout(delta_ds: Path, out: Path, fmt: str) -> dict[str, Any]:
    """A copy of the tiered or RocksDB (``fmt``) dataset ``delta_ds`` in the manifest
    layout at ``out``: each table's pinned files as ``part-NNNNN.parquet``, and the
    manifest those writers wrote (returned)."""
    record = read_kind_manifest(delta_ds, fmt)
    out.mkdir(parents=True)
    for table in KIND_TABLES[fmt]:
        (out / table).mkdir()
        for i, part in enumerate(kind_files(delta_ds, table, record)):
            shutil.copyfile(part, out / table / f"part-{i:05d}.parquet")
    manifest = {k: v for k, v in record.items() if k not in _DELTA_ONLY}
    text = json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    (out / MANIFEST_NAME).write_text(text, encoding="utf-8")
    return manifest


def comparable(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` without what differs between two exports of one source (when, where
    from, how long, which version wrote it)."""
    out = {k: v for k, v in manifest.items() if k not in ("created_at", "seconds", "writer")}
    out["source"] = {k: v for k, v in manifest["source"].items() if k != "path"}
    return out


def layout_files(ds: Path) -> list[str]:
    """Every file of ``ds``, relative, sorted."""
    return sorted(p.relative_to(ds).as_posix() for p in ds.rglob("*") if p.is_file())
