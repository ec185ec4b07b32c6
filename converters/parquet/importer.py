"""Import a Parquet dataset (layout of :mod:`rmqarrow.converters.parquet.export`) back into native
files.

The files written are byte-identical to the ones exported: a zero-filled file of the
geometry's size, then the header from the ``files`` row, every ``slots`` row and every
``entries`` row written at its place.  Row order in the dataset does not matter.

Everything is checked before anything appears in ``out_dir``; a dataset that is
incomplete or inconsistent raises :class:`rmqarrow.errors.DatasetError` naming the table,
the native file and the row at fault:

* missing manifest, table directory or Parquet parts; a part with other columns or types;
* null values; unsafe file names; duplicate ``files`` rows (or one name with mixed
  geometries); header counts out of range for the geometry;
* a file listed in the manifest without a ``files`` row; rows whose ``file_name`` has no
  ``files`` row; row counts different from the manifest's;
* slots out of range, twice, or whose head points outside 1..index_count-1;
* entry positions out of range, twice, or missing (gaps); a ``slot`` or
  ``store_timestamp`` column that disagrees with ``key_hash`` / ``time_diff`` and the
  file's geometry and begin timestamp.

Files are built in a hidden staging directory and only then moved into ``out_dir``
(created if missing); an existing native file is never replaced.  Into a directory that
already holds index files, a dataset is merged only when it fits: the same geometry, no
file name in common and no CommitLog offset range overlapping one of the store's
(:class:`~rmqarrow.errors.MergeConflictError` otherwise: a dataset of the store itself
would double every answer).  The output's writer lock is held throughout, and the
placement is journaled (:func:`~rmqarrow.converters.parquet.atomic.place_journaled`).
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from rmqarrow.converters.manifests import DatasetManifest
from rmqarrow.converters.parquet.atomic import (
    atomic_dir,
    place_journaled,
    recover,
    settle_import,
)
from rmqarrow.converters.parquet.manifest import check_parts, dataset_manifest
from rmqarrow.converters.parquet.parts import FileRows, table_parts
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow._broker import check_store_writable
from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._paths import local_path
from rmqarrow._progress import Progress, ProgressCallback
from rmqarrow._space import disk_full, is_disk_full, reserve
from rmqarrow._staging import sibling
from rmqarrow.errors import (
    DatasetError,
    DiskFullError,
    MergeConflictError,
    OutputExistsError,
    RmqArrowError,
    StoreNotFoundError,
    UsageError,
)
from rmqarrow.format.detect import detect
from rmqarrow.format.layout import ENTRY_DTYPE, SLOT_DTYPE, Geometry, map_regions
from rmqarrow.format.naming import java_name_order, list_index_files
from rmqarrow.index.service import store_geometry

__all__ = ["import_dataset", "list_parts"]

_BATCH_ROWS = 1 << 17
_HEADER_FIELDS = (
    "begin_timestamp",
    "end_timestamp",
    "begin_phy_offset",
    "end_phy_offset",
    "hash_slot_count",
    "index_count",
)


@dataclass(frozen=True)
class _FileRow:
    name: str
    header: dict[str, int]
    geometry: Geometry

    @property
    def entries(self) -> int:
        return max(self.header["index_count"], 1) - 1


def list_parts(
    dataset_dir: Path, table: str, manifest: DatasetManifest | dict[str, Any] | None = None
) -> list[Path]:
    """The Parquet parts of one table (as ``manifest`` lists them: the one snapshot the
    caller read), each checked to hold the table's exact schema."""
    parts = table_parts(dataset_dir, table, manifest)
    expected = SCHEMAS[table]
    for p in parts:
        try:
            schema = pq.read_schema(p)
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"{p}: not a readable Parquet file: {exc}") from None
        got = [(f.name, f.type) for f in schema]
        want = [(f.name, f.type) for f in expected]
        if got != want:
            raise DatasetError(
                f"{p}: wrong schema for table {table}: expected "
                f"{', '.join(f'{n} {t}' for n, t in want)}; found "
                f"{', '.join(f'{n} {t}' for n, t in got)}"
            )
    return parts


