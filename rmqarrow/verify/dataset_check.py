"""Check an exported Parquet dataset against the native files it came from.

What is compared (each difference becomes one problem line naming file and field):

* the manifest (``_rmqarrow.json``): source files added, removed, resized or modified
  since the export (``rmqarrow.converters.parquet.manifest.stale_reasons``);
* ``files``: one row per native file, every header field and the geometry equal;
* row counts per file: ``entries`` = index_count - 1, ``slots`` = non-zero slot heads, and
  every ``slots`` row equal to its native slot head;
* sampled entries: rows at random positions of every file equal, column by column, the
  native entry decoded from the mapped file (the raw fields and the derived ``slot`` and
  ``store_timestamp``).

Cost: row counts come from the parts' footers, sampled rows from the row groups their
slots' statistics admit; only the part checksums read every byte (on two threads).  Each
file's rows are read from the parts that hold it (known from the same footers), so the
check is linear in the number of files, and one native file is mapped at a time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from rmqarrow.converters.arrow.scan import decode_entries
from rmqarrow.converters.parquet.manifest import check_parts, one_snapshot, stale_reasons
from rmqarrow.converters.parquet.parts import split_by_file, table_parts
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.errors import DatasetError
from rmqarrow.format.layout import map_regions
from rmqarrow.index.indexfile import IndexFile

__all__ = ["DatasetSourceCheck", "check_dataset"]

_TABLES = ("files", "slots", "entries")
_HEADER_FIELDS = (
    "begin_timestamp",
    "end_timestamp",
    "begin_phy_offset",
    "end_phy_offset",
    "hash_slot_count",
    "index_count",
)


@dataclass
class DatasetSourceCheck:
    """The outcome of :func:`check_dataset`, a dataset against the store it came from (not
    :class:`rmqarrow.store.DatasetCheck`, its parts against its own manifest); ``ok`` when
    ``problems`` and ``stale`` are empty."""

    dataset: str
    files_checked: int = 0
    entries_sampled: int = 0
    stale: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.stale

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "ok": self.ok,
            "files_checked": self.files_checked,
            "entries_sampled": self.entries_sampled,
            "stale": self.stale,
            "problems": self.problems,
        }


def _table_dataset(root: Path, table: str) -> Any:
    return pads.dataset([str(p) for p in table_parts(root, table)], format="parquet")


@dataclass
class _TableIndex:
    """Rows per ``file_name`` and the parts holding each name, of one table."""

    table: str
    counts: dict[str, int] = field(default_factory=dict)
    parts: dict[str, list[str]] = field(default_factory=dict)
    #: the row groups read last, kept: a part shared by small files holds many files in
    #: one row group, which the files after each other then read once
    _last: tuple[tuple[str, tuple[int, ...]], Any] | None = None

    def add(self, name: str, rows: int, part: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + rows
        held = self.parts.setdefault(name, [])
        if not held or held[-1] != part:
            held.append(part)

    def rows_of(self, name: str, positions: Any = None, slots: list[int] | None = None) -> Any:
        """The rows of file ``name`` (a table of the schema), only those at ``positions``
        and in ``slots`` when given.

        Only the row groups whose statistics admit ``name`` (and one of ``slots``) are
        read, each part directly: a scanner per file (pyarrow.dataset) cost twenty times
        as much, which dominated the check of a store of small files.  The rows are
        picked with a mask, not a filter expression (whose planning costs a millisecond
        a call: most of a check of 10,000 small files).
        """
        schema = SCHEMAS[self.table]
        tables = []
        for part in self.parts.get(name, []):
            with pq.ParquetFile(part) as f:
                meta = f.metadata
                names = meta.schema.names
                groups = [
                    g
                    for g in range(meta.num_row_groups)
                    if _admits(meta.row_group(g).column(names.index("file_name")), [name])
                    and (
                        slots is None
                        or _admits(meta.row_group(g).column(names.index("slot")), slots)
                    )
                ]
                if not groups:
                    continue
                key = (part, tuple(groups))
                if self._last is None or self._last[0] != key:
                    read = f.read_row_groups(groups, use_threads=False)
                    self._last = (key, split_by_file(read))
                mine = self._last[1].get(name)
                if mine is not None:
                    tables.append(mine)
        rows = pa.concat_tables(tables) if tables else schema.empty_table()
        keep = pc.equal(rows.column("file_name"), pa.scalar(name, pa.string()))
        if positions is not None:
            keep = pc.and_(keep, pc.is_in(rows.column("position"), value_set=positions))
        if slots is not None:
            wanted = pa.array(slots, pa.int32())
            keep = pc.and_(keep, pc.is_in(rows.column("slot"), value_set=wanted))
        return rows.filter(keep)


def _admits(column: Any, values: Any) -> bool:
    """Whether a row group's statistics of ``column`` allow one of ``values``."""
    stats = column.statistics
    if stats is None or not stats.has_min_max:
        return True
    low, high = stats.min, stats.max
    if isinstance(low, bytes) or isinstance(high, bytes):
        return True  # undecoded strings: read rather than guess
    return any(low <= v <= high for v in values)


