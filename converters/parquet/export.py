"""Export native index files to a Parquet dataset (local engine: numpy + pyarrow).

Dataset layout (``rmqarrow.converters.spark.export`` writes the same tables, each file's
entries in one part): one Delta table per table, the Parquet parts written here and committed
through delta-rs (:mod:`rmqarrow.converters.delta`)::

    OUT/
      files/                table ``files``: one row per native file; its commits pin a
                            run (the versions of the other tables, the run's record)
      slots/                table ``slots``: one row per non-zero hash slot
      entries/              table ``entries``: one row per entry, positions 1..index_count-1
      messages/             optional (``commitlog=``): table ``messages`` of
                            :mod:`rmqarrow.converters.arrow.messages`, one row per CommitLog
                            message; not part of the index: import ignores it

Contract every writer keeps and every reader (import, verify, DuckDB, Spark) relies on:

* a table is the parts its Delta snapshot lists, as of the run its ``files`` commit pins
  (:func:`rmqarrow.converters.delta.run.open_snapshot`), never what the folder holds;
* columns are exactly those of :mod:`rmqarrow.converters.schema`, in that order, with those
  types (``file_name`` a UTF-8 string, never dictionary/categorical at the Arrow level;
  int32 / int64 as listed); no nulls;
* no partition directories (``key=value``): ``file_name`` is a real column, so engines
  never re-type names such as ``00000`` as numbers;
* row order is not part of the contract; readers must not rely on it;
* the run's record (the pin's ``source``) is the manifest of
  :func:`rmqarrow.converters.parquet.manifest.new_manifest` but its parts list, with
  :func:`~rmqarrow.converters.parquet.manifest.source_file_info` (one per native file,
  oldest first); its row counts equal the tables';
* a new dataset appears whole or not at all: built in a hidden sibling and renamed into
  place (``rmqarrow.converters.parquet.atomic.atomic_dir``); an existing one changes only
  by commits (an ``overwrite``, an incremental run of
  :mod:`rmqarrow.converters.parquet.incremental`), each one version.

A dataset of the older manifest layout (``_rmqarrow.json`` beside plain folders), which
rmqarrow no longer writes, is still read (:mod:`rmqarrow.converters.parquet.parts`) and made
Delta tables in place by :mod:`rmqarrow.converters.parquet.to_delta`.

What this exporter also does, and why (numbers in the converters README, measured by
``benchmarks/bench_export.py``):

* one Parquet file per native file and table, named ``part-NNNNN.parquet`` with NNNNN the
  file's rank oldest first (``files/part-00000.parquet`` holds every files row), except
  that small files share parts (:func:`plan_groups`): files of fewer than
  :data:`GROUP_ENTRIES` entries other than the newest are gathered, file after file, into
  one part per table named after the first one's rank, so thousands of small files make a
  few parts (DuckDB's and Spark's memory grow with the parts they plan over); the
  manifest lists each file's parts (``source.files[].parts``).  A large file exported
  alone (a store of one file) has its entries in consecutive ranges of its
  order, one part per export thread (two by default: ``part-NNNNN.parquet`` and
  ``part-NNNNN-1.parquet``), written at once;
* entries sorted by ``(slot, position)`` within each file, recorded as Parquet
  ``sorting_columns`` on a file's own parts: a lookup
  ``WHERE slot = h % hash_slot_num AND key_hash = h`` (the chain walk needs the whole
  slot anyway) prunes to one row group by min/max statistics,
  and rows come out in chain order reversed (ascending position within a slot);
* row groups of :data:`ROW_GROUP_ROWS` (128 Ki) rows, statistics and the page index on,
  a Parquet bloom filter on ``key_hash`` (so ``WHERE key_hash = h`` alone also skips row
  groups, in DuckDB and Spark); no compression, DELTA_BINARY_PACKED for every integer
  column but ``key_hash``, dictionary encoding only for ``file_name`` (random hashes and
  offsets neither compress well nor fit a dictionary: smaller and faster than pyarrow's
  defaults); ``key_hash`` PLAIN: the deltas of hashes in slot order are as wide as the
  hashes (DELTA made that column 2% larger and its encoding a quarter of the write time);
* the entries sorted by a counting sort by slot (:mod:`rmqarrow.kernels.order`, with
  numba), and large files (:data:`PARALLEL_ENTRIES`) exported :data:`EXPORT_THREADS` at
  a time: memory grows with the files in flight, never with the number of files;
* slots in slot order.

Each file is exported as of its header (:func:`snapshot`): the count is read first, slot
heads past it are walked back to committed positions, entries past it (a live broker's
batch in progress, or an interrupted build's) are left out, so a dataset of a store
being appended imports byte-identical to what each file held at that count.  Export
refuses (:class:`CorruptIndexError`) a file that cannot round-trip: non-zero bytes at
entry position 0, or a negative slot head.  The dataset is built in a hidden sibling
directory and renamed into place (``rmqarrow.converters.parquet.atomic``), and the
run's record keeps every part's checksums (``digests``), which readers check.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.arrow.messages import write_messages_parquet
from rmqarrow.converters.arrow.scan import files_batch, repeated_string, source_paths
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.delta.layout import PIN_TABLE, is_delta_dataset
from rmqarrow.converters.parquet.atomic import atomic_dir
from rmqarrow.converters.parquet.manifest import (
    new_manifest,
    part_record,
    part_records,
    read_manifest,
    source_file_info,
)
from rmqarrow.converters.parquet.remote import check_export_target, publish_run
from rmqarrow.converters.parquet.to_delta import commit_manifest, commit_replacement, replacing
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait
from rmqarrow._paths import ObjectLocation, dataset_location, local_path
from rmqarrow._progress import Progress, ProgressCallback
from rmqarrow._space import disk_full, is_disk_full
from rmqarrow._version import __version__
from rmqarrow.errors import (
    CorruptIndexError,
    DiskFullError,
    InvalidValueError,
    OutputExistsError,
    StoreNotFoundError,
)
from rmqarrow.format.layout import (
    HEADER_DTYPE,
    Geometry,
    GeometryHint,
    MappedIndex,
    check_header,
    geometry_hint,
    map_regions,
)
from rmqarrow.kernels.order import SlotOrder
from rmqarrow.kernels.walk import committed_slot_heads

__all__ = [
    "ENTRIES_ORDER",
    "GROUP_ENTRIES",
    "PARQUET_OPTIONS",
    "ROW_GROUP_ROWS",
    "check_exportable",
    "entry_count",
    "entry_part_paths",
    "export_file_entries",
    "export_file_slots",
    "export_store",
    "parquet_writer",
    "plan_groups",
    "snapshot",
    "write_group",
]

ROW_GROUP_ROWS = 1 << 17
#: Native files exported at once (one thread each: numba and Parquet release the GIL);
#: ``RMQARROW_EXPORT_THREADS=1`` trades time for memory (one file's sort buffer, not two)...
EXPORT_THREADS = 2
#: ... when the largest has at least this many entries (below, threads cost more than
#: they give).  Each file in flight holds about 26 bytes an entry (its sorted records and
#: slot ends), so peak memory depends on this, not on the number of files.
PARALLEL_ENTRIES = 1 << 20
#: Files with fewer entries than this share parts with their neighbours (:func:`plan_groups`).
GROUP_ENTRIES = 8 * ROW_GROUP_ROWS
ENTRIES_ORDER = ("slot", "position")


def _export_threads() -> int:
    """``RMQARROW_EXPORT_THREADS`` (a positive integer), else :data:`EXPORT_THREADS`."""
    text = os.environ.get("RMQARROW_EXPORT_THREADS", "").strip()
    if not text:
        return EXPORT_THREADS
    if not text.isdigit() or int(text) < 1:
        raise InvalidValueError(
            f"RMQARROW_EXPORT_THREADS must be a positive integer, got "
            f"{text!r}: unset it or give 1 or 2"
        )
    return int(text)


_DELTA = "DELTA_BINARY_PACKED"
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "none",
    "use_dictionary": ["file_name"],
    "column_encoding": {
        "key_hash": "PLAIN",
        **{
            name: _DELTA
            for name in (
                "position",
                "slot",
                "phy_offset",
                "time_diff",
                "store_timestamp",
                "prev_index",
                "head",
                "begin_timestamp",
                "end_timestamp",
                "begin_phy_offset",
                "end_phy_offset",
                "hash_slot_count",
                "index_count",
                "hash_slot_num",
                "index_num",
            )
        },
    },
    "write_statistics": True,
    "write_page_index": True,
    "bloom_filter_options": {"key_hash": {"ndv": ROW_GROUP_ROWS, "fpp": 0.05}},
}

#: Test hook: called with (table, part path) before each Parquet file is written.
_before_write: Callable[[str, Path], None] | None = None


def parquet_writer(path: Path, table: str, sorting: tuple[str, ...] = ()) -> pq.ParquetWriter:
    """A Parquet writer for one table part with the dataset's settings (PARQUET_OPTIONS)."""
    if _before_write is not None:
        _before_write(table, path)
    schema = SCHEMAS[table]
    sorting_columns = [pq.SortingColumn(schema.get_field_index(c)) for c in sorting] or None
    return pq.ParquetWriter(path, schema, sorting_columns=sorting_columns, **PARQUET_OPTIONS)


