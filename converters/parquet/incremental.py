"""Bring an exported dataset up to its store's current state at the cost of what changed.

A broker appends to its newest index file, starts new files and deletes old ones; a full
export rewrites everything each time.  :func:`sync_store` instead writes, per run:

* a new file: its ``slots`` and ``entries`` parts (as :mod:`.export` writes them);
* a grown file (the header's count above the one the manifest recorded, the header's
  identity, ``begin_timestamp`` and ``begin_phy_offset``, unchanged): one ``entries``
  part holding only the positions past the recorded count, in (slot, position) order,
  and a new ``slots`` part replacing its old one (slot heads move as entries arrive);
* a file shorter than recorded, or with another identity (a file replaced): refused
  (:class:`StoreChangedError`, one line naming the file), or with ``reexport_changed``
  exported whole again, its old parts replaced;
* a file the broker deleted: kept (the manifest marks it ``deleted_in_store``) or, with
  ``prune_deleted``, removed from the dataset;
* the ``files`` table: one new part (a row per file, the changed rows new), replacing
  the old;
* with ``commitlog``: the ``messages`` table gets a part of the messages from the
  physical offset the last run stopped at (``tables.messages.next_offset``); with
  ``prune_deleted``, the messages of CommitLog files the broker deleted are dropped.

Every file is read as export reads it (:func:`rmqarrow.converters.parquet.export.snapshot`:
the count first, slot heads past it walked back), so a live store is read consistently.

Each run is one commit of the dataset's Delta tables, pinned
(:func:`rmqarrow.converters.parquet.to_delta.commit_manifest`).  A run's parts have new
names (``part-rRUN-...``, RUN the pinned run's ``run`` plus one) and no reader sees them
until the pin that finishes the run lists them; the parts it replaced are removed from the
tables in the same run and stay on disk for readers of older versions until a vacuum.  A
run killed at any step leaves the old pin (plus unlisted parts, and maybe table commits
past the pin) or the new one; the next run, holding the dataset's writer lock as every run
does, restores the tables to the pin (:func:`rmqarrow.converters.delta.run.converge`),
deletes the unlisted parts and converges.  A run that finds nothing changed commits
nothing.  A dataset of the older manifest layout (``_rmqarrow.json``) is refused: it is
converted in place first (:func:`rmqarrow.converters.parquet.to_delta.convert_to_delta`).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA, write_messages_parquet
from rmqarrow.converters.arrow.scan import files_batch, repeated_string, source_paths
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.manifests import IndexSourceFile, TableRows
from rmqarrow.converters.parquet.atomic import recover
from rmqarrow.converters.parquet.export import (
    ENTRIES_ORDER,
    GROUP_ENTRIES,
    ROW_GROUP_ROWS,
    check_exportable,
    entry_count,
    export_file_entries,
    export_file_slots,
    export_store,
    parquet_writer,
    snapshot,
    write_group,
)
from rmqarrow.converters.parquet.manifest import (
    MANIFEST_NAME,
    as_dataset_manifest,
    dataset_manifest,
    part_record,
    source_file_info,
)
from rmqarrow.converters.parquet.parts import RUN_PART, not_committed, single_file_name
from rmqarrow.converters.parquet.remote import copy_object, local_snapshot
from rmqarrow.converters.parquet.to_delta import commit_manifest
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._paths import ObjectLocation, dataset_location, local_path, storage_errors
from rmqarrow._progress import Progress
from rmqarrow._space import disk_full, is_disk_full
from rmqarrow._staging import fsync_dir
from rmqarrow._version import __version__
from rmqarrow.commitlog import list_commitlog_files
from rmqarrow.errors import (
    CommitConflictError,
    DatasetError,
    DiskFullError,
    InvalidValueError,
    LockFileError,
    OutputExistsError,
    RmqArrowError,
    StoreChangedError,
    StoreLockedError,
    StoreNotFoundError,
    StoreWentBackwardsError,
)
from rmqarrow.format.detect import detect
from rmqarrow.format.layout import (
    HEADER_DTYPE,
    Geometry,
    GeometryHint,
    MappedIndex,
    check_header,
    geometry_hint,
    map_regions,
)
from rmqarrow.index.health import store_health

__all__ = ["RETRY_FIRST", "RETRY_MAX", "SyncResult", "follow_store", "heals", "sync_store"]

_log = logging.getLogger(__name__)
_TABLES = ("files", "slots", "entries", "messages")


@dataclass(frozen=True)
class SyncResult:
    """What one incremental run changed (file names oldest first)."""

    dataset: str
    added: list[str] = field(default_factory=list)
    grown: list[str] = field(default_factory=list)
    reexported: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    unchanged: int = 0
    entries: int = 0
    messages: int = 0
    run: int = 0
    seconds: float = 0.0
    full: bool = False
    #: True when the run switched the manifest (something was written)
    changed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "run": self.run,
            "full": self.full,
            "added": self.added,
            "grown": self.grown,
            "reexported": self.reexported,
            "deleted": self.deleted,
            "pruned": self.pruned,
            "unchanged": self.unchanged,
            "entries": self.entries,
            "messages": self.messages,
            "seconds": round(self.seconds, 3),
            "changed": self.changed,
        }


def sync_store(
    store_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    commitlog: str | os.PathLike[str] | None = None,
    prune_deleted: bool = False,
    reexport_changed: bool = False,
    skip: Collection[str] = (),
    wait: Wait = False,
) -> SyncResult:
    """Bring the dataset ``out_dir`` up to the store ``store_dir`` (see the module doc).

    A missing ``out_dir`` is exported whole (:func:`export_store`); an existing one must be
    an rmqarrow dataset of Delta tables, and each run is one commit of it.  ``skip`` names index
    files to leave out (damaged ones), as export's.  The dataset's writer lock is held
    throughout (``wait``: see :func:`rmqarrow._lock.acquire`).  The geometry is
    ``geometry`` (a :class:`~rmqarrow.GeometryHint` or a complete :class:`~rmqarrow.Geometry`)
    or ``hash_slot_num``/``index_num`` (not both forms), as export's."""
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    start = time.perf_counter()
    source = Path(store_dir)
    if not source.exists():
        raise StoreNotFoundError(f"{source}: no such store directory or index file")
    where = dataset_location(out_dir)
    if isinstance(where, ObjectLocation):
        result = _sync_remote(
            source,
            where,
            hint,
            None if commitlog is None else Path(commitlog),
            frozenset(skip),
            prune_deleted,
            reexport_changed,
        )
        return SyncResult(**{**result.__dict__, "seconds": time.perf_counter() - start})
    out = local_path(out_dir).absolute()
    if not out.exists():
        manifest = export_store(
            source,
            out,
            geometry=hint,
            commitlog=commitlog,
            skip=skip,
            wait=wait,
        )
        return _exported_whole(str(out), manifest, time.perf_counter() - start)
    try:
        with writer_lock(out, wait=wait):
            recover(out)
            run = _Run(
                source,
                out,
                hint,
                frozenset(skip),
                prune_deleted,
                reexport_changed,
            )
            try:
                result = run.sync(None if commitlog is None else Path(commitlog))
            except BaseException:
                run.discard()
                raise
    except OSError as exc:
        if is_disk_full(exc) and not isinstance(exc, DiskFullError):
            # Arrow's message wraps the system's in its own words: say the system's
            raise disk_full(out, None, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))) from None
        raise
    return SyncResult(**{**result.__dict__, "seconds": time.perf_counter() - start})


