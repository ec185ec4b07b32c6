"""The index-health figures of an exported dataset, computed in bounded memory.

``rmqarrow stats`` states its figures as DuckDB SQL (:mod:`rmqarrow.converters.stats.sql`).
Over many full files the statements that need every entry at once (windows over each
file's positions, group-bys over every key hash and every offset) spill and slow down
faster than the store grows.  The exporter's layout lets the same figures be computed in
three passes whose memory does not depend on the number of files:

1. per file, its entries in position order: count, first and last store time and the
   out-of-order store times; each row's offset and key hash go to a spill bucket by
   offset range;
2. per range of slots, across all files: a key hash lives in the same slot in every file
   of one geometry, and the parts are in (slot, position) order with row-group
   statistics, so a range reads only its row groups: slot loads, chain links and heads,
   negative time diffs, distinct key hashes and the hottest keys;
3. per offset bucket: distinct and repeated offsets, repeated (key hash, offset) pairs
   and the most repeated offsets.

:func:`scan` returns None where that layout does not hold (a part holding several files,
files of different slot counts, a slot that is not its key hash's): the SQL answers then.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.parquet.parts import single_file_name, table_parts

from rmqarrow._progress import Progress, ProgressCallback
from rmqarrow.errors import DatasetError, DiskFullError

__all__ = ["BUCKET_ROWS", "CHUNK_ROWS", "DUPLICATES_SCHEMA", "HOT_KEYS_SCHEMA", "Figures", "scan"]

#: Rows of all files read together in one range of slots (pass 2).
CHUNK_ROWS = 8 << 20
#: Rows of one offset bucket (pass 3); up to this many rows in all, nothing is spilled.
BUCKET_ROWS = 8 << 20
#: Bytes a spilled row takes: offset, key hash, file number.
_SPILL_ROW_BYTES = 8 + 4 + 2

HOT_KEYS_SCHEMA = pa.schema(
    [
        ("key_hash", pa.int32()),
        ("entries", pa.int64()),
        ("offsets", pa.int64()),
        ("files", pa.int64()),
        ("first_ms", pa.int64()),
        ("last_ms", pa.int64()),
    ]
)
DUPLICATES_SCHEMA = pa.schema(
    [
        ("phy_offset", pa.int64()),
        ("entries", pa.int64()),
        ("key_hashes", pa.int64()),
        ("files", pa.int64()),
        ("same_key_repeats", pa.int64()),
    ]
)
FILE_ENTRIES_SCHEMA = pa.schema(
    [
        ("file_name", pa.string()),
        ("entries", pa.int64()),
        ("first_entry_ms", pa.int64()),
        ("last_entry_ms", pa.int64()),
        ("out_of_order", pa.int64()),
    ]
)
_CHUNK_COLUMNS = [
    "slot",
    "position",
    "prev_index",
    "time_diff",
    "key_hash",
    "phy_offset",
    "store_timestamp",
]


@dataclass(frozen=True)
class Figures:
    """What the passes found; :mod:`rmqarrow.converters.stats.sql` turns it into the same
    tables its SQL gives."""

    files: int
    capacity: int | None
    entries: int
    first_store_ms: int | None
    last_store_ms: int | None
    distinct_key_hashes: int
    distinct_offsets: int
    #: file_name, entries, first_entry_ms, last_entry_ms, out_of_order (files with entries)
    file_entries: pa.Table
    #: file_name, s (slot count), n (entries) of every file in ``files``
    file_fill: pa.Table
    #: load, slots: how many slots (summed over files) hold each non-zero load
    load_slots: pa.Table
    hot_keys: pa.Table
    duplicates: pa.Table
    duplicates_summary: dict[str, int]
    chain_check: dict[str, int]


@dataclass
class _File:
    name: str
    parts: list[Path]  # its entries (several when written on several threads)
    slot_parts: list[Path]
    rows: int


class _NotPartitioned(Exception):
    """The dataset breaks an assumption of the passes: the SQL answers instead."""


def scan(
    dataset_dir: str | os.PathLike[str],
    *,
    top: int = 10,
    spill_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> Figures | None:
    """The figures of ``dataset_dir`` (checked by the caller's connection), or None when its
    layout does not allow the passes.  Offset buckets spill to a temporary directory under
    ``spill_dir`` (default: the system's) when there are more than :data:`BUCKET_ROWS`
    entries; it is removed after."""
    try:
        layout = _layout(Path(dataset_dir))
        if layout is None:
            return None
        files_table, files, slot_num = layout
        total = sum(f.rows for f in files)
        with (
            Progress(3 * total or None, "stats", "rows", callback=progress) as bar,
            _Spilling(files, total, spill_dir) as buckets,
        ):
            per_file = [_position_pass(f, i, buckets, bar) for i, f in enumerate(files)]
            slots = _slot_pass(files, slot_num, top, bar)
            offsets = _offset_pass(buckets, top, bar)
    except _NotPartitioned:
        return None
    except DiskFullError:
        raise
    except (pa.ArrowException, OSError) as exc:  # Arrow reports damaged pages as OSError
        raise DatasetError(
            f"{dataset_dir}: a part cannot be read: {exc}; `rmqarrow verify` tells which, "
            "or export the store again"
        ) from None
    return _figures(files_table, files, top, per_file, slots, offsets)


def _layout(root: Path) -> tuple[pa.Table, list[_File], int] | None:
    files_table = pa.concat_tables([pq.read_table(p) for p in table_parts(root, "files")]).select(
        ["file_name", "hash_slot_num", "index_num"]
    )
    names = files_table.column("file_name").to_pylist()
    slot_nums = set(files_table.column("hash_slot_num").to_pylist())
    if len(set(names)) != len(names) or len(slot_nums) != 1:
        return None
    entry_parts = _parts_by_file(root, "entries")
    slot_parts = _parts_by_file(root, "slots")
    if entry_parts is None or slot_parts is None or not set(entry_parts) <= set(names):
        return None
    files = [
        _File(
            name,
            parts,
            slot_parts.get(name, []),
            sum(pq.ParquetFile(p).metadata.num_rows for p in parts),
        )
        for name, parts in sorted(entry_parts.items())
    ]
    if len(files) >= 1 << 16:
        return None
    return files_table, files, int(slot_nums.pop())


def _parts_by_file(root: Path, table: str) -> dict[str, list[Path]] | None:
    """The parts of each file (in name order), or None when a part holds several files."""
    found: dict[str, list[Path]] = {}
    for part in table_parts(root, table):
        if pq.ParquetFile(part).metadata.num_rows == 0:
            continue
        name = single_file_name(part)
        if name is None:
            return None
        found.setdefault(name, []).append(part)
    return found


def _column(table: pa.Table, name: str) -> np.ndarray:
    return np.asarray(table.column(name).combine_chunks().to_numpy())


# --- pass 1: each file in position order -------------------------------------------------


def _position_pass(
    f: _File, number: int, buckets: _OffsetBuckets, progress: Progress
) -> tuple[int, int | None, int | None, int]:
    """Entries, first and last store time and out-of-order count of one file; its offsets
    and key hashes go to their buckets."""
    position, stamp = _read(f.parts, "position"), _read(f.parts, "store_timestamp")
    n = len(position)
    first = int(stamp.min()) if n else None
    last = int(stamp.max()) if n else None
    late = _out_of_order(position, stamp)
    del position, stamp
    buckets.add(number, _read(f.parts, "phy_offset"), _read(f.parts, "key_hash"))
    pa.default_memory_pool().release_unused()
    progress.advance(n)
    return n, first, last, late


def _read(parts: list[Path], name: str) -> np.ndarray:
    """One column of a file's parts (read alone: the Arrow copy is freed before the
    next)."""
    columns = [_column(pq.read_table(p, columns=[name]), name) for p in parts]
    return columns[0] if len(columns) == 1 else np.concatenate(columns)


def _out_of_order(position: np.ndarray, stamp: np.ndarray) -> int:
    """Entries stored earlier than some entry at a lower position of the file."""
    n = len(position)
    if n < 2:
        return 0
    low = int(position.min())
    ordered = None
    if int(position.max()) - low + 1 == n:  # positions low .. low + n - 1, once each?
        seen = np.zeros(n, np.bool_)
        seen[position - low] = True
        if seen.all():
            ordered = np.empty_like(stamp)
            ordered[position - low] = stamp
    if ordered is None:
        ordered = stamp[np.argsort(position, kind="stable")]
    late, highest = 0, ordered[0]
    for start in range(1, n, _BLOCK):
        block = ordered[start : start + _BLOCK]
        running = np.maximum.accumulate(block)
        late += int(np.count_nonzero(block[0] < highest))
        late += int(np.count_nonzero(block[1:] < np.maximum(running[:-1], highest)))
        highest = max(highest, running[-1])
    return late


#: Rows a block-wise running maximum works on at a time.
_BLOCK = 1 << 20


# --- pass 2: ranges of slots across all files ----------------------------------------------


@dataclass
class _SlotFigures:
    load_counts: np.ndarray
    broken_links: int = 0
    wrong_heads: int = 0
    negative_time_diffs: int = 0
    distinct_key_hashes: int = 0
    hot: list[np.ndarray] | None = None


def _slot_pass(files: list[_File], slot_num: int, top: int, progress: Progress) -> _SlotFigures:
    total = sum(f.rows for f in files)
    ranges = max(1, math.ceil(total / CHUNK_ROWS))
    # every int32 slot falls in one range: a slot outside 0 .. slot_num - 1 is not its key
    # hash's, which the range it lands in finds
    bounds = [-(1 << 31), *(slot_num * i // ranges for i in range(1, ranges)), 1 << 31]
    readers = [_RangeReader(f.parts, _CHUNK_COLUMNS) for f in files]
    heads = [_RangeReader(f.slot_parts, ["slot", "head"]) if f.slot_parts else None for f in files]
    out = _SlotFigures(load_counts=np.zeros(2, np.int64), hot=[])
    for lo, hi in itertools.pairwise(bounds):
        keys, offsets, stamps, numbers = [], [], [], []
        for number, (reader, head_reader) in enumerate(zip(readers, heads, strict=True)):
            rows = reader.read(lo, hi)
            _chains(rows, head_reader.read(lo, hi) if head_reader else None, out)
            if not np.array_equal(rows["slot"], _java_remainder(rows["key_hash"], slot_num)):
                raise _NotPartitioned
            keys.append(rows["key_hash"])
            offsets.append(rows["phy_offset"])
            stamps.append(rows["store_timestamp"])
            numbers.append(np.full(len(rows["key_hash"]), number, np.uint16))
            progress.advance(len(rows["key_hash"]))
        _hot_keys(
            np.concatenate(keys),
            np.concatenate(offsets),
            np.concatenate(stamps),
            np.concatenate(numbers),
            top,
            out,
        )
        pa.default_memory_pool().release_unused()
    return out


def _java_remainder(values: np.ndarray, divisor: int) -> np.ndarray:
    """``values % divisor`` as Java computes it (the sign of the dividend)."""
    out: np.ndarray = np.fmod(values, divisor).astype(np.int32, copy=False)
    return out


class _RangeReader:
    """The rows of a file's parts whose slot lies in a range, reading only the row groups
    whose statistics overlap it (parts in order: consecutive ranges of the slot order
    stay in order)."""

    def __init__(self, parts: list[Path], columns: list[str]) -> None:
        # footers only: a part is opened while it is read, so the descriptors in use stay
        # flat in the number of files (one reader per file lives through the pass)
        self.parts = parts
        self.metas = [pq.read_metadata(p) for p in parts]
        self.columns = columns
        self.bounds = [self._slot_bounds(m) for m in self.metas]

    @staticmethod
    def _slot_bounds(meta: pq.FileMetaData) -> tuple[np.ndarray, np.ndarray]:
        index = meta.schema.names.index("slot")
        groups = meta.num_row_groups
        low = np.full(groups, -(1 << 31), np.int64)
        high = np.full(groups, (1 << 31) - 1, np.int64)
        for g in range(groups):
            stats = meta.row_group(g).column(index).statistics
            if stats is not None and stats.has_min_max:
                low[g], high[g] = int(stats.min), int(stats.max)
        return low, high

    def read(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        tables: list[pa.Table] = []
        for part, meta, (low, high) in zip(self.parts, self.metas, self.bounds, strict=True):
            groups = np.flatnonzero((high >= lo) & (low < hi)).tolist()
            if groups or not tables:
                with pq.ParquetFile(part, metadata=meta) as f:
                    tables.append(f.read_row_groups(groups, columns=self.columns))
        t = pa.concat_tables(tables)
        rows = {c: _column(t, c) for c in self.columns}
        slot = rows["slot"]
        inside = (slot >= lo) & (slot < hi)
        if not inside.all():
            rows = {c: v[inside] for c, v in rows.items()}
        return rows


def _chains(
    rows: dict[str, np.ndarray], heads: dict[str, np.ndarray] | None, out: _SlotFigures
) -> None:
    """Loads, broken links, wrong heads and negative time diffs of one file's slots in a
    range (CHAIN_CHECK_SQL's conditions)."""
    slot, position = rows["slot"], rows["position"]
    n = len(slot)
    out.negative_time_diffs += int(np.count_nonzero(rows["time_diff"] < 0))
    if n and not _in_slot_order(slot, position):
        order = np.lexsort((position, slot))
        rows.update({c: v[order] for c, v in rows.items()})
        slot, position = rows["slot"], rows["position"]
    starts = (
        np.flatnonzero(np.concatenate(([True], slot[1:] != slot[:-1])))
        if n
        else (np.empty(0, np.int64))
    )
    ends = np.append(starts[1:], n)
    expected_prev = np.zeros(n, np.int64)
    if n > 1:
        same = slot[1:] == slot[:-1]
        expected_prev[1:] = np.where(same, position[:-1], 0)
    out.broken_links += int(np.count_nonzero(rows["prev_index"] != expected_prev))
    loads = np.bincount(ends - starts)
    if len(loads) > len(out.load_counts):
        loads[: len(out.load_counts)] += out.load_counts
        out.load_counts = loads
    else:
        out.load_counts[: len(loads)] += loads
    head_slots = heads["slot"] if heads else np.empty(0, np.int32)
    head_values = heads["head"] if heads else np.empty(0, np.int32)
    out.wrong_heads += _head_mismatches(slot[starts], position[ends - 1], head_slots, head_values)


def _in_slot_order(slot: np.ndarray, position: np.ndarray) -> bool:
    step = np.diff(slot)
    return bool(((step > 0) | ((step == 0) & (np.diff(position) > 0))).all())


def _head_mismatches(
    last_slot: np.ndarray, last: np.ndarray, slot: np.ndarray, head: np.ndarray
) -> int:
    """Rows of ``last FULL JOIN slots ON slot WHERE last IS DISTINCT FROM head``;
    ``last_slot`` ascending and distinct."""
    if len(last_slot) == 0:
        return len(slot)
    if len(slot) == 0:
        return len(last_slot)
    at = np.minimum(np.searchsorted(last_slot, slot), len(last_slot) - 1)
    matched = last_slot[at] == slot
    wrong = int(np.count_nonzero(~matched | (last[at] != head)))
    listed = np.sort(slot)
    at = np.minimum(np.searchsorted(listed, last_slot), len(listed) - 1)
    return wrong + int(np.count_nonzero(listed[at] != last_slot))


def _hot_keys(
    keys: np.ndarray,
    offsets: np.ndarray,
    stamps: np.ndarray,
    numbers: np.ndarray,
    top: int,
    out: _SlotFigures,
) -> None:
    """Distinct key hashes of a range, and its ``top`` key hashes with their details
    (every entry of a key hash is in its range)."""
    values, counts = np.unique(keys, return_counts=True)
    out.distinct_key_hashes += len(values)
    if top == 0 or len(values) == 0:
        return
    chosen = values[_top_indices(counts, top)]
    at = np.minimum(np.searchsorted(chosen, keys), len(chosen) - 1)
    hit = chosen[at] == keys
    k, o, s, f = keys[hit], offsets[hit], stamps[hit], numbers[hit]
    order = np.argsort(k, kind="stable")
    k, s = k[order], s[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    assert out.hot is not None
    out.hot.append(
        np.stack(
            [
                k[starts].astype(np.int64),
                np.diff(np.append(starts, len(k))),
                _distinct_within(keys[hit], o),
                _distinct_within(keys[hit], f),
                np.minimum.reduceat(s, starts),
                np.maximum.reduceat(s, starts),
            ]
        )
    )


def _top_indices(counts: np.ndarray, top: int) -> np.ndarray:
    """Ascending indices of the ``top`` largest ``counts``, ties going to lower indices
    (the callers' values ascend, so: by count descending, then value)."""
    if len(counts) <= top:
        return np.arange(len(counts))
    at_least = np.cumsum(np.bincount(counts)[::-1])[::-1]  # at_least[c]: counts >= c
    threshold = int(np.flatnonzero(at_least >= top)[-1])
    above = np.flatnonzero(counts > threshold)
    tied = np.flatnonzero(counts == threshold)[: top - len(above)]
    return np.sort(np.concatenate((above, tied)))


def _distinct_within(groups: np.ndarray, *columns: np.ndarray) -> np.ndarray:
    """For each value of ``groups`` in ascending order, the number of distinct tuples of
    ``columns`` among its rows."""
    order = np.lexsort((*reversed(columns), groups))
    g = groups[order]
    first_of_group = np.concatenate(([True], g[1:] != g[:-1]))
    new_tuple = first_of_group.copy()
    for c in columns:
        v = c[order]
        new_tuple[1:] |= v[1:] != v[:-1]
    return np.bincount(np.cumsum(first_of_group) - 1, weights=new_tuple).astype(np.int64)


# --- pass 3: offset buckets --------------------------------------------------------------


class _OffsetBuckets:
    """Every entry's (offset, key hash, file number), split into ranges of offsets: in
    memory up to :data:`BUCKET_ROWS` rows, else in files under a temporary directory."""

    def __init__(self, bounds: np.ndarray, directory: Path | None) -> None:
        self.bounds = bounds
        self.directory = directory
        self.memory: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [
            [] for _ in range(len(bounds) + 1)
        ]

    def add(self, number: int, offsets: np.ndarray, keys: np.ndarray) -> None:
        if len(self.bounds) == 0:
            self._put(0, offsets, keys, number)
            return
        bucket = np.searchsorted(self.bounds, offsets, side="right").astype(np.uint16)
        order = np.argsort(bucket, kind="stable")
        cuts = np.cumsum(np.bincount(bucket, minlength=len(self.bounds) + 1))
        del bucket
        for b, (lo, hi) in enumerate(itertools.pairwise([0, *cuts.tolist()])):
            if hi > lo:
                rows = order[lo:hi]
                self._put(b, offsets[rows], keys[rows], number)

    def _put(self, b: int, offsets: np.ndarray, keys: np.ndarray, number: int) -> None:
        numbers = np.full(len(offsets), number, np.uint16)
        if self.directory is None:
            self.memory[b].append((offsets, keys, numbers))
            return
        path = self.directory / f"bucket-{b:05d}"
        try:
            with (
                open(path.with_suffix(".offset"), "ab") as o,
                open(path.with_suffix(".key"), "ab") as k,
                open(path.with_suffix(".file"), "ab") as f,
            ):
                offsets.astype(np.int64, copy=False).tofile(o)
                keys.astype(np.int32, copy=False).tofile(k)
                numbers.tofile(f)
        except OSError as exc:
            if getattr(exc, "errno", None) in (28, 122):
                raise DiskFullError(
                    f"{self.directory}: no space left for stats' temporary buckets: "
                    f"{exc.strerror or exc}; free space or set TMPDIR to a larger disk"
                ) from None
            raise

    def buckets(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        for b in range(len(self.bounds) + 1):
            if self.directory is None:
                parts = self.memory[b]
                self.memory[b] = []
                if parts:
                    yield tuple(np.concatenate(c) for c in zip(*parts, strict=True))  # type: ignore[misc]
                continue
            path = self.directory / f"bucket-{b:05d}"
            if not path.with_suffix(".offset").exists():
                continue
            yield (
                np.fromfile(path.with_suffix(".offset"), np.int64),
                np.fromfile(path.with_suffix(".key"), np.int32),
                np.fromfile(path.with_suffix(".file"), np.uint16),
            )
            for suffix in (".offset", ".key", ".file"):
                path.with_suffix(suffix).unlink()


class _Spilling:
    """Context manager giving the :class:`_OffsetBuckets` of a scan, their temporary
    directory (if any) removed at the end."""

    def __init__(
        self, files: list[_File], total: int, spill_dir: str | os.PathLike[str] | None
    ) -> None:
        self.files, self.total, self.spill_dir = files, total, spill_dir
        self.tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> _OffsetBuckets:
        count = math.ceil(self.total / BUCKET_ROWS)
        if count <= 1:
            return _OffsetBuckets(np.empty(0, np.int64), None)
        self.tmp = tempfile.TemporaryDirectory(prefix="rmqarrow-stats-", dir=self.spill_dir)
        directory = Path(self.tmp.name)
        need = self.total * _SPILL_ROW_BYTES
        free = shutil.disk_usage(directory).free
        if free < need:
            self.tmp.cleanup()
            raise DiskFullError(
                f"{directory.parent}: stats needs {need:,} bytes of temporary space for "
                f"{self.total:,} entries, {free:,} free; free space or set TMPDIR to a "
                "larger disk"
            )
        sample = np.concatenate([_offset_sample(p) for f in self.files for p in f.parts])
        bounds = np.unique(np.quantile(sample, np.arange(1, count) / count, method="lower")).astype(
            np.int64
        )
        return _OffsetBuckets(bounds, directory)

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            self.tmp.cleanup()


def _offset_sample(part: Path) -> np.ndarray:
    """The offsets of a part's first row group: the rows are in slot order, so these are
    a sample of its offsets."""
    f = pq.ParquetFile(part)
    if f.metadata.num_row_groups == 0:
        return np.empty(0, np.int64)
    return _column(f.read_row_group(0, columns=["phy_offset"]), "phy_offset")


@dataclass
class _OffsetFigures:
    distinct: int = 0
    several: int = 0
    extra: int = 0
    repeated_pairs: int = 0
    repeated_pair_entries: int = 0
    top: list[np.ndarray] | None = None


def _offset_pass(buckets: _OffsetBuckets, top: int, progress: Progress) -> _OffsetFigures:
    out = _OffsetFigures(top=[])
    for offsets, keys, numbers in buckets.buckets():
        progress.advance(len(offsets))
        ordered = np.sort(offsets)
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        counts = np.diff(np.append(starts, len(ordered)))
        out.distinct += len(starts)
        out.extra += len(ordered) - len(starts)
        several = counts > 1
        if not several.any():
            continue
        out.several += int(np.count_nonzero(several))
        repeated = ordered[starts[several]]
        at = np.minimum(np.searchsorted(repeated, offsets), len(repeated) - 1)
        hit = repeated[at] == offsets
        o, k, f = offsets[hit], keys[hit], numbers[hit]
        pairs = np.lexsort((k, o))
        po, pk = o[pairs], k[pairs]
        new_pair = np.concatenate(([True], (po[1:] != po[:-1]) | (pk[1:] != pk[:-1])))
        pair_sizes = np.diff(np.append(np.flatnonzero(new_pair), len(po)))
        out.repeated_pairs += int(np.count_nonzero(pair_sizes > 1))
        out.repeated_pair_entries += int(len(po) - len(pair_sizes))
        if top:
            rep_counts = counts[several]
            chosen = repeated[_top_indices(rep_counts, top)]
            at = np.minimum(np.searchsorted(chosen, o), len(chosen) - 1)
            keep = chosen[at] == o
            co, ck, cf = o[keep], k[keep], f[keep]
            entries = rep_counts[np.searchsorted(repeated, chosen)]
            assert out.top is not None
            out.top.append(
                np.stack(
                    [
                        chosen,
                        entries,
                        _distinct_within(co, ck),
                        _distinct_within(co, cf),
                        entries - _distinct_within(co, ck, cf),
                    ]
                )
            )
    return out


# --- assembly ----------------------------------------------------------------------------


def _top_rows(parts: list[np.ndarray], top: int, schema: pa.Schema) -> pa.Table:
    """The ``top`` rows of candidate columns by entries (descending), then the first column."""
    if not parts or top == 0:
        return schema.empty_table()
    rows = np.concatenate(parts, axis=1)
    order = np.lexsort((rows[0], -rows[1]))[:top]
    return pa.table(
        [pa.array(rows[i][order], type=field.type) for i, field in enumerate(schema)],
        schema=schema,
    )


def _figures(
    files_table: pa.Table,
    files: list[_File],
    top: int,
    per_file: list[tuple[int, int | None, int | None, int]],
    slots: _SlotFigures,
    offsets: _OffsetFigures,
) -> Figures:
    with_entries = [(f, p) for f, p in zip(files, per_file, strict=True) if p[0]]
    file_entries = pa.table(
        [[f.name for f, _ in with_entries], *([p[i] for _, p in with_entries] for i in range(4))],
        schema=FILE_ENTRIES_SCHEMA,
    )
    counts = {f.name: p[0] for f, p in zip(files, per_file, strict=True)}
    names = files_table.column("file_name").to_pylist()
    file_fill = pa.table(
        {
            "file_name": names,
            "s": pa.array([float(s) for s in files_table.column("hash_slot_num").to_pylist()]),
            "n": pa.array([float(counts.get(n, 0)) for n in names]),
        }
    )
    loads = np.flatnonzero(slots.load_counts)
    loads = loads[loads > 0]
    load_slots = pa.table(
        {
            "load": pa.array(loads, pa.int64()),
            "slots": pa.array(slots.load_counts[loads], pa.int64()),
        }
    )
    firsts = [p[1] for p in per_file if p[1] is not None]
    lasts = [p[2] for p in per_file if p[2] is not None]
    index_nums = files_table.column("index_num").to_pylist()
    return Figures(
        files=len(names),
        capacity=sum(n - 1 for n in index_nums) if index_nums else None,
        entries=sum(p[0] for p in per_file),
        first_store_ms=min(firsts) if firsts else None,
        last_store_ms=max(lasts) if lasts else None,
        distinct_key_hashes=slots.distinct_key_hashes,
        distinct_offsets=offsets.distinct,
        file_entries=file_entries,
        file_fill=file_fill,
        load_slots=load_slots,
        hot_keys=_top_rows(slots.hot or [], top, HOT_KEYS_SCHEMA),
        duplicates=_top_rows(offsets.top or [], top, DUPLICATES_SCHEMA),
        duplicates_summary={
            "distinct_offsets": offsets.distinct,
            "offsets_with_several_entries": offsets.several,
            "extra_entries": offsets.extra,
            "repeated_key_offset_pairs": offsets.repeated_pairs,
            "repeated_key_offset_entries": offsets.repeated_pair_entries,
        },
        chain_check={
            "broken_links": slots.broken_links,
            "wrong_heads": slots.wrong_heads,
            "negative_time_diffs": slots.negative_time_diffs,
        },
    )