def _counts(root: Path, table: str) -> _TableIndex:
    """Rows per ``file_name``, row group by row group: a row group whose ``file_name``
    statistics have min = max (every row group an exporter writes: one native file a
    part) is counted from the footer; any other is read, that column only.  Reading every
    row's name instead took a third of a six-file verify and grew with the store."""
    index = _TableIndex(table)
    for path in table_parts(root, table):
        part = str(path)
        with pq.ParquetFile(part) as f:
            column = f.schema_arrow.get_field_index("file_name")
            for i in range(f.metadata.num_row_groups):
                rg = f.metadata.row_group(i)
                stats = rg.column(column).statistics
                if (
                    stats is not None
                    and stats.has_min_max
                    and stats.has_null_count
                    and stats.null_count == 0
                    and stats.min == stats.max
                ):
                    name = stats.min if isinstance(stats.min, str) else bytes(stats.min).decode()
                    index.add(name, rg.num_rows, part)
                    continue
                names = f.read_row_group(i, columns=["file_name"]).column(0)
                for v in pc.value_counts(names).to_pylist():
                    index.add(str(v["values"]), int(v["counts"]), part)
    return index


def check_dataset(
    dataset: str | os.PathLike[str],
    store: str | os.PathLike[str],
    files: Sequence[IndexFile],
    *,
    sample: int = 200,
    seed: int = 0,
) -> DatasetSourceCheck:
    """Compare ``dataset`` with the native ``files`` of ``store`` (oldest first).

    A part that cannot be read (damaged pages behind a valid footer) is a problem of the
    check, never a traceback."""
    try:
        with one_snapshot(dataset):  # one run's tables, whatever a writer commits meanwhile
            return _check_dataset(dataset, store, files, sample=sample, seed=seed)
    except (pa.ArrowException, OSError) as exc:
        check = DatasetSourceCheck(str(Path(dataset)))
        try:
            check_parts(dataset, full=True)
        except DatasetError as bad:
            check.problems.append(f"parts: {bad}")
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        check.problems.append(f"{dataset}: a part cannot be read: {first}")
        return check