def snapshot(m: MappedIndex) -> MappedIndex:
    """A consistent view of a file a broker (or a killed build) may have written past its
    header: the header read first (until two reads agree), then the slot table copied with
    every head past the header's count walked back to its newest committed position
    (:func:`rmqarrow.kernels.walk.committed_heads`).  Entries are read in place: positions
    below the count never change once the header counts them."""
    header = m.header.copy()
    for _ in range(100):
        again = m.header.copy()
        if again.tobytes() == header.tobytes():
            break
        header = again
    count = max(int(header["index_count"][0]), 1)
    heads, _ = committed_slot_heads(m, count)
    # A head outside 1..count-1 that no walk-back explains is damage: RocketMQ's
    # selectPhyOffset reads such a slot as empty, so it is exported as empty (check calls
    # the file "damaged chains", read as RocketMQ reads it); never the whole store refused.
    bad = (heads != 0) & ((heads < 1) | (heads >= count))
    if bad.any():
        logging.getLogger(__name__).warning(
            "%s: %d slot heads outside 1..%d (e.g. slot %d holds %d) exported as empty "
            "slots, as RocketMQ reads them",
            m.path,
            int(bad.sum()),
            count - 1,
            int(np.argmax(bad)),
            int(heads[np.argmax(bad)]),
        )
        heads = np.where(bad, 0, heads)
    slots = heads.astype(m.slots.dtype)
    return MappedIndex(m.path, m.geometry, m.mm, header, slots, m.entries, False)