def _exported_whole(out: str, exported: dict[str, Any], seconds: float = 0.0) -> SyncResult:
    """What a sync that found no dataset, and so exported the store whole, did."""
    manifest = as_dataset_manifest(exported, out)
    messages = manifest.tables.get("messages")
    return SyncResult(
        out,
        added=[f.file_name for f in manifest.source.files],
        entries=manifest.rows("entries", out),
        messages=0 if messages is None else messages.rows,
        seconds=seconds,
        full=True,
        changed=True,
    )


def _sync_remote(
    source: Path,
    out: ObjectLocation,
    geometry: GeometryHint,
    commitlog: Path | None,
    skip: frozenset[str],
    prune: bool,
    reexport: bool,
) -> SyncResult:
    """:func:`sync_store` to a dataset on object storage (always Delta tables), which has
    no rename and no lock: the run plans against a local copy of the pinned run
    (:func:`rmqarrow.converters.parquet.remote.local_snapshot`), writes its new parts
    there, then copies them under names of their own (the run's token in each: no part
    another writer uploads is ever overwritten) and commits them as one pinned run
    (:class:`_RemoteRun`).  A run killed at any step leaves the old run pinned (its
    uploaded parts, and commits past the pin, unread; the next writer restores the
    tables, a vacuum deletes the parts); a writer that pinned meanwhile makes this one
    fail with :class:`CommitConflictError`, nothing of it read.  A missing dataset is
    exported whole."""
    if not is_delta_dataset(out):
        manifest = export_store(
            source,
            str(out),
            geometry=geometry,
            commitlog=commitlog,
            skip=skip,
        )
        return _exported_whole(str(out), manifest)
    with local_snapshot(out, parts=False) as local:
        run = _RemoteRun(source, local, geometry, skip, prune, reexport)
        run.remote = out
        result = run.sync(commitlog)
    return SyncResult(**{**result.__dict__, "dataset": str(out)})


def follow_store(
    store_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    interval: float = 5.0,
    stop: threading.Event | None = None,
    **options: Any,
) -> Iterator[SyncResult]:
    """One :func:`sync_store` round every ``interval`` seconds, each round's result
    yielded (rounds that changed nothing too: the caller chooses what to show), until
    ``stop`` is set; a round always finishes, so the dataset is consistent whenever the
    loop ends (``stop`` set, or the caller stops iterating between rounds).  A round that
    fails in a way that may heal (:func:`heals`) is logged (a warning naming the error)
    and retried after :data:`RETRY_FIRST` seconds, doubling up to :data:`RETRY_MAX`;
    anything else ends the loop with its error."""
    stop = stop if stop is not None else threading.Event()
    options = dict(options)
    rounds = failures = 0
    while not stop.is_set():
        began = time.monotonic()
        try:
            if rounds:
                options["skip"] = _skipped_now(store_dir, options)
            rounds += 1
            result = sync_store(store_dir, out_dir, **options)
        except Exception as exc:
            # the store itself gone does not heal; a file of it gone (expired) does
            gone = isinstance(exc, StoreNotFoundError) and Path(store_dir).exists()
            if not (gone or heals(exc)):
                raise
            failures += 1
            delay = min(RETRY_FIRST * 2 ** (failures - 1), RETRY_MAX)
            _log.warning(
                "%s: round failed (%s); the dataset is as the last round left it; "
                "retrying in %g s (attempt %d)",
                out_dir,
                exc,
                delay,
                failures + 1,
            )
            stop.wait(delay)
            continue
        failures = 0
        yield result
        stop.wait(max(0.0, interval - (time.monotonic() - began)))


