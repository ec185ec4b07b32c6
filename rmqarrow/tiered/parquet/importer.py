"""Rebuild tiered index files, byte for byte, from a dataset of :mod:`.export`.

Every check runs before a file appears: manifest kind and counts (the pinned run's
record of a dataset of Delta tables, whose files are read), one ``tiered_files`` row
per file, safe relative paths, rows in range and not repeated, nothing null where bytes
come from (:func:`rmqarrow.tiered.arrow.tables.file_bytes`).  Files are written into a
hidden staging folder, then moved into ``out_dir`` (created if missing) without ever
replacing an existing file (:func:`~rmqarrow.converters.parquet.atomic.move_files_no_replace`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rmqarrow._broker import check_store_writable
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._paths import local_path
from rmqarrow.converters.manifests import TieredManifest
from rmqarrow.converters.parquet.atomic import move_files_no_replace
from rmqarrow.converters.parquet.kind_read import kind_manifest, kind_table, read_kind_manifest
from rmqarrow.errors import DatasetError, OutputExistsError, StoreNotFoundError
from rmqarrow.format.detect import detect
from rmqarrow.format.layout import GeometryHint
from rmqarrow.tiered.arrow.tables import TieredTables, file_bytes, tiered_tables
from rmqarrow.tiered.parquet.export import TIERED_FORMAT, TIERED_TABLES

__all__ = [
    "import_tiered",
    "read_tiered_dataset",
    "read_tiered_manifest",
    "tiered_source_tables",
]


def read_tiered_manifest(dataset_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a tiered dataset (its pinned run's record, or the older layout's
    ``_rmqarrow.json``); :class:`DatasetError` when it is not one."""
    return read_kind_manifest(dataset_dir, TIERED_FORMAT)


def read_tiered_dataset(dataset_dir: str | os.PathLike[str]) -> tuple[pa.Table, ...]:
    """``(files, slots, items)`` of a tiered dataset, of one snapshot (its pinned run),
    checked against the manifest."""
    src = Path(dataset_dir)
    if not src.is_dir():
        raise StoreNotFoundError(f"{src}: no such dataset directory")
    manifest = kind_manifest(src, TIERED_FORMAT)
    return tuple(kind_table(src, t, manifest) for t in TIERED_TABLES)


def _safe_relative(rel: str, where: Path) -> PurePosixPath:
    p = PurePosixPath(rel)
    if not rel or p.is_absolute() or ".." in p.parts or "\\" in rel or "\0" in rel:
        raise DatasetError(f"{where}: unsafe relative_path {rel!r}")
    return p


def import_tiered(
    dataset_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    wait: Wait = False,
    force: bool = False,
) -> list[Path]:
    """Rebuild every file of the tiered dataset under ``out_dir``; returns their paths.
    ``out_dir``'s writer lock is held throughout (``wait``: see
    :func:`rmqarrow._lock.acquire`); the store of a running broker is refused
    (:func:`rmqarrow._broker.check_store_writable`, ``force``)."""
    out = local_path(out_dir).absolute()
    check_store_writable(out, force=force)
    out.parent.mkdir(parents=True, exist_ok=True)
    with writer_lock(out, wait=wait):
        return _import_tiered(dataset_dir, local_path(out_dir))  # paths as the caller named them


def _import_tiered(
    dataset_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]
) -> list[Path]:
    src = Path(dataset_dir)
    files, slots, items = read_tiered_dataset(src)
    rows = files.to_pylist()
    rels = [_safe_relative(str(r["relative_path"]), src / "tiered_files") for r in rows]
    names = [str(r["file_name"]) for r in rows]
    if len(set(names)) != len(names) or len(set(rels)) != len(rels):
        raise DatasetError(f"{src / 'tiered_files'}: a file listed twice")
    unknown = set(pc.unique(slots.column("file_name")).to_pylist()) | set(
        pc.unique(items.column("file_name")).to_pylist()
    )
    if unknown - set(names):
        raise DatasetError(
            f"{src}: rows for file_name {sorted(unknown - set(names))!r} without a tiered_files row"
        )
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"{out}: exists and is not a directory")
    taken = [str(r) for r in rels if (out / r).exists()]
    if taken:
        raise OutputExistsError(
            f"{out}: already holds {', '.join(taken)}; rmqarrow never overwrites index files"
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".rmqarrow-tiered-import-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    placed: list[Path] = []
    try:
        built: list[tuple[Path, PurePosixPath]] = []
        for i, (row, rel) in enumerate(zip(rows, rels, strict=True)):
            mine_s = slots.filter(pc.equal(slots.column("file_name"), row["file_name"]))
            mine_i = items.filter(pc.equal(items.column("file_name"), row["file_name"]))
            data = file_bytes(row, mine_s, mine_i)
            part = staging / str(i)
            part.mkdir()
            (part / rel.name).write_bytes(data)
            built.append((part / rel.name, rel))
        for path, rel in built:
            target = out / rel.parent
            target.mkdir(parents=True, exist_ok=True)
            placed += move_files_no_replace([path], target)
    except BaseException:
        for p in placed:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return placed


def tiered_source_tables(
    source: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> tuple[TieredTables, bool]:
    """The tables of a tiered dataset, file or folder, and whether it is a store (several
    files: a folder, or a dataset exported from one)."""
    src = Path(source)
    if detect(src).kind == "tiered_dataset":
        files, slots, items = read_tiered_dataset(src)
        return TieredTables(files, slots, items), _exported_from_folder(src, files)
    return tiered_tables(src, geometry), src.is_dir()


def _exported_from_folder(src: Path, files: pa.Table) -> bool:
    """Whether a tiered dataset holds a folder's files, asked as RocketMQ asks a folder
    (only the files whose begin timestamp lies in a query's window), or one file, asked
    whatever its begin.  A folder of one file is a folder: its export records the folder
    as its source, where one file's export records the file itself."""
    if files.num_rows != 1:
        return True
    manifest = kind_manifest(src, TIERED_FORMAT)
    assert isinstance(manifest, TieredManifest)  # the format read is the tiered one
    source = manifest.source
    return Path(source.path).name != source.files[0].relative_path