def check_exportable(m: MappedIndex) -> None:
    """Refuse a file whose bytes the three tables would not carry (see module doc).

    Entries past the header's count are not refused: a live broker (or an interrupted
    build) writes them before the header; :func:`snapshot` exports the file as of its
    header, which is what the file holds.
    """
    count = max(int(m.header["index_count"][0]), 1)
    zero0 = m.entries[:1].view(np.uint8)
    if zero0.any():
        raise CorruptIndexError(
            f"{m.path}: entry position 0 holds non-zero bytes (RocketMQ never writes it); "
            "exporting would lose them"
        )
    heads = m.slots[m.slots != 0].astype(np.int64)
    bad = (heads < 1) | (heads >= count)
    if bad.any():
        slot = int(np.flatnonzero(m.slots)[np.argmax(bad)])
        raise CorruptIndexError(
            f"{m.path}: slot {slot} head is {int(m.slots[slot])}, expected 1..{count - 1} "
            f"(indexCount {count})"
        )
    del zero0


def entry_count(path: Path) -> int:
    """How many entries the header of the index file at ``path`` counts (0 when none)."""
    header = np.fromfile(path, dtype=HEADER_DTYPE, count=1)
    return max(int(header["index_count"][0]) - 1, 0) if len(header) else 0


def _slots_batch(m: MappedIndex, idx: np.ndarray) -> pa.RecordBatch:
    """The ``slots`` rows of the non-zero slots ``idx`` (int32, ascending) of ``m``."""
    return pa.RecordBatch.from_arrays(
        [repeated_string(m.path.name, len(idx)), idx, m.slots[idx].astype(np.int32)],
        schema=SCHEMAS["slots"],
    )