def _batches(
    parts: list[Path | pa.Table], table: str, name: str | None = None
) -> Iterator[pa.RecordBatch]:
    """The rows of ``parts`` (of file ``name``, when given): Parquet parts are read with a
    filter, tables (a file's rows split off a shared part by :class:`FileRows`) as they are."""
    # No pre-buffering: it holds whole files in memory (measured: 3x the peak, slower).
    fmt = pads.ParquetFileFormat(
        default_fragment_scan_options=pads.ParquetFragmentScanOptions(pre_buffer=False)
    )
    paths = [str(p) for p in parts if isinstance(p, Path)]
    dataset = pads.dataset(paths, schema=SCHEMAS[table], format=fmt)
    flt = None if name is None else pc.field("file_name") == name
    split = [b for t in parts if isinstance(t, pa.Table) for b in t.to_batches(_BATCH_ROWS)]
    where = Path(paths[0]).parent if paths else Path(table)
    try:
        # Little read-ahead: memory stays ~ a few batches, not 16 x 4 of them.
        read = (
            dataset.to_batches(
                filter=flt, batch_size=_BATCH_ROWS, batch_readahead=2, fragment_readahead=1
            )
            if paths
            else iter(())
        )
        for batch in itertools.chain(split, read):
            for i, column in enumerate(batch.columns):
                if column.null_count:
                    raise DatasetError(
                        f"{where}: column {batch.schema.names[i]} holds nulls"
                        + (f" for file {name}" if name else "")
                    )
            yield batch
    except pa.ArrowException as exc:
        raise DatasetError(f"{where}: unreadable: {exc}") from None


def _safe_name(name: str, where: Path) -> None:
    if not name or name.startswith(".") or any(c in name for c in "/\\\0") or name != name.strip():
        raise DatasetError(f"{where}: file_name {name!r} is not a safe index file name")


def _read_files(dataset_dir: Path, manifest: DatasetManifest) -> list[_FileRow]:
    parts = list_parts(dataset_dir, "files", manifest)
    table = pa.Table.from_batches(list(_batches(parts, "files")), schema=SCHEMAS["files"])
    where = dataset_dir / "files"
    rows: dict[str, _FileRow] = {}
    for rec in table.to_pylist():
        name = rec["file_name"]
        _safe_name(name, where)
        try:
            geometry = Geometry(rec["hash_slot_num"], rec["index_num"])
        except RmqArrowError as exc:
            raise DatasetError(f"{where}: file {name}: {exc}") from None
        row = _FileRow(name, {k: rec[k] for k in _HEADER_FIELDS}, geometry)
        if name in rows:
            old = rows[name]
            if old.geometry != geometry:
                raise DatasetError(
                    f"{where}: file {name} has mixed geometries: {old.geometry} and {geometry}"
                )
            raise DatasetError(f"{where}: duplicate files row for {name}")
        if row.header["index_count"] > geometry.index_num:
            raise DatasetError(
                f"{where}: file {name}: index_count {row.header['index_count']}, expected at "
                f"most index_num {geometry.index_num}"
            )
        if not 0 <= row.header["hash_slot_count"] <= geometry.hash_slot_num:
            raise DatasetError(
                f"{where}: file {name}: hash_slot_count {row.header['hash_slot_count']}, "
                f"expected 0..{geometry.hash_slot_num}"
            )
        rows[name] = row
    listed = [f.file_name for f in manifest.source.files]
    missing = [n for n in listed if n not in rows]
    if missing:
        raise DatasetError(
            f"{where}: missing files row for {', '.join(missing)} (listed in the manifest)"
        )
    extra = [n for n in rows if n not in set(listed)]
    if extra:
        raise DatasetError(f"{where}: files rows for {', '.join(extra)} not in the manifest")
    return sorted(rows.values(), key=lambda r: java_name_order(r.name))


def _check_counts(
    dataset_dir: Path, manifest: DatasetManifest, parts: dict[str, list[Path]]
) -> None:
    for table, files in parts.items():
        found = sum(pq.ParquetFile(p).metadata.num_rows for p in files)
        want = manifest.rows(table, dataset_dir)
        if found != want:
            raise DatasetError(
                f"{dataset_dir / table}: {found} rows, the manifest says {want}; "
                "incomplete or altered dataset"
            )