def _skipped_now(store_dir: str | os.PathLike[str], options: dict[str, Any]) -> list[str]:
    """The files a round leaves out: those readers skip now (a file being born is
    skipped while it is, and exported once it is whole; the first round's list, made by
    the caller, would leave it out for good)."""
    hint = geometry_hint(
        options.get("geometry"), options.get("hash_slot_num"), options.get("index_num")
    )
    health = store_health(store_dir, hint)
    names = [f.name for f in health.files if f.skipped_by_readers]
    for name in sorted(set(names) - set(options.get("skip", ()))):
        _log.info("%s: left out of this round (damaged, or not yet written whole)", name)
    return names


#: A failed follow round is retried after this many seconds, doubling each time...
RETRY_FIRST = 1.0
#: ... up to this.
RETRY_MAX = 30.0


def heals(exc: BaseException) -> bool:
    """Whether a failed round may succeed later, so a follower retries it: a store that
    changed under the run (a file expired, born or torn while read), a full or failing
    disk, a CommitLog read at a bad moment.  What waiting cannot fix ends the follower:
    a usage mistake, another store or a store that went backwards
    (:class:`StoreChangedError`, :class:`StoreWentBackwardsError`), a dataset that is not
    one, a missing store, a lock another writer holds past ``wait``, no permission, or
    an error that is no :class:`RmqArrowError` nor :class:`OSError` (a bug)."""
    final = (
        InvalidValueError,
        DatasetError,
        StoreNotFoundError,
        StoreLockedError,
        LockFileError,
        OutputExistsError,
        StoreWentBackwardsError,
        PermissionError,
    )
    if isinstance(exc, final):
        return False
    return isinstance(exc, (RmqArrowError, OSError))


#: The application id of incremental runs' Delta commits (the version: the run number).
DELTA_APP = "rmqarrow-incremental"

#: A table's small parts are merged once there are this many (:meth:`_Run._compact`)...
COMPACT_PARTS = 3
#: ... messages parts up to this many bytes (the index tables: :data:`GROUP_ENTRIES` rows).
COMPACT_BYTES = 256 << 20

#: The largest part :meth:`_Run._merge_plan` merges a growing file's parts into (rows).
MERGE_ROWS = GROUP_ENTRIES


def _part_order(rel: str) -> tuple[int, str]:
    """Parts in the order they were written: a full export's first, then by run."""
    m = RUN_PART.match(rel.rsplit("/", 1)[-1])
    return (int(m.group(1)) if m else 0, rel)


def _same_header(path: Path, rec: IndexSourceFile) -> bool:
    """True when the file's header is byte for byte the one exported (its count too):
    nothing to export for it."""
    with open(path, "rb") as fh:
        raw = fh.read(HEADER_DTYPE.itemsize)
    if len(raw) != HEADER_DTYPE.itemsize:
        return False
    count = max(int(np.frombuffer(raw, dtype=HEADER_DTYPE, count=1)["index_count"][0]), 1)
    return count == max(rec.index_count, 1) and hashlib.sha256(raw).hexdigest() == rec.header_sha256


def _parts_next_offset(parts: list[Path]) -> int | None:
    """The physical offset just past the last message of the ``messages`` parts."""
    best: int | None = None
    for part in parts:
        t = pq.read_table(part, columns=["physical_offset", "total_size"])
        if t.num_rows:
            off = np.asarray(t["physical_offset"]) + np.asarray(t["total_size"]).astype(np.int64)
            best = max(best or 0, int(off.max()))
    return best


def _write_new_group(
    out: Path,
    group: list[tuple[int, Path]],
    run: int,
    geometry: GeometryHint,
) -> Any:
    """New small files of one run as one ``slots`` and one ``entries`` part (as a full
    export gathers them, :func:`rmqarrow.converters.parquet.export.write_group`)."""
    paths = [p for _, p in group]
    geometries = [geometry_of(p, geometry) for p in paths]
    total = sum(entry_count(p) for p in paths)
    part = f"part-r{run:06d}-{group[0][0]:05d}.parquet"
    return write_group(paths, geometries, out, part, Progress(total, "export", "entries"))


