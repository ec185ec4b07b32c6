"""The data files of a dataset table, listed one way for every reader.

A table's parts are the ``*.parquet`` files anywhere below ``DATASET/TABLE/`` (exporters
may nest them in subfolders); names starting with ``_`` or ``.`` are metadata or staging,
never data.  In a dataset of the older manifest layout, which rmqarrow no longer writes,
the manifest was the commit point of an incremental export: a part it does not list that
an incremental run wrote after it (``part-rRUN-...`` with RUN above the manifest's
``run``) or that it names as ``superseded`` is not part of the table, so readers see
the dataset before a run or after it, never a mix.  A dataset of Delta tables
(:mod:`rmqarrow.converters.delta`) is listed by its pinned snapshot instead: exactly the
files of each table's pinned version.  The list
is explicit, so readers never see a user's path as a glob pattern
(and :func:`duckdb_literal` / :func:`hadoop_literal` keep the engines from globbing the
names themselves); each part is checked to be a readable Parquet file (magic at both
ends).
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.manifests import (
    AnyManifest,
    DatasetManifest,
    PartsListing,
    manifest_of,
)
from rmqarrow.converters.parquet.snapshot import delta_manifest, pinned_manifest, trusted

from rmqarrow.errors import DatasetError

__all__ = [
    "RUN_PART",
    "FileRows",
    "duckdb_literal",
    "hadoop_literal",
    "manifest_or_none",
    "not_committed",
    "single_file_name",
    "split_by_file",
    "table_parts",
    "typed_manifest",
]

#: Name of a part written by incremental run N: ``part-rNNNNNN-...parquet``.
RUN_PART = re.compile(r"^part-r(\d+)-")
_MANIFEST = "_rmqarrow.json"
_log = logging.getLogger(__name__)


def _is_data(path: Path, table_dir: Path) -> bool:
    hidden = any(part.startswith(("_", ".")) for part in path.relative_to(table_dir).parts)
    return path.suffix == ".parquet" and not hidden and path.is_file()


def table_parts(
    dataset_dir: str | os.PathLike[str],
    table: str,
    manifest: AnyManifest | PartsListing | dict[str, Any] | None = None,
) -> list[Path]:
    """Sorted data files of ``table`` (absolute paths: a view made of them still reads
    them after the process changes directory); :class:`DatasetError` when the table has
    none.

    ``manifest``: the manifest the caller read (and judges the parts by), so parts are
    listed by that one snapshot; without it the manifest is read here first.  A reader
    that read the manifest itself and let this read it again could see two of them
    when an incremental run switches between: the new run's parts would then be extra
    to the old manifest."""
    root = Path(dataset_dir).absolute()
    directory = root / table
    if not directory.is_dir():
        raise DatasetError(
            f"{directory}: missing; a dataset has the directories files/, slots/ and entries/"
        )
    try:
        typed = manifest_or_none(root) if manifest is None else typed_manifest(root, manifest)
        if typed is not None and typed.delta is not None:
            parts = _committed(root, table, typed)
            gone = [p for p in parts if not p.exists()]

            if gone and trusted():  # read anyway, as asked: what is left of the run
                _log.warning("%s: %d part(s) of the pinned run missing, skipped", root, len(gone))
                parts = [p for p in parts if p.exists()]
            elif gone:
                raise DatasetError(
                    f"{root}: part {gone[0].relative_to(root).as_posix()} listed in the "
                    f"manifest (the pinned run) is missing ({len(gone)} missing): deleted "
                    "by hand, or vacuumed under a reader? Export again, or read an older "
                    "version"
                )
        else:
            parts = sorted(p for p in directory.rglob("*.parquet") if _is_data(p, directory))
    except OSError as exc:
        raise DatasetError(f"{directory}: cannot list: {exc.strerror or exc}") from None
    if typed is not None and typed.delta is None:
        hidden = not_committed(typed, [p.relative_to(root).as_posix() for p in parts])
        parts = [p for p in parts if p.relative_to(root).as_posix() not in hidden]
    if not parts:
        raise DatasetError(f"{directory}: no .parquet files; not a complete dataset")
    for p in parts:
        _check_part(p)
    return parts


def typed_manifest(
    root: Path, manifest: AnyManifest | PartsListing | dict[str, Any] | None
) -> AnyManifest | PartsListing | None:
    """``manifest`` typed (None: none, or another writer's, whose format rmqarrow does not
    write: its folders are listed as they are, unless it is a Delta dataset's record,
    whose pinned parts are listed); a malformed one is a :class:`DatasetError`."""
    if not isinstance(manifest, dict):
        return manifest
    typed = manifest_of(manifest, root / _MANIFEST)
    if typed is None and "delta" in manifest:
        return PartsListing.from_dict(manifest, root)
    return typed


def _committed(root: Path, table: str, manifest: AnyManifest | PartsListing) -> list[Path]:
    """The parts of ``table`` a Delta dataset's manifest lists: its pinned version's
    files (its folder also holds files removed by later versions, and a killed run's)."""
    prefix = f"{table}/"
    return sorted(root / r.path for r in manifest.parts or () if r.path.startswith(prefix))


def manifest_or_none(root: Path) -> AnyManifest | PartsListing | None:
    """The manifest, typed (read before the directory is listed: a part committed after
    this read is then one the listing leaves out), or None when there is none usable.  A
    Delta dataset's is its pinned snapshot's, and must be readable: listing its folders
    instead would count removed parts."""
    pinned = pinned_manifest(root)
    if pinned is not None:  # a reader's pinned snapshot (an older version)
        return typed_manifest(root, pinned)
    if is_delta_dataset(root):
        return typed_manifest(root, delta_manifest(root))
    try:
        manifest = json.loads((root / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return typed_manifest(root, manifest) if isinstance(manifest, dict) else None


def not_committed(manifest: AnyManifest | PartsListing, rel_paths: list[str]) -> set[str]:
    """Those of ``rel_paths`` (dataset-relative, "/"-separated) that ``manifest`` does not
    list and knows to be no part of it: written by a later (running or killed)
    incremental run, or superseded by its own run and not yet deleted."""
    if manifest.parts is None:
        return set()
    want = {r.path for r in manifest.parts}
    run = manifest.run_count
    superseded = set(manifest.superseded or ()) if isinstance(manifest, DatasetManifest) else set()
    out = set()
    for rel in rel_paths:
        if rel in want:
            continue
        m = RUN_PART.match(rel.rsplit("/", 1)[-1])
        if rel in superseded or (m is not None and int(m.group(1)) > run):
            out.add(rel)
    return out


def _check_part(path: Path) -> None:
    """A part must be a readable file with Parquet's magic at both ends: an empty,
    truncated, unreadable or foreign file is one clear error here, not an engine's
    traceback later."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(max(size - 4, 0))
            tail = fh.read(4)
    except PermissionError:
        raise DatasetError(f"{path}: permission denied; cannot read this part") from None
    except OSError as exc:
        raise DatasetError(f"{path}: unreadable: {exc.strerror or exc}") from None
    if size < 12 or head != b"PAR1" or tail != b"PAR1":
        what = "empty" if size == 0 else f"{size} bytes without Parquet's magic"
        raise DatasetError(
            f"{path}: {what}; not a Parquet file (truncated or foreign): remove it or "
            "re-export the dataset"
        )


def duckdb_literal(path: str | os.PathLike[str]) -> str:
    """``path`` as a DuckDB file name that matches only itself.

    DuckDB treats every name given to ``read_parquet`` as a glob (``*``, ``?``, ``[...]``);
    a dataset at ``g/ds[12]`` would read ``g/ds1``.  Each special character is put in a
    one-character class (``[[]``, ``[*]``, ``[?]``), which DuckDB matches literally.
    """
    return glob.escape(str(path))


def hadoop_literal(path: str | os.PathLike[str]) -> str:
    """``path`` as a Hadoop/Spark path that matches only itself: the glob characters
    ``* ? [ ] { } \\`` escaped with a backslash (Hadoop's ``GlobPattern``)."""
    return re.sub(r"([*?\[\]{}\\])", r"\\\1", str(path))


def single_file_name(path: str | os.PathLike[str]) -> str | None:
    """The one ``file_name`` a Parquet part holds, read from its row-group statistics;
    None when they cannot prove it (no column, missing or truncated statistics, several
    names, an unreadable footer): callers then read the names themselves."""
    try:
        meta = pq.ParquetFile(path).metadata
        index = meta.schema.names.index("file_name")
    except (ValueError, pa.ArrowException, OSError):
        return None
    values: set[object] = set()
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max:
            return None
        # truncated string statistics (some writers shorten long values) prove nothing
        if not getattr(stats, "is_min_value_exact", True) or not getattr(
            stats, "is_max_value_exact", True
        ):
            return None
        values.update((stats.min, stats.max))
    if len(values) != 1:
        return None
    value = values.pop()
    return value.decode() if isinstance(value, bytes) else str(value)


#: A part holding several files' rows is read whole (and split by file) when it has at
#: most this many rows; a larger one (not written by rmqarrow's exporters, which keep
#: shared parts small) is read with a filter for each file instead.
SHARED_PART_ROWS = 1 << 22


class FileRows:
    """Each index file's rows of one dataset table, for readers that go file by file.

    A part that holds one file's rows (its ``file_name`` statistics prove it) is read for
    that file alone.  A part shared by several files (the exporters gather small files
    into shared parts) is read once, when the first of its files is asked for, and split
    by file name; the split parts are kept until a later one is read, so a reader that
    asks for the files in order reads every part once (the cost grows with the rows, not
    with files x parts).
    """

    def __init__(self, parts: list[Path], keep: int = 2) -> None:
        self.own: dict[str, list[Path]] = {}
        self._shared: list[tuple[str | None, str | None, Path, int]] = []
        for p in parts:
            name = single_file_name(p)
            if name is not None:
                self.own.setdefault(name, []).append(p)
                continue
            low, high = _name_range(p)
            self._shared.append((low, high, p, pq.ParquetFile(p).metadata.num_rows))
        self._keep = keep
        self._split: dict[Path, dict[str, Any]] = {}

    def sources(self, name: str) -> list[Any]:
        """Where ``name``'s rows are: parts to read with a ``file_name`` filter (Paths),
        and tables of its rows already split off shared parts (``pyarrow.Table``)."""
        out: list[Any] = list(self.own.get(name, []))
        for low, high, path, rows in self._shared:
            if (low is not None and name < low) or (high is not None and name > high):
                continue  # the statistics prove the part holds none of its rows
            if rows > SHARED_PART_ROWS:
                out.append(path)
                continue
            split = self._split.get(path)
            if split is None:
                split = self._load(path)
            table = split.get(name)
            if table is not None:
                out.append(table)
        return out

    def _load(self, path: Path) -> dict[str, Any]:
        split = split_by_file(pq.read_table(path))
        while len(self._split) >= self._keep:
            self._split.pop(next(iter(self._split)))
        self._split[path] = split
        return split


def split_by_file(table: Any) -> dict[str, Any]:
    """The rows of a table with a ``file_name`` column, by file name (a slice where the
    file's rows are contiguous, as exporters write them; a copy otherwise)."""
    names = pc.dictionary_encode(table.column("file_name")).combine_chunks()
    codes = names.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    split: dict[str, Any] = {}
    for run in np.split(order, bounds) if len(order) else []:
        key = str(names.dictionary[int(codes[run[0]])])
        contiguous = run[-1] - run[0] + 1 == len(run)
        split[key] = table.slice(int(run[0]), len(run)) if contiguous else table.take(run)
    return split


def _name_range(path: Path) -> tuple[str | None, str | None]:
    """The least and greatest ``file_name`` of a part by its statistics (None where they
    cannot prove a bound)."""
    try:
        meta = pq.ParquetFile(path).metadata
        index = meta.schema.names.index("file_name")
    except (ValueError, pa.ArrowException, OSError):
        return None, None
    lows: list[str] = []
    highs: list[str] = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if (
            stats is None
            or not stats.has_min_max
            or not getattr(stats, "is_min_value_exact", True)
            or not getattr(stats, "is_max_value_exact", True)
        ):
            return None, None
        low, high = stats.min, stats.max
        lows.append(low.decode() if isinstance(low, bytes) else str(low))
        highs.append(high.decode() if isinstance(high, bytes) else str(high))
    if not lows:
        return None, None
    return min(lows), max(highs)