def _check_dataset(
    dataset: str | os.PathLike[str],
    store: str | os.PathLike[str],
    files: Sequence[IndexFile],
    *,
    sample: int,
    seed: int,
) -> DatasetSourceCheck:

    root = Path(dataset)
    check = DatasetSourceCheck(str(root))
    try:
        check.stale = stale_reasons(root, store)
    except DatasetError as exc:
        check.problems.append(f"manifest: {exc}")
    try:  # every part listed in the manifest, unchanged, and no other: copies are refused
        check_parts(root, full=True)
    except DatasetError as exc:
        check.problems.append(f"parts: {exc}")
    try:
        tables = {t: _table_dataset(root, t) for t in _TABLES}
    except DatasetError as exc:
        check.problems.append(str(exc))
        return check

    for t, ds in tables.items():
        columns = [(f.name, str(f.type)) for f in SCHEMAS[t]]
        found = [(f.name, str(f.type)) for f in ds.schema]
        if found != columns:
            check.problems.append(f"{t}: columns {found} differ from the schema {columns}")
            return check
    rows = {r["file_name"]: r for r in tables["files"].to_table().to_pylist()}
    del tables  # from here each file's rows come from its own parts
    native = {f.name: f for f in files}
    for name in sorted(set(native) - set(rows)):
        check.problems.append(f"files: {name} is in the store but has no files row")
    for name in sorted(set(rows) - set(native)):
        check.problems.append(f"files: row {name} has no native file in the store")
    entry_counts = _counts(root, "entries")
    slot_counts = _counts(root, "slots")
    rng = np.random.default_rng(seed)
    per_file = max(1, sample // max(len(files), 1))
    for f in files:
        row = rows.get(f.name)
        if row is None:
            continue
        check.files_checked += 1
        want = {k: getattr(f, k) for k in _HEADER_FIELDS}
        want.update(hash_slot_num=f.geometry.hash_slot_num, index_num=f.geometry.index_num)
        for k, v in want.items():
            if row[k] != v:
                check.problems.append(
                    f"files: {f.name} {k} is {row[k]} in the dataset, {v} in the native header"
                )
        n = f.entry_count
        if entry_counts.counts.get(f.name, 0) != n:
            check.problems.append(
                f"entries: {f.name} has {entry_counts.counts.get(f.name, 0)} "
                f"rows, expected {n} (index_count - 1)"
            )
        m = map_regions(f.path, f.geometry, writable=False)
        try:
            used = np.flatnonzero(m.slots)
            heads = m.slots[used].astype(np.int32)
            if slot_counts.counts.get(f.name, 0) != used.size:
                check.problems.append(
                    f"slots: {f.name} has {slot_counts.counts.get(f.name, 0)} "
                    f"rows, expected {used.size} (non-zero slot heads)"
                )
            else:
                _compare_slots(check, slot_counts, f.name, used, heads)
            if n == 0:
                continue
            positions = np.unique(rng.integers(1, n + 1, size=min(per_file, n)))

            want_cols = decode_entries(
                m.entries[positions], 0, f.begin_timestamp, f.geometry.hash_slot_num
            )
            want_cols["position"] = positions.astype(np.int32)
        finally:
            m.close()
        # The sampled rows' slots too, so the parts' slot statistics skip every row group
        # but theirs; only when a row is not found so is the whole part read, to tell why.
        wanted = pa_array(positions)
        got = entry_counts.rows_of(
            f.name, wanted, slots=np.unique(want_cols["slot"]).tolist()
        ).sort_by("position")
        got_pos = got.column("position").to_numpy()
        if not np.array_equal(got_pos, positions):
            got = entry_counts.rows_of(f.name, wanted).sort_by("position")
            got_pos = got.column("position").to_numpy()
        check.entries_sampled += len(positions)
        if got_pos.size != positions.size or not np.array_equal(got_pos, positions):
            lost = sorted(set(positions.tolist()) - set(got_pos.tolist()))
            check.problems.append(
                f"entries: {f.name} positions {lost[:10]} missing or duplicated in the dataset"
            )
            continue
        for col, values in want_cols.items():
            have = got.column(col).to_numpy()
            diff = np.flatnonzero(have != values)
            if diff.size:
                i = int(diff[0])
                check.problems.append(
                    f"entries: {f.name} position {int(positions[i])} {col} is {int(have[i])} in "
                    f"the dataset, {int(values[i])} in the native file "
                    f"({diff.size} of {positions.size} sampled rows differ)"
                )
    return check


def _compare_slots(
    check: DatasetSourceCheck, slots: _TableIndex, name: str, used: np.ndarray, heads: np.ndarray
) -> None:
    """Every slots row of a file against the native slot heads."""

    got = slots.rows_of(name).select(["slot", "head"])
    got = got.sort_by("slot")
    slot = got.column("slot").to_numpy()
    head = got.column("head").to_numpy()
    if not np.array_equal(slot, used):
        check.problems.append(
            f"slots: {name} rows are for other slots than the native file's non-zero heads"
        )
        return
    diff = np.flatnonzero(head != heads)
    if diff.size:
        i = int(diff[0])
        check.problems.append(
            f"slots: {name} slot {int(used[i])} head is {int(head[i])} in the "
            f"dataset, {int(heads[i])} in the native file "
            f"({diff.size} slots differ)"
        )


def pa_array(values: np.ndarray) -> Any:
    return pa.array(values.astype(np.int32))