class _Run:
    """One incremental run over a dataset whose writer lock is held."""

    def __init__(
        self,
        source: Path,
        out: Path,
        geometry: GeometryHint,
        skip: frozenset[str],
        prune: bool,
        reexport: bool,
    ) -> None:
        self.source, self.out = source, out
        self.geometry = geometry
        self.skip, self.prune, self.reexport = skip, prune, reexport

        found = detect(out)
        if found.kind in ("tiered_dataset", "rocksdb_dataset"):
            raise DatasetError(
                f"{out}: {found.detail}; an incremental export brings a dataset of index "
                "files up to date: export this store to another folder"
            )
        # the run's manifest is the pinned run's record and the snapshot's parts, and its
        # switch a commit of the tables (_switch)
        if not is_delta_dataset(out) and (out / MANIFEST_NAME).exists():
            raise DatasetError(
                f"{out}: a dataset of the older manifest layout ({MANIFEST_NAME}), which "
                "rmqarrow no longer writes; convert it to Delta tables in place first "
                "(rmqarrow convert, or convert_to_delta: nothing is rewritten), then export "
                "incrementally"
            )
        try:
            self.manifest = dataset_manifest(out)
        except DatasetError as exc:
            raise DatasetError(
                f"{exc}; an incremental export needs a dataset made by "
                "`rmqarrow export`: export it whole first"
            ) from None
        self.run = self.manifest.run_count + 1
        self.new_records: dict[str, dict[str, Any]] = {}
        self.superseded: set[str] = set()
        self.switched = False

    # -- leftovers of killed runs ------------------------------------------------------
    def _remove_leftovers(self, failed: bool = False) -> None:
        """Remove the parts a killed run left, or (``failed``) those this run wrote before
        it failed.  The tables are first restored to the pinned run
        (:func:`rmqarrow.converters.delta.run.converge`): a run killed or failed between
        its table commits and its pin left versions naming these parts, which a plain
        Delta reader of the latest version would otherwise find missing."""
        # the Delta engine loads on first use: deltalake's library must not map for native stores
        from rmqarrow.converters.delta.run import converge

        converge(self.out)
        present = [
            p.relative_to(self.out).as_posix()
            for t in _TABLES
            if (self.out / t).is_dir()
            for p in (self.out / t).rglob("*.parquet")
        ]
        gone = not_committed(self.manifest, present)
        for rel in sorted(gone):
            (self.out / rel).unlink(missing_ok=True)
            crash_point("incremental:cleanup")
            if failed:
                _log.debug("%s: removed %s (of the failed run)", self.out, rel)
            else:
                _log.info("%s: removed %s (left by a killed run)", self.out, rel)
        if gone:
            fsync_dir(self.out)

    def discard(self) -> None:
        """After a failed run (before its switch): remove the parts it wrote, whole or
        partial, so a full disk gets its space back now, not at the next run.  A kill
        leaves them to the next run's :meth:`_remove_leftovers`."""
        if self.switched:
            return
        try:
            self._remove_leftovers(failed=True)
        except OSError as exc:  # the run's own error is the one to report
            _log.warning("%s: could not remove the failed run's parts: %s", self.out, exc)

    # -- ownership of the old parts ----------------------------------------------------
    def _owned_parts(self) -> dict[str, list[str]]:
        """Each recorded file's ``slots`` and ``entries`` parts."""
        owned: dict[str, list[str]] = {}
        unknown = []
        listed = {r.path for r in self.manifest.parts or ()}
        for f in self.manifest.source.files:
            # a list naming parts the dataset does not hold (an export to object storage
            # that recorded them by their staged names): told from the parts instead
            if f.parts is not None and set(f.parts) <= listed:
                owned[f.file_name] = list(f.parts)
            else:
                unknown.append(f.file_name)
        if unknown:  # a full export's manifest: the parts' statistics name their file
            wanted = set(unknown)
            for rec in self.manifest.parts or ():
                rel = rec.path
                if rel.split("/", 1)[0] not in ("slots", "entries"):
                    continue
                name = single_file_name(self._part(rel))
                if name is not None and name in wanted:
                    owned.setdefault(name, []).append(rel)
        return owned

    # -- the run -----------------------------------------------------------------------
    def _check_same_store(self, paths: list[Path], recorded: dict[str, IndexSourceFile]) -> None:
        """Refuse a store that is not the dataset's: another geometry, or (from another
        path) none of the dataset's files; merging it would mix two stores in one
        dataset, which ``import`` would then write out as one index directory."""
        geometries = {(f.hash_slot_num, f.index_num) for f in recorded.values()}
        if paths and geometries:
            g = geometry_of(paths[0], self.geometry)
            if (g.hash_slot_num, g.index_num) not in geometries:
                s, n = sorted(geometries)[0]
                raise StoreChangedError(
                    f"{self.source}: index files of {g.hash_slot_num} slots x {g.index_num} "
                    f"entries, but the dataset {self.out} holds {s} x {n}: it was exported "
                    "from another store; export this one to a new dataset"
                )
        exported_from = self.manifest.source.path
        same_path = (
            Path(exported_from).resolve() == self.source.resolve() if exported_from else True
        )
        if recorded and paths and not same_path and not set(recorded) & {p.name for p in paths}:
            raise StoreChangedError(
                f"{self.source}: none of the dataset's {len(recorded)} files is in this store, "
                f"and the dataset was exported from {exported_from}: another store; export "
                "this one to a new dataset"
            )

    def sync(self, commitlog: Path | None) -> SyncResult:
        self._remove_leftovers()
        recorded = {f.file_name: f for f in self.manifest.source.files}
        owned = self._owned_parts()
        listed = source_paths(self.source)
        # a damaged file left out is still in the store: not deleted, kept as exported
        present = {p.name for p in listed}
        paths = [p for p in listed if p.name not in self.skip]
        self._check_same_store(paths, recorded)
        infos: dict[str, dict[str, Any]] = {}
        rows: dict[str, pa.RecordBatch] = {}
        added: list[str] = []
        grown: list[str] = []
        reexported: list[str] = []
        unchanged = 0
        entries = 0
        # parts shared by several files (small files exported together): who holds each,
        # and who leaves it in this run (its other files' rows are then written anew)
        holders: dict[str, set[str]] = {}
        for name, rels in owned.items():
            for rel in rels:
                holders.setdefault(rel, set()).add(name)
        leaving: dict[str, set[str]] = {}

        def drop(name: str, rels: Collection[str]) -> None:
            for rel in rels:
                gone = leaving.setdefault(rel, set())
                gone.add(name)
                if gone >= holders.get(rel, {name}):  # its last file left: no rewrite
                    self.superseded.add(rel)
                    del leaving[rel]

        group: list[tuple[int, Path]] = []  # new small files, exported together
        group_entries = 0

        def flush() -> None:
            nonlocal entries, group_entries
            group_entries = 0
            if not group:
                return
            part = _write_new_group(self.out, group, self.run, self.geometry)
            self.new_records.update(part.records)
            crash_point("incremental:part")
            # a row a file, in the group's order (its batches may gather several files)
            files = pa.Table.from_batches(part.files, schema=SCHEMAS["files"]).combine_chunks()
            for i, info in enumerate(part.infos):
                name = str(info["file_name"])
                rows[name] = files.slice(i, 1).to_batches()[0]
                infos[name] = info
                added.append(name)
            entries += part.entries
            group.clear()

        for index, p in enumerate(paths):
            rec = recorded.get(p.name)
            if rec is not None and _same_header(p, rec):
                unchanged += 1  # the common case, told from 40 bytes without mapping
                continue
            n = entry_count(p) if rec is None and index < len(paths) - 1 else GROUP_ENTRIES
            if n < GROUP_ENTRIES:
                if group_entries + n > GROUP_ENTRIES:
                    flush()
                group.append((index, p))
                group_entries += n
                continue
            flush()
            g = geometry_of(p, self.geometry)
            mapped = map_regions(p, g, writable=False)
            try:
                m = snapshot(mapped)
                check_header(p, g, m.header)
                count = max(int(m.header["index_count"][0]), 1)
                state = self._state(p, m, rec, count)
                if state == "unchanged":
                    unchanged += 1
                    continue
                check_exportable(m)
                stem = f"part-r{self.run:06d}-{index:05d}"
                if state == "grown":
                    assert rec is not None
                    old = max(rec.index_count, 1)
                    written = [self._slots_part(m, stem)]
                    drop(p.name, [r for r in owned.get(p.name, []) if r.startswith("slots/")])
                    kept = [r for r in owned.get(p.name, []) if not r.startswith("slots/")]
                    if count > old:
                        mine = [r for r in kept if holders.get(r) == {p.name}]
                        merged = self._merge_plan(mine, count - old)
                        written.append(self._entries_range(m, old, count, stem, merged))
                        self.superseded.update(merged)
                        kept = [r for r in kept if r not in merged]
                    entries += count - old
                    grown.append(p.name)
                else:
                    written = [self._slots_part(m, stem), self._entries_whole(m, stem)]
                    entries += count - 1
                    kept = []
                    drop(p.name, owned.get(p.name, []))
                    (reexported if rec is not None else added).append(p.name)
                rows[p.name] = files_batch(m, p.name)
                info = source_file_info(p, g, count)
                # the header as exported (the file's may have moved on since)
                info["header_sha256"] = hashlib.sha256(m.header.tobytes()).hexdigest()
                info["parts"] = sorted(kept + written)
                infos[p.name] = info
            finally:
                mapped.close()
        flush()
        deleted = [n for n in recorded if n not in present]
        newly_deleted = [n for n in deleted if not recorded[n].deleted_in_store]
        pruned = deleted if self.prune else []
        for name in pruned:
            drop(name, owned.get(name, []))
        renamed = self._rewrite_shared(leaving)
        messages = dropped = 0
        if commitlog is not None:
            messages, dropped = self._messages(commitlog)
        changed = bool(
            added or grown or reexported or pruned or newly_deleted or messages or dropped
        )
        if not changed:
            return SyncResult(str(self.out), unchanged=unchanged, deleted=deleted, run=self.run - 1)
        # the files table, rewritten whole (one row a file: small)
        self._files_part(rows, set(pruned))
        # the new manifest
        files_list = []
        for rec in self.manifest.source.files:
            name = rec.file_name
            if name in pruned:
                continue
            if name in infos:
                continue
            f = rec.to_dict()
            if name in owned and rec.parts is None:
                f["parts"] = sorted(owned[name])
            if name not in present:
                f["deleted_in_store"] = True
            files_list.append(f)
        files_list += infos.values()
        for f in files_list:  # a shared part written anew is the new one for its other files
            if isinstance(f.get("parts"), list):
                f["parts"] = sorted({renamed.get(str(r), str(r)) for r in f["parts"]})
        files_list.sort(key=lambda f: str(f["file_name"]))
        old_parts = [
            r.to_dict() for r in self.manifest.parts or () if r.path not in self.superseded
        ]
        parts = sorted(old_parts + list(self.new_records.values()), key=lambda r: r["path"])
        parts = self._compact(parts, files_list, paths[-1].name if paths else None)
        tables = {t: r.to_dict() for t, r in self.manifest.tables.items()}
        for t in _TABLES:
            if t in tables or t != "messages":
                n = sum(int(r["rows"]) for r in parts if r["path"].startswith(f"{t}/"))
                tables[t] = {**tables.get(t, {}), "rows": n}
        # the old record with what this run changed (a key it had keeps its place)
        manifest = {
            **self.manifest.to_dict(),
            "source": {**self.manifest.source.to_dict(), "files": files_list},
            "parts": parts,
            "tables": tables,
            "run": self.run,
            "updated_at": time.time(),
            "updated_by": f"rmqarrow {__version__} incremental export",
        }
        # parts this run wrote and then merged (_compact) no version ever lists: gone now,
        # not left on disk, in no snapshot, until a vacuum
        published = {str(r["path"]) for r in parts}
        for rel in sorted(set(self.new_records) - published):
            (self.out / rel).unlink(missing_ok=True)
        crash_point("incremental:switch")
        self._switch(manifest)
        self.switched = True
        crash_point("incremental:switched")
        # The parts it replaced stay on disk until a vacuum: a reader that listed the
        # parts of an older version (a DuckDB view, a Spark plan) still reads them.
        for name in newly_deleted:
            _log.info(
                "%s: deleted from the store; %s",
                name,
                "pruned from the dataset" if self.prune else "kept in the dataset",
            )
        return SyncResult(
            str(self.out),
            added=added,
            grown=grown,
            reexported=reexported,
            deleted=deleted,
            pruned=pruned,
            unchanged=unchanged,
            entries=entries,
            messages=messages,
            run=self.run,
            changed=True,
        )

    def _switch(self, manifest: dict[str, Any]) -> None:
        """Make ``manifest`` the dataset's: one run committed (the parts it lists anew
        added, those it no longer lists removed, its record in the pin:
        :func:`rmqarrow.converters.delta.run.commit_run`).  The removed parts stay on disk
        for readers of older versions until a vacuum; a run killed before its pin is undone
        by the next one."""
        commit_manifest(self.out, manifest, DELTA_APP, self.run)

    def _part(self, rel: str) -> Path:
        """A part of the dataset (``rel``: its path in the manifest) to read."""
        return self.out / rel

    def _state(self, p: Path, m: MappedIndex, rec: IndexSourceFile | None, count: int) -> str:
        """new / unchanged / grown / reexport for one store file (or refuse it)."""
        if rec is None:
            return "new"
        old = max(rec.index_count, 1)
        h = m.header[0]
        ident = {
            "begin_timestamp": int(h["begin_timestamp"]),
            "begin_phy_offset": int(h["begin_phy_offset"]),
        }
        had = {"begin_timestamp": rec.begin_timestamp, "begin_phy_offset": rec.begin_phy_offset}
        # a record without the identity (an older export's) takes the file's
        same = old <= 1 or all(had[k] in (None, v) for k, v in ident.items())
        if same and count == old:
            # the same entries; a header read torn at the last run (end time written, the
            # count not yet) is put right: its files row and slots rewritten
            digest = hashlib.sha256(m.header.tobytes()).hexdigest()
            return "unchanged" if digest == rec.header_sha256 else "grown"
        if same and count > old:
            return "grown"
        why = (
            f"holds {count - 1} entries, the dataset {old - 1}"
            if same
            else f"begins at timestamp {ident['begin_timestamp']} / offset "
            f"{ident['begin_phy_offset']}, the dataset's copy at "
            f"{rec.begin_timestamp} / {rec.begin_phy_offset} (replaced)"
        )
        if not self.reexport:
            raise StoreChangedError(
                f"{p}: {why}: the store went backwards; export it with reexport_changed=True "
                "(that file exported whole again) or export the store whole (overwrite=True)"
            )
        _log.warning("%s: %s; exported whole again", p, why)
        return "reexport"

    def _rewrite_shared(self, leaving: dict[str, set[str]]) -> dict[str, str]:
        """Each shared part some of whose files leave it (grown, exported again, pruned)
        written anew without their rows, the old one superseded; returns old -> new path."""
        renamed: dict[str, str] = {}
        for k, rel in enumerate(sorted(leaving)):
            old = self._part(rel)
            table = pq.read_table(old)
            keep = pc.invert(pc.is_in(table.column("file_name"), pa.array(sorted(leaving[rel]))))
            rest = table.filter(keep)
            path = old.with_name(f"part-r{self.run:06d}-shared-{k:05d}.parquet")
            with parquet_writer(path, rel.split("/", 1)[0]) as w:
                w.write_table(rest, row_group_size=ROW_GROUP_ROWS)
            renamed[rel] = self._record(path)
            self.superseded.add(rel)
        return renamed

    def _compact(
        self, parts: list[dict[str, Any]], files_list: list[dict[str, Any]], growing: str | None
    ) -> list[dict[str, Any]]:
        """Merge a table's small parts once there are :data:`COMPACT_PARTS` of them, so a
        dataset followed for many rounds keeps about as many parts as a fresh export
        (readers' planning and memory grow with the parts).

        Small: fewer than :data:`GROUP_ENTRIES` rows (``messages``: under
        :data:`COMPACT_BYTES`), none of them the growing newest file's (whose own parts
        :meth:`_merge_plan` keeps few, and whose ``slots`` part each round replaces).
        They are merged oldest first into parts of up to that size, in the commit
        protocol of every run: new ``part-rRUN-compact-...`` parts, the merged ones
        removed from the tables (kept on disk until a vacuum), each file's
        ``parts`` pointing at the new ones.  Returns the new parts list."""
        holders: dict[str, set[str]] = {}
        for f in files_list:
            for rel in f.get("parts") or []:
                holders.setdefault(str(rel), set()).add(str(f["file_name"]))
        renamed: dict[str, str] = {}
        for table in ("slots", "entries", "messages"):
            recs = sorted(
                (r for r in parts if str(r["path"]).startswith(f"{table}/")),
                key=lambda r: _part_order(str(r["path"])),
            )
            if table == "messages":
                weight, limit = "size", COMPACT_BYTES
                small = [r for r in recs if int(r["size"]) < limit]
            else:
                weight, limit = "rows", GROUP_ENTRIES
                small = [
                    r
                    for r in recs
                    if int(r["rows"]) < limit
                    and str(r["path"]) in holders
                    and growing not in holders[str(r["path"])]
                ]
            if len(small) < COMPACT_PARTS:
                continue
            groups: list[list[dict[str, Any]]] = [[]]
            total = 0
            for r in small:
                if groups[-1] and total + int(r[weight]) > limit:
                    groups.append([])
                    total = 0
                groups[-1].append(r)
                total += int(r[weight])
            for k, group in enumerate(g for g in groups if len(g) > 1):
                new = self._merge_parts(table, [str(r["path"]) for r in group], k)
                for r in group:
                    renamed[str(r["path"])] = new
                    self.superseded.add(str(r["path"]))
        if not renamed:
            return parts
        for f in files_list:
            if isinstance(f.get("parts"), list):
                f["parts"] = sorted({renamed.get(str(r), str(r)) for r in f["parts"]})
        kept = [r for r in parts if str(r["path"]) not in self.superseded]
        added = [self.new_records[new] for new in sorted(set(renamed.values()))]
        return sorted(kept + added, key=lambda r: r["path"])

    def _merge_parts(self, table: str, rels: list[str], k: int) -> str:
        """The rows of the parts ``rels`` of ``table`` as one new part, in the order
        readers find them fastest (by file, then slot and position; messages by offset)."""
        if table == "messages":
            schema, order = MESSAGES_SCHEMA, [("physical_offset", "ascending")]
        else:
            schema = SCHEMAS[table]
            keys = ("file_name", *(("slot",) if table == "slots" else ENTRIES_ORDER))
            order = [(c, "ascending") for c in keys]
        rows = pa.concat_tables([pq.read_table(self._part(rel), schema=schema) for rel in rels])
        rows = rows.sort_by(order)
        path = self.out / table / f"part-r{self.run:06d}-compact-{k:05d}.parquet"
        if table == "messages":
            pq.write_table(rows, path)
        else:
            with parquet_writer(path, table) as w:
                w.write_table(rows, row_group_size=ROW_GROUP_ROWS)
        return self._record(path)

    def _record(self, path: Path) -> str:
        rec = part_record(self.out, path)
        self.new_records[rec["path"]] = rec
        crash_point("incremental:part")
        return str(rec["path"])

    def _slots_part(self, m: MappedIndex, stem: str) -> str:
        path = self.out / "slots" / f"{stem}.parquet"
        export_file_slots(m, path)
        return self._record(path)

    def _entries_whole(self, m: MappedIndex, stem: str) -> str:
        path = self.out / "entries" / f"{stem}.parquet"
        count = max(int(m.header["index_count"][0]), 1)
        export_file_entries(m, path, Progress(count - 1, "export", "entries"), None, 1, 1)
        return self._record(path)

    def _merge_plan(self, mine: list[str], new_rows: int) -> list[str]:
        """Which of a growing file's own ``entries`` parts (``mine``) its new range is
        written together with.

        Each run adds a part of the positions past the last; a file followed for hours
        would end with one part a round, and readers' cost grows with the parts.  So the
        newest parts are merged in while the next older one is no larger than what is
        merged so far (up to :data:`MERGE_ROWS` rows): parts then at least double in
        size from newest to oldest, a file keeps a logarithmic number of them, and each
        entry is rewritten a logarithmic number of times.
        """
        rows = {r.path: r.rows for r in self.manifest.parts or ()}
        merged, take = new_rows, []
        for rel in sorted(mine, key=_part_order, reverse=True):
            size = rows.get(rel)
            if size is None or size > merged or merged + size > MERGE_ROWS:
                break
            take.append(rel)
            merged += size
        return take

    def _entries_range(
        self, m: MappedIndex, first: int, stop: int, stem: str, merged: Collection[str] = ()
    ) -> str:
        """Positions ``first .. stop - 1`` of ``m`` as one entries part, in (slot,
        position) order (the positions past what the dataset holds), with the rows of
        the parts ``merged`` (the file's own older parts) merged in."""
        path = self.out / "entries" / f"{stem}.parquet"
        tables = [pq.read_table(self._part(rel), schema=SCHEMAS["entries"]) for rel in merged]
        rows = pa.concat_tables([*tables, self._range_table(m, first, stop)])
        rows = rows.sort_by([(c, "ascending") for c in ENTRIES_ORDER])
        with parquet_writer(path, "entries", ENTRIES_ORDER) as w:
            w.write_table(rows, row_group_size=ROW_GROUP_ROWS)
        return self._record(path)

    def _range_table(self, m: MappedIndex, first: int, stop: int) -> pa.Table:
        """Positions ``first .. stop - 1`` of ``m`` as an ``entries`` table."""
        e = m.entries[first:stop]
        key_hash = e["key_hash"].astype(np.int32)
        time_diff = e["time_diff"].astype(np.int32)
        begin = np.int64(m.header["begin_timestamp"][0])
        with np.errstate(over="ignore"):
            ts = begin + time_diff.astype(np.int64) * np.int64(1000)
        return pa.Table.from_arrays(
            [
                repeated_string(m.path.name, stop - first),
                pa.array(np.arange(first, stop, dtype=np.int32)),
                pa.array(key_hash),
                pa.array(np.fmod(key_hash, np.int32(m.geometry.hash_slot_num)).astype(np.int32)),
                pa.array(e["phy_offset"].astype(np.int64)),
                pa.array(time_diff),
                pa.array(ts),
                pa.array(e["prev_index"].astype(np.int32)),
            ],
            schema=SCHEMAS["entries"],
        )

    def _files_part(self, rows: dict[str, pa.RecordBatch], pruned: set[str]) -> str:
        """The ``files`` table as one new part: the old rows of files neither changed nor
        pruned, and the changed files' new rows; the old parts superseded."""
        old_rels = [r.path for r in self.manifest.parts or () if r.path.startswith("files/")]
        old = pa.concat_tables(
            [SCHEMAS["files"].empty_table()]
            + [pq.read_table(self._part(rel), schema=SCHEMAS["files"]) for rel in old_rels]
        )
        keep = [n not in rows and n not in pruned for n in old["file_name"].to_pylist()]
        tables = [old.filter(pa.array(keep, pa.bool_()))]
        tables += [pa.Table.from_batches([b]) for b in rows.values()]
        table = pa.concat_tables(tables).sort_by("file_name")
        path = self.out / "files" / f"part-r{self.run:06d}-00000.parquet"
        with parquet_writer(path, "files") as w:
            w.write_table(table)
        self.superseded.update(old_rels)
        return self._record(path)

    def _messages(self, commitlog: Path) -> tuple[int, int]:
        """Append the messages past ``tables.messages.next_offset`` as one new part; drop
        those of deleted CommitLog files when pruning.  The rows written and dropped."""
        info = self.manifest.tables.get("messages")
        msg_rels = [r.path for r in self.manifest.parts or () if r.path.startswith("messages/")]
        if info is not None and info.next_offset is None:
            found = _parts_next_offset([self._part(r) for r in msg_rels])
            info = replace(info, next_offset=found or 0)
        start = 0 if info is None else (info.next_offset or 0)
        files = list_commitlog_files(commitlog)
        first = files[0].start_offset if files else 0
        if start < first and info is not None:
            _log.warning(
                "%s: messages %d..%d were deleted from the CommitLog before they were exported",
                commitlog,
                start,
                first,
            )
        start = max(start, first)
        (self.out / "messages").mkdir(exist_ok=True)
        path = self.out / "messages" / f"part-r{self.run:06d}-00000.parquet"
        n = write_messages_parquet(commitlog, path, start_offset=start)
        written = bool(n) or info is None  # a new table gets its part, even empty
        if written:
            self._record(path)
        else:
            path.unlink()
        pruned_rows = 0
        if self.prune and files:
            pruned_rows = self._prune_messages(msg_rels, first)
        if written or pruned_rows or info is None:
            nxt = _parts_next_offset([path]) if n else start
            log = str(commitlog.absolute())
            messages = (
                TableRows(rows=0, commitlog=log, next_offset=nxt)
                if info is None
                else replace(info, rows=0, commitlog=log, next_offset=nxt)
            )
            self.manifest = replace(
                self.manifest, tables={**self.manifest.tables, "messages": messages}
            )
        return n, pruned_rows

    def _prune_messages(self, rels: list[str], first: int) -> int:
        """Parts of ``messages`` below the CommitLog's first offset superseded (a part
        straddling it rewritten without them); the rows dropped."""
        dropped = 0
        for i, rel in enumerate(rels):
            t = pq.read_table(self._part(rel))
            offsets = np.asarray(t["physical_offset"])
            below = int((offsets < first).sum())
            if not below:
                continue
            self.superseded.add(rel)
            dropped += below
            if below < t.num_rows:
                path = self.out / "messages" / f"part-r{self.run:06d}-{i + 1:05d}.parquet"
                pq.write_table(t.filter(pa.array(offsets >= first)), path)
                self._record(path)
        return dropped


