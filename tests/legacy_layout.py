"""Tiered and RocksDB datasets in the older manifest layout, made from a Delta one.

Exports write Delta tables only; the tests of reading and converting the older layout
make it here instead: the pinned run's files copied (the Delta logs left behind) and its
record written as ``_rmqarrow.json`` in the shape the older writers gave it (the
datasets of ``tests/legacy_datasets``, which the tests compare this with).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rmqarrow.converters.parquet.kind_dataset import KIND_TABLES, kind_files, read_kind_manifest

from rmqarrow.format.detect import MANIFEST_NAME

LEGACY = Path(__file__).resolve().parent / "legacy_datasets"

#: What a Delta run's record holds that the older manifest did not.
_DELTA_ONLY = ("parts", "delta", "digests", "run", "versions")


def manifest_layout(delta_ds: Path, out: Path, fmt: str) -> dict[str, Any]:
    """A copy of the ``fmt`` dataset ``delta_ds`` (Delta tables) in the manifest layout at
    ``out``: each table's pinned files as ``part-NNNNN.parquet``, and the manifest the
    older writers wrote (returned)."""
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