def export_file_slots(m: MappedIndex, path: Path) -> int:
    """Write one mapped file's non-zero slots as a ``slots`` part; returns the row count."""
    idx = np.flatnonzero(m.slots).astype(np.int32)
    with parquet_writer(path, "slots") as w:
        for start in range(0, max(len(idx), 1), ROW_GROUP_ROWS):
            w.write_batch(
                _slots_batch(m, idx[start : start + ROW_GROUP_ROWS]),
                row_group_size=ROW_GROUP_ROWS,
            )
    return len(idx)


def entry_part_paths(path: Path, parts: int) -> list[Path]:
    """Where a file's entries go when written as ``parts`` parts: ``path`` itself, then
    ``STEM-1.parquet``, ``STEM-2.parquet``... beside it."""
    return [path] + [path.with_name(f"{path.stem}-{i}{path.suffix}") for i in range(1, parts)]


def export_file_entries(
    m: MappedIndex,
    path: Path,
    progress: Progress,
    spare: list[np.ndarray] | None = None,
    sort_threads: int = 1,
    parts: int = 1,
) -> int:
    """Write one mapped file's entries, sorted by (slot, position), as an ``entries`` part
    (:class:`rmqarrow.kernels.order.SlotOrder`: a counting sort by slot with numba, on
    ``sort_threads`` threads).

    ``parts`` > 1 splits the order into that many consecutive ranges of whole row groups,
    written to :func:`entry_part_paths` on a thread each: Parquet encodes a file on one
    thread, so a store of one big file would otherwise leave a core idle.  ``spare``, a
    list kept by the caller from file to file, holds the sort buffer for the next file
    (reused: its pages are already faulted in).  Returns the number of entries."""
    count = max(int(m.header["index_count"][0]), 1)
    n = count - 1
    order = SlotOrder(m, n, spare[0] if spare else None, sort_threads)
    buffer = order.buffer()
    if spare is not None and buffer is not None:
        spare[:] = [buffer]
    groups = -(-n // ROW_GROUP_ROWS)
    parts = max(1, min(parts, groups))
    if parts == 1:
        _write_entry_range(m, order, 0, n, path, progress, decode_ahead=True)
        return n
    order.sort_all(parts)  # rows() is then safe from several threads
    cuts = [groups * i // parts * ROW_GROUP_ROWS for i in range(parts)] + [n]
    paths = entry_part_paths(path, parts)
    with ThreadPoolExecutor(parts, thread_name_prefix="rmqarrow-export") as pool:
        done = [
            pool.submit(
                _write_entry_range,
                m,
                order,
                cuts[i],
                cuts[i + 1],
                paths[i],
                progress,
                decode_ahead=False,
            )
            for i in range(parts)
        ]
        for d in done:
            d.result()
    return n


def _entries_batch(
    m: MappedIndex, order: SlotOrder, start: int, stop: int, names: pa.Array
) -> pa.RecordBatch:
    """Rows ``start .. stop - 1`` of ``order`` as an ``entries`` batch (``names``: at least
    that many copies of the file's name)."""
    r = order.rows(start, stop)
    with np.errstate(over="ignore"):
        ts = np.int64(m.header["begin_timestamp"][0]) + r.time_diff.astype(np.int64) * np.int64(
            1000
        )
    return pa.RecordBatch.from_arrays(
        [
            names.slice(0, len(r.position)),
            r.position,
            r.key_hash,
            r.slot,
            r.phy_offset,
            r.time_diff,
            ts,
            r.prev_index,
        ],
        schema=SCHEMAS["entries"],
    )


def _write_entry_range(
    m: MappedIndex,
    order: SlotOrder,
    first: int,
    stop: int,
    path: Path,
    progress: Progress,
    decode_ahead: bool,
) -> None:
    """Rows ``first .. stop-1`` of ``order`` as one ``entries`` part, a row group at a time;
    ``decode_ahead`` decodes the next row group on a second thread while Parquet encodes
    this one (numpy and numba release the GIL)."""
    schema = SCHEMAS["entries"]
    names = repeated_string(m.path.name, min(ROW_GROUP_ROWS, stop - first))

    def row_group(start: int) -> pa.RecordBatch:
        return _entries_batch(m, order, start, min(start + ROW_GROUP_ROWS, stop), names)

    starts = range(first, stop, ROW_GROUP_ROWS)
    with parquet_writer(path, "entries", ENTRIES_ORDER) as w:
        if not starts:
            w.write_table(schema.empty_table())
        if not decode_ahead:
            for start in starts:
                batch = row_group(start)
                w.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
                progress.advance(batch.num_rows)
            return
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(row_group, starts[0]) if starts else None
            for i in range(len(starts)):
                assert pending is not None
                batch = pending.result()
                pending = pool.submit(row_group, starts[i + 1]) if i + 1 < len(starts) else None
                w.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
                progress.advance(batch.num_rows)


@dataclass(frozen=True)
class _Part:
    """What exporting one native file, or a group of small ones, gives the manifest."""

    files: list[pa.RecordBatch]
    slots: int
    entries: int
    infos: list[dict[str, Any]]
    records: dict[str, dict[str, Any]]


def _export_file(
    p: Path,
    g: Geometry,
    tmp: Path,
    part: str,
    bar: Progress,
    spare: list[np.ndarray],
    sort_threads: int,
) -> _Part:
    """Snapshot, check and write one native file's ``slots`` and ``entries`` parts, and
    their manifest records."""
    mapped = map_regions(p, g, writable=False)
    try:
        m = snapshot(mapped)
        check_header(p, g, m.header)
        check_exportable(m)
        batch = files_batch(m, p.name)
        slots = export_file_slots(m, tmp / "slots" / part)
        # one file in flight: its entries are written on as many threads as it sorts on
        entries = export_file_entries(
            m, tmp / "entries" / part, bar, spare, sort_threads, parts=sort_threads
        )
        info = source_file_info(p, g, int(m.header["index_count"][0]))
    finally:
        mapped.close()
    written = [tmp / "slots" / part, *entry_part_paths(tmp / "entries" / part, sort_threads)]
    written = [w for w in written if w.exists()]
    with ThreadPoolExecutor(max(1, min(sort_threads, len(written)))) as pool:
        records = list(pool.map(lambda w: part_record(tmp, w), written))  # sha256 off the GIL
    info["parts"] = sorted(r["path"] for r in records)
    return _Part([batch], slots, entries, [info], {r["path"]: r for r in records})


def plan_groups(entries: Sequence[int]) -> list[range]:
    """Which consecutive files (by their entry counts, oldest first) share parts.

    A file of :data:`GROUP_ENTRIES` entries or more, and the newest file (the one a broker
    still appends to, whose ``slots`` part an incremental export replaces as it grows),
    have parts of their own; the others are gathered, in order, into groups of at most
    :data:`GROUP_ENTRIES` entries.  A store of thousands of small files then makes a few
    parts, not three per file: DuckDB's and Spark's memory and planning time grow with
    the number of parts.
    """
    groups: list[range] = []
    start = total = 0
    for i, n in enumerate(entries):
        alone = n >= GROUP_ENTRIES or i == len(entries) - 1
        if alone or total + n > GROUP_ENTRIES:
            if i > start:
                groups.append(range(start, i))
            start, total = i, 0
        if alone:
            groups.append(range(i, i + 1))
            start = i + 1
        else:
            total += n
    return groups


#: How many small files' batches a group holds before they are gathered into one.
_GATHER = 256


def _gathered(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """``batches`` as one batch (the same rows)."""
    return [pa.concat_batches(batches)] if len(batches) > 1 else batches


def write_group(
    paths: Sequence[Path],
    geometries: Sequence[Geometry],
    root: Path,
    part: str,
    progress: Progress,
) -> _Part:
    """Several small native files as one ``slots`` and one ``entries`` part
    (``root/slots/part``, ``root/entries/part``), file after file in the given order,
    each file's entries in (slot, position) order.  Each file is read as
    :func:`_export_file` reads it (:func:`snapshot`, then checked); the rows are gathered
    in memory (at most :data:`GROUP_ENTRIES` entries) and written in row groups of
    :data:`ROW_GROUP_ROWS`."""
    files: list[pa.RecordBatch] = []
    slots: list[pa.RecordBatch] = []
    entries: list[pa.RecordBatch] = []
    infos: list[dict[str, Any]] = []
    spare: list[np.ndarray] = []
    for k, (p, g) in enumerate(zip(paths, geometries, strict=True)):
        if k and k % _GATHER == 0:  # a small batch costs kilobytes besides its rows
            files, slots, entries = (_gathered(b) for b in (files, slots, entries))
        mapped = map_regions(p, g, writable=False)
        try:
            m = snapshot(mapped)
            check_header(p, g, m.header)
            check_exportable(m)
            files.append(files_batch(m, p.name))
            slots.append(_slots_batch(m, np.flatnonzero(m.slots).astype(np.int32)))
            count = max(int(m.header["index_count"][0]), 1)
            if count > 1:
                order = SlotOrder(m, count - 1, spare[0] if spare else None)
                buffer = order.buffer()
                if buffer is not None:
                    spare[:] = [buffer]
                entries.append(
                    _entries_batch(m, order, 0, count - 1, repeated_string(p.name, count - 1))
                )
                progress.advance(count - 1)
            infos.append(source_file_info(p, g, count))
        finally:
            mapped.close()
    written = []
    for table, batches in (("slots", slots), ("entries", entries)):
        path = root / table / part
        data = pa.Table.from_batches(batches, schema=SCHEMAS[table])
        with parquet_writer(path, table) as w:  # several files: no one sort order
            w.write_table(data, row_group_size=ROW_GROUP_ROWS)
        written.append(part_record(root, path))
    for info in infos:
        info["parts"] = sorted(r["path"] for r in written)
    return _Part(
        files,
        sum(b.num_rows for b in slots),
        sum(b.num_rows for b in entries),
        infos,
        {r["path"]: r for r in written},
    )


def _in_order(
    pool: ThreadPoolExecutor, work: Callable[[int], _Part], n: int, ahead: int
) -> Iterator[_Part]:
    """``work(0) .. work(n - 1)`` on ``pool``, at most ``ahead`` at once, in order."""
    pending: deque[Future[_Part]] = deque()
    for i in range(n):
        pending.append(pool.submit(work, i))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


#: The application id of a full export's Delta run.
EXPORT_APP = "rmqarrow-export"


def export_store(
    store_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    progress: ProgressCallback | None = None,
    commitlog: str | os.PathLike[str] | None = None,
    skip: Collection[str] = (),
    wait: Wait = False,
) -> dict[str, Any]:
    """Export a store directory (or one index file) to the dataset ``out_dir``: one Delta
    table per table, written by this module's Parquet writer and committed as one run
    through delta-rs, pinned (:mod:`rmqarrow.converters.delta`; the manifest returned is
    that run's record).

    ``out_dir`` may be a URI of object storage (:func:`rmqarrow._paths.dataset_location`):
    see :func:`_export_remote`.

    ``skip`` names index files to leave out (the damaged files of a store, which
    :func:`rmqarrow.index.health.healthy_index_files` finds); the rest is exported as usual.

    Returns the manifest written.  ``out_dir`` appears complete or not at all; an existing
    ``out_dir`` is replaced only with ``overwrite=True``, after the new dataset is done: a
    dataset of Delta tables is not replaced but given one more version
    (:func:`rmqarrow.converters.parquet.to_delta.commit_replacement`: the older versions
    stay readable ``as_of`` them until a vacuum); one of the older manifest layout
    (``_rmqarrow.json``), which rmqarrow no longer writes, is replaced by Delta tables.
    ``progress`` receives how many entries are written (the command line draws a bar).
    ``commitlog`` (a broker's ``store/commitlog``) also writes
    ``messages/part-00000.parquet`` (the messages table, inside the same atomic build) and
    records it in the manifest as
    ``tables.messages = {"rows": n, "commitlog": absolute path}``.  ``out_dir``'s writer
    lock is held throughout: another export to it is refused (or, with ``wait``, waits;
    see :func:`rmqarrow._lock.acquire`).

    The geometry is ``geometry`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or ``hash_slot_num``/``index_num`` (not both forms);
    what is not given is fitted from each file's size.
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    source = Path(store_dir)
    if not source.exists():
        raise StoreNotFoundError(f"{source}: no such store directory or index file")
    where = dataset_location(out_dir)
    if isinstance(where, ObjectLocation):
        return _export_remote(source, where, overwrite, hint, progress, commitlog, skip)
    out = local_path(out_dir)
    target = out.resolve()
    if target == source.resolve() or target in source.resolve().parents:
        raise OutputExistsError(
            f"{out_dir}: is (or contains) the source {source}; refusing to replace it"
        )
    try:
        _export(
            source,
            out,
            overwrite,
            hint,
            progress,
            commitlog,
            frozenset(skip),
            wait,
        )
        # the pinned run as every reader reads it (its versions too)
        return read_manifest(out)
    except OSError as exc:
        if is_disk_full(exc) and not isinstance(exc, DiskFullError):
            raise disk_full(out_dir, None, exc) from None
        raise


def _export(
    source: Path,
    out_dir: Path,
    overwrite: bool,
    geometry: GeometryHint,
    progress: ProgressCallback | None,
    commitlog: str | os.PathLike[str] | None,
    skip: frozenset[str],
    wait: Wait = False,
    finish: Callable[[Path, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    paths = [p for p in source_paths(source) if p.name not in skip]
    geometries = [geometry_of(p, geometry) for p in paths]
    total = sum(entry_count(p) for p in paths)
    infos: list[dict[str, Any]] = []
    rows = {"files": 0, "slots": 0, "entries": 0}
    bar = Progress(total, "export", "entries", callback=progress)

    # a dataset of Delta tables overwritten is one more version of it (the older ones
    # still read as_of them), never a folder replaced; one of another kind is refused
    # (atomic_dir's check)
    replace = overwrite and is_delta_dataset(out_dir, PIN_TABLE)
    if replace:
        stage = replacing(out_dir.absolute(), wait=wait)
    else:
        stage = atomic_dir(out_dir, overwrite=overwrite, wait=wait)
    with stage as tmp, bar:
        for sub in ("files", "slots", "entries"):
            (tmp / sub).mkdir()
        file_batches = []
        known: dict[str, dict[str, Any]] = {}
        counts = [entry_count(p) for p in paths]
        groups = plan_groups(counts)
        big = max(counts, default=0) >= PARALLEL_ENTRIES
        threads = _export_threads()
        workers = max(1, min(threads, len(groups))) if big else 1
        # one file in flight (a store of one file): its sort takes the threads instead
        sort_threads = threads if big and workers == 1 else 1

        local = threading.local()  # each thread's sort buffer, gone with the export

        def one(k: int) -> _Part:
            i = groups[k].start
            part = f"part-{i:05d}.parquet"
            if len(groups[k]) > 1:
                return write_group(
                    paths[groups[k].start : groups[k].stop],
                    geometries[groups[k].start : groups[k].stop],
                    tmp,
                    part,
                    bar,
                )
            spare = local.__dict__.setdefault("spare", [])
            return _export_file(paths[i], geometries[i], tmp, part, bar, spare, sort_threads)

        with ThreadPoolExecutor(max(workers, 1)) as pool:
            try:
                for part in _in_order(pool, one, len(groups), workers):
                    file_batches += part.files
                    if len(file_batches) >= _GATHER:
                        file_batches = _gathered(file_batches)
                    rows["slots"] += part.slots
                    rows["entries"] += part.entries
                    infos += part.infos
                    known.update(part.records)
                    crash_point("export:part")
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        if not paths:
            for sub in ("slots", "entries"):
                pq.write_table(SCHEMAS[sub].empty_table(), tmp / sub / "part-00000.parquet")
        with parquet_writer(tmp / "files" / "part-00000.parquet", "files") as w:
            w.write_table(pa.Table.from_batches(file_batches, schema=SCHEMAS["files"]))
        # the files rows, not the batches (small files' rows are gathered into batches)
        rows["files"] = sum(b.num_rows for b in file_batches)
        messages: dict[str, Any] | None = None
        if commitlog is not None:
            (tmp / "messages").mkdir()
            n = write_messages_parquet(commitlog, tmp / "messages" / "part-00000.parquet")
            messages = {"rows": n, "commitlog": str(Path(commitlog).absolute())}

        manifest = new_manifest(
            source,
            infos,
            rows,
            writer=f"rmqarrow {__version__} rmqarrow.converters.parquet.export (local)",
            extra={
                "entries_order": list(ENTRIES_ORDER),
                "parquet": {"row_group_rows": ROW_GROUP_ROWS, **PARQUET_OPTIONS},
                "parts": part_records(tmp, known),
            },
            messages=messages,
        )
        crash_point("export:manifest")
        if finish is not None:  # the caller publishes the staged run (object storage)
            finish(tmp, manifest)
        elif replace:
            commit_replacement(out_dir.absolute(), tmp, manifest, EXPORT_APP)
        else:
            commit_manifest(tmp, manifest, EXPORT_APP)
    return manifest


def _export_remote(
    source: Path,
    out: ObjectLocation,
    overwrite: bool,
    geometry: GeometryHint,
    progress: ProgressCallback | None,
    commitlog: str | os.PathLike[str] | None,
    skip: Collection[str],
) -> dict[str, Any]:
    """Export to a dataset on object storage, which has no rename: the parts are written
    locally by the same writer (in a temporary folder) and published as one pinned run
    (:func:`rmqarrow.converters.parquet.remote.publish_run`, as every kind's export to
    object storage is).  ``overwrite``: the run replaces every table's parts (older
    versions stay readable until a vacuum); without it an existing dataset is refused, as
    is one of another kind with it."""
    hint = ", or update it with Store.sync (`rmqarrow export --incremental`)"
    check_export_target(out, PIN_TABLE, (*SCHEMAS, "messages"), overwrite=overwrite, hint=hint)

    def publish(tmp: Path, manifest: dict[str, Any]) -> None:
        def renamed(names: dict[str, str]) -> None:
            # each file's own parts list (what an incremental run replaces) by the new names
            files = manifest["source"]["files"]
            for i, f in enumerate(files):
                if isinstance(f.get("parts"), list):
                    files[i] = {**f, "parts": sorted(names.get(str(p), str(p)) for p in f["parts"])}

        publish_run(
            out,
            tmp,
            manifest,
            pin_table=PIN_TABLE,
            overwrite=overwrite,
            app=EXPORT_APP,
            renamed=renamed,
            hint=hint,
        )

    with tempfile.TemporaryDirectory(prefix="rmqarrow-export-") as stage:
        return _export(
            source,
            Path(stage) / "dataset",
            False,
            geometry,
            progress,
            commitlog,
            frozenset(skip),
            finish=publish,
        )