def _mark(seen: np.ndarray, idx: np.ndarray, filled: int) -> tuple[np.ndarray | None, int]:
    """Mark ``idx`` in ``seen``; the first repeated value (None if none) and the new total.

    Repeats within ``idx`` are found by counting (cheap); only then is ``idx`` sorted.
    """
    if seen[idx].any():
        return idx[np.argmax(seen[idx])], filled
    seen[idx] = True
    total = int(np.count_nonzero(seen))
    if total - filled != len(idx):
        order = np.sort(idx)
        return order[np.argmax(order[1:] == order[:-1]) + 1], total
    return None, total


def _fill_slots(slots: np.ndarray, f: _FileRow, parts: list[Path | pa.Table], where: Path) -> int:
    count = max(f.header["index_count"], 1)
    seen = np.zeros(f.geometry.hash_slot_num, dtype=bool)
    n = 0
    for batch in _batches(parts, "slots", f.name):
        slot = batch.column("slot").to_numpy()
        head = batch.column("head").to_numpy()
        bad = (slot < 0) | (slot >= f.geometry.hash_slot_num)
        if bad.any():
            raise DatasetError(
                f"{where}: file {f.name}: slot {int(slot[np.argmax(bad)])} out of range "
                f"0..{f.geometry.hash_slot_num - 1}"
            )
        bad = (head < 1) | (head >= count)
        if bad.any():
            i = int(np.argmax(bad))
            raise DatasetError(
                f"{where}: file {f.name}: slot {int(slot[i])} head {int(head[i])} points past "
                f"the entries (expected 1..{count - 1}, index_count {f.header['index_count']})"
            )
        dup, n = _mark(seen, slot, n)
        if dup is not None:
            raise DatasetError(f"{where}: file {f.name}: slot {int(dup)} twice")
        slots[slot] = head
    return n


def _fill_entries(
    entries: np.ndarray, f: _FileRow, parts: list[Path | pa.Table], where: Path, bar: Progress
) -> int:
    """Scatter the rows of file ``f`` into ``entries`` (ENTRY_DTYPE, positions 0..count-1)."""
    count = max(f.header["index_count"], 1)
    begin = np.int64(f.header["begin_timestamp"])
    seen = np.zeros(count, dtype=bool)
    seen[0] = True
    n = 1
    records = entries.view(f"V{ENTRY_DTYPE.itemsize}")
    for batch in _batches(parts, "entries", f.name):
        c = {name: batch.column(name).to_numpy() for name in batch.schema.names[1:]}
        pos = c["position"]
        bad = (pos < 1) | (pos >= count)
        if bad.any():
            raise DatasetError(
                f"{where}: file {f.name}: position {int(pos[np.argmax(bad)])} out of range "
                f"1..{count - 1} (index_count {f.header['index_count']})"
            )
        dup, n = _mark(seen, pos, n)
        if dup is not None:
            raise DatasetError(f"{where}: file {f.name}: duplicate rows for position {int(dup)}")
        key_hash = c["key_hash"]
        slot = np.fmod(key_hash, np.int32(f.geometry.hash_slot_num))
        bad = slot != c["slot"]
        if bad.any():
            i = int(np.argmax(bad))
            raise DatasetError(
                f"{where}: file {f.name}: position {int(pos[i])}: slot {int(c['slot'][i])}, but "
                f"key_hash {int(key_hash[i])} % hash_slot_num {f.geometry.hash_slot_num} is "
                f"{int(slot[i])} (mixed geometries?)"
            )
        with np.errstate(over="ignore"):
            ts = begin + c["time_diff"].astype(np.int64) * np.int64(1000)
        bad = ts != c["store_timestamp"]
        if bad.any():
            i = int(np.argmax(bad))
            raise DatasetError(
                f"{where}: file {f.name}: position {int(pos[i])}: store_timestamp "
                f"{int(c['store_timestamp'][i])}, expected begin_timestamp + time_diff*1000 = "
                f"{int(ts[i])}"
            )
        rec = np.empty(len(pos), dtype=ENTRY_DTYPE)
        for name in ENTRY_DTYPE.names or ():
            rec[name] = c[name]
        records[pos] = rec.view(records.dtype)
        bar.advance(len(pos))
    if n != count:
        missing = int(np.argmin(seen))
        raise DatasetError(
            f"{where}: file {f.name}: {n - 1} entries for index_count "
            f"{f.header['index_count']} (expected {count - 1}); position {missing} is missing"
        )
    return n - 1