class _RemoteRun(_Run):
    """An incremental run over a local copy (``out``) of the run pinned on object
    storage (``remote``): its switch uploads the parts it wrote and commits them there."""

    remote: ObjectLocation

    def _part(self, rel: str) -> Path:
        """The part, copied on first use: the copy of the run holds its log only (most
        parts a run never reads: only those it rewrites, merges or reads offsets from)."""
        path = self.out / rel
        if not path.exists():
            copy_object(self.remote / rel, path)
        return path

    def _switch(self, manifest: dict[str, Any]) -> None:
        token = uuid.uuid4().hex[:12]
        fs, root = self.remote.filesystem()
        old = {r.path for r in self.manifest.parts or ()}
        run = as_dataset_manifest(manifest, self.out)
        renamed: dict[str, str] = {}
        for record in run.parts or ():
            rel = record.path
            if rel in old:
                continue
            table, _, name = rel.partition("/")
            stem, dot, ext = name.rpartition(".")
            remote = f"{table}/{stem}-{token}{dot}{ext}"
            with storage_errors(self.remote / remote):
                pafs.copy_files(
                    str(self.out / rel),
                    f"{root}/{remote}",
                    source_filesystem=pafs.LocalFileSystem(),
                    destination_filesystem=fs,
                )
            crash_point("incremental:uploaded")
            renamed[rel] = remote
        files = tuple(
            f
            if f.parts is None
            else replace(f, parts=tuple(sorted(renamed.get(p, p) for p in f.parts)))
            for f in run.source.files
        )
        run = replace(
            run,
            parts=tuple(replace(r, path=renamed.get(r.path, r.path)) for r in run.parts or ()),
            source=replace(run.source, files=files),
        )
        pinned = self.manifest.delta_version
        if not commit_manifest(self.remote, run, DELTA_APP, self.run, expect_pin=pinned):
            raise CommitConflictError(
                f"{self.remote}: another writer committed run {self.run} first; nothing of "
                "this incremental export is read (its parts are left for a vacuum): run it "
                "again"
            )