def _write_file(
    path: Path,
    f: _FileRow,
    parts: dict[str, list[Path | pa.Table]],
    dataset_dir: Path,
    bar: Progress,
) -> tuple[int, int]:
    """Build the regions in memory (random scatter is cheap there), then copy them into a
    fresh zero-filled map in order (sequential page faults only)."""
    count = max(f.header["index_count"], 1)
    slots = np.zeros(f.geometry.hash_slot_num, dtype=SLOT_DTYPE)
    entries = np.zeros(count, dtype=ENTRY_DTYPE)
    n_slots = _fill_slots(slots, f, parts["slots"], dataset_dir / "slots")
    n_entries = _fill_entries(entries, f, parts["entries"], dataset_dir / "entries", bar)
    with open(path, "xb") as fh:
        reserve(fh.fileno(), f.geometry.file_size, path)  # space first: no SIGBUS
    m = map_regions(path, f.geometry, writable=True)
    try:
        for k in _HEADER_FIELDS:
            m.header[k] = f.header[k]
        m.slots[:] = slots
        m.entries[:count] = entries
    finally:
        m.close()
    return n_slots, n_entries


def _unknown_names(parts: list[Path], table: str, known: set[str]) -> list[str]:
    dataset = pads.dataset([str(p) for p in parts], schema=SCHEMAS[table], format="parquet")
    names = pc.unique(dataset.to_table(columns=["file_name"]).column("file_name"))
    return sorted(set(names.to_pylist()) - known)


def _store_ranges(out: Path) -> tuple[list[tuple[str, int, int, int]], Geometry | None]:
    """The store's index files with entries: (name, size, begin and end CommitLog offset),
    and the geometry its file sizes fit (None for a store of no index file)."""
    paths = list_index_files(out)
    if not paths:
        return [], None
    geometry, _ = store_geometry(out)
    found = []
    for p in paths:
        try:
            with open(p, "rb") as fh:
                head = fh.read(40)
                size = os.fstat(fh.fileno()).st_size
        except OSError:
            continue
        if len(head) < 40:
            continue
        _, _, begin, end, _, count = struct.unpack(">qqqqii", head)
        found.append((p.name, size, begin, end) if count > 1 else (p.name, size, -1, -1))
    return found, geometry


def check_merge(out: Path, files: list[_FileRow]) -> None:
    """Refuse to merge ``files`` into the store ``out`` when they would mix geometries or
    index CommitLog offsets the store already indexes (the same messages twice: every
    answer doubled), in one line naming the conflict."""
    store, geometry = _store_ranges(out)
    if geometry is None:
        return
    for f in files:
        if f.geometry != geometry:
            raise MergeConflictError(
                f"{out}: holds index files of geometry {geometry}, the dataset's file "
                f"{f.name} is {f.geometry}; a store holds one geometry: import into another "
                "directory"
            )
    mine = [(n, b, e) for n, _, b, e in store if b >= 0]
    for f in files:
        if f.entries == 0:
            continue
        b, e = f.header["begin_phy_offset"], f.header["end_phy_offset"]
        for name, sb, se in mine:
            # files of one store meet at most at one offset (a message whose keys span a roll)
            if (b < se and sb < e) or (b, e) == (sb, se):
                raise MergeConflictError(
                    f"{out}: the dataset's file {f.name} indexes CommitLog offsets {b}..{e}, "
                    f"the store's file {name} already indexes {sb}..{se}; importing would "
                    "index those messages twice (is the dataset exported from this store?): "
                    "import into another directory"
                )


def import_dataset(
    dataset_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    progress: ProgressCallback | None = None,
    trust: bool = False,
    wait: Wait = False,
    force: bool = False,
) -> list[Path]:
    """Rebuild the native files of ``dataset_dir`` in ``out_dir``; returns their paths.

    The dataset's parts are first checked against its manifest (names, sizes, checksums;
    :func:`~rmqarrow.converters.parquet.manifest.check_parts`) unless ``trust``.  Killed
    runs' leftovers next to ``out_dir`` are cleaned first (an interrupted import into an
    existing directory is taken out again, see
    :func:`~rmqarrow.converters.parquet.atomic.recover_import`).

    ``out_dir`` is created when missing (then it appears complete, by one rename); when it
    holds index files, the dataset must fit them (:func:`check_merge`).  ``wait``: whether
    to wait for another writer of ``out_dir`` (see :func:`rmqarrow._lock.acquire`).  An
    ``out_dir`` in the store of a running RocketMQ broker is refused before anything is
    read or written (:func:`rmqarrow._broker.check_store_writable`; ``force`` only for a
    copy whose ``abort`` is left without a ``lock`` file).
    """
    out = local_path(out_dir).absolute()
    check_store_writable(out, force=force)
    src = Path(dataset_dir)
    if not src.is_dir():
        raise StoreNotFoundError(f"{src}: no such dataset directory")
    manifest = dataset_manifest(src)
    if not trust:
        check_parts(src, manifest, full=True)
    files = _read_files(src, manifest)
    parts = {t: list_parts(src, t, manifest) for t in ("slots", "entries")}
    _check_counts(src, manifest, {"files": list_parts(src, "files", manifest), **parts})
    by_file = {t: FileRows(parts[t]) for t in parts}

    def parts_of(name: str) -> dict[str, list[Path | pa.Table]]:
        return {t: rows.sources(name) for t, rows in by_file.items()}

    _check_import_place(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with writer_lock(out, wait=wait):
        return _import_locked(src, out, manifest, files, parts, parts_of, progress)


#: what an import must never write index files into, and what to write into instead
_NOT_A_PLACE = {
    "broker_root": "a broker store root; import into its index directory",
    "dataset": "an exported dataset; import into a new directory",
    "tiered_dataset": "an exported dataset; import into a new directory",
    "commitlog_dir": "a CommitLog directory; import into a new directory",
    "tiered": "tiered index files; import into a new directory",
}


def _check_import_place(out_dir: str | os.PathLike[str]) -> None:
    """Index files go into a new, empty or index directory: never next to a broker's
    commitlog/, inside a dataset (an overwrite would delete them) or among CommitLog files."""
    t = detect(out_dir)
    if t.kind in _NOT_A_PLACE:
        raise UsageError(f"{out_dir}: {_NOT_A_PLACE[t.kind]}")


def _import_locked(
    src: Path,
    out: Path,
    manifest: DatasetManifest,
    files: list[_FileRow],
    parts: dict[str, list[Path]],
    parts_of: Callable[[str], dict[str, list[Path | pa.Table]]],
    progress: ProgressCallback | None,
) -> list[Path]:
    recover(out)
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"{out}: exists and is not a directory")
    if out.is_dir():
        taken = [f.name for f in files if os.path.lexists(out / f.name)]
        if taken:
            named = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
            raise OutputExistsError(
                f"{out}: already holds {named}; rmqarrow never overwrites native files: "
                "import into a new folder, or move those files out first"
            )
        check_merge(out, files)
    bar = Progress(sum(f.entries for f in files), "import", "entries", callback=progress)
    totals = {"slots": 0, "entries": 0}

    def build(staging: Path) -> None:
        with bar:
            for f in files:
                s, e = _write_file(staging / f.name, f, parts_of(f.name), src, bar)
                crash_point("import:file")
                totals["slots"] += s
                totals["entries"] += e
        for table in ("slots", "entries"):
            want = manifest.rows(table, src)
            if totals[table] != want:
                unknown = _unknown_names(parts[table], table, {f.name for f in files})
                raise DatasetError(
                    f"{src / table}: rows for file_name {', '.join(map(repr, unknown))} "
                    f"without a files row"
                    if unknown
                    else f"{src / table}: {totals[table]} rows belong to the files, "
                    f"manifest says {want}"
                )
        mtimes = {x.file_name: x.mtime_ns for x in manifest.source.files}
        for f in files:
            mtime = mtimes.get(f.name)
            if mtime is not None and mtime >= 0:  # the source file's, when recorded
                os.utime(staging / f.name, ns=(mtime, mtime))

    try:
        if not out.exists():
            with atomic_dir(out) as staging:
                build(staging)
            return [out / f.name for f in files]
        # staged next to the store, never inside it (RocketMQ's load opens every entry)
        staging = sibling(out, "import")
        staging.mkdir()
        try:
            build(staging)
            return place_journaled(staging, [f.name for f in files], out)
        except BaseException:
            settle_import(staging, out)  # by its journal: finished, rolled back or removed
            raise
    except OSError as exc:
        if is_disk_full(exc) and not isinstance(exc, DiskFullError):
            raise disk_full(out, None, exc) from None
        raise
