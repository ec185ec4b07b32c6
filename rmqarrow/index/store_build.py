"""Build or append a store from batches of message records, crash-safe.

A **new** store (a missing or empty directory) is built in a hidden sibling staging folder
(:mod:`rmqarrow._staging`) and renamed into place only when complete: a failure or kill -9
leaves no store, and the next build on the same path removes the dead build's folder.  An
**existing** store is appended in place, crash-consistently: an interrupted batch is rolled
back to the last committed header on the next writable open (reported in
:attr:`BuildSummary.repaired`).  Only an empty, missing or index directory is written to;
anything else is refused in one line naming what it is, and so is the store of a running
RocketMQ broker (:mod:`rmqarrow._broker`), before anything is written.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from rmqarrow._broker import check_store_writable
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._paths import local_path
from rmqarrow._progress import Progress, ProgressCallback
from rmqarrow._space import disk_full, is_disk_full
from rmqarrow._staging import check_output_place, remove_path, sibling, stale_siblings
from rmqarrow.errors import CorruptIndexError, DiskFullError, UsageError
from rmqarrow.format.detect import detect
from rmqarrow.format.layout import GeometryHint
from rmqarrow.index.health import store_health
from rmqarrow.index.service import IndexService
from rmqarrow.kernels.expand import expand_keys, record_columns

if TYPE_CHECKING:
    import pyarrow as pa

    from rmqarrow.index.service import IndexService

__all__ = ["BuildSummary", "build_store", "check_build_output"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuildSummary:
    """What a build did: records read, files in the store and new ones, entries, repairs."""

    store: str
    records: int
    files: int
    new_files: int
    entries: int
    repaired: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_build_output(store: str | os.PathLike[str]) -> None:
    """A build writes index files into a new, empty or index directory, never elsewhere."""
    t = detect(store)
    if t.kind in ("missing", "empty_dir", "index_dir"):
        return
    if t.kind == "broker_root":
        raise UsageError(
            f"{store}: a broker store root; build into its index directory "
            f"({t.index_dir or Path(store) / 'index'}), not the root"
        )
    raise UsageError(
        f"{store}: {t.detail or t.kind}; build writes index files into a new, "
        "empty or index directory"
    )


def build_store(
    store: str | os.PathLike[str],
    batches: Iterable[pa.RecordBatch | pa.Table],
    *,
    geometry: GeometryHint = GeometryHint.NONE,
    checkpoint: str | os.PathLike[str] | None = None,
    total: int | None = None,
    progress: ProgressCallback | None = None,
    wait: Wait = False,
    force: bool = False,
    replay: bool = False,
) -> BuildSummary:
    """Index ``batches`` of message records (:data:`rmqarrow.format.records.RECORD_COLUMNS`)
    into ``store`` as the broker's ``IndexService.buildIndex`` would, record by record.

    ``checkpoint`` is the store's ``checkpoint`` file (its index timestamp is recorded on
    flush); ``total`` (records, when known) and ``progress`` report how far the build is.
    The store's writer lock is held from the cleanup to the rename: another writer is
    refused in one line naming it, or waited for with ``wait`` (True, or seconds).  A
    store (or ``checkpoint``) a RocketMQ broker is running on is refused
    (:class:`~rmqarrow.errors.BrokerRunningError`); ``force=True`` writes one whose
    ``abort`` is left without a ``lock`` file (a copy you vouch for).

    **Resuming.**  An existing store is resumed *after* its last indexed record: records
    at or below the newest file's ``endPhyOffset`` are skipped, so a rerun over the same
    input adds nothing.  ``IndexService`` itself keeps RocketMQ's guard (``offset <
    endPhyOffset`` skipped), which puts the record *at* ``endPhyOffset`` once more: that is
    what a broker's dispatch does when its abnormal recovery replays the CommitLog from
    the checkpoint, while a cleanly restarted broker dispatches from where it stopped and
    puts nothing twice.  A resumed build is the second case; ``replay=True`` is the first
    (``rmqarrow.build(start_timestamp=...)``), the record at the end put again as the
    broker would.
    """
    check_build_output(store)
    final = local_path(store).absolute()
    check_store_writable(final, force=force)
    if checkpoint is not None:
        check_store_writable(checkpoint, force=force)
    with writer_lock(final, wait=wait):
        return _locked_build(
            store,
            final,
            batches,
            geometry,
            checkpoint,
            total,
            progress,
            force,
            replay,
        )


def _locked_build(
    store: str | os.PathLike[str],
    final: Path,
    batches: Iterable[pa.RecordBatch | pa.Table],
    geometry: GeometryHint,
    checkpoint: str | os.PathLike[str] | None,
    total: int | None,
    progress: ProgressCallback | None,
    force: bool,
    replay: bool,
) -> BuildSummary:
    for stale in stale_siblings(final, "build", locked=True):
        remove_path(stale)
        _log.warning("removed %s (left by a killed build)", stale)
    if final.exists() and not final.is_dir():
        raise UsageError(f"{store}: exists and is not a directory; give a store directory")
    fresh = not final.exists() or not any(final.iterdir())
    if fresh:
        check_output_place(final)
    target = sibling(final, "build") if fresh else final
    try:
        summary = _build_into(target, batches, geometry, checkpoint, total, progress, force, replay)
        if fresh:
            if final.exists():
                final.rmdir()  # it was empty
            os.rename(target, final)
    except OSError as exc:
        if fresh:
            remove_path(target)
        if is_disk_full(exc) and not isinstance(exc, DiskFullError):
            raise disk_full(store, None, exc) from None
        raise
    except BaseException:
        if fresh:
            remove_path(target)
        raise
    return BuildSummary(**{**summary.to_dict(), "store": str(store)})


def _build_into(
    store: Path,
    batches: Iterable[pa.RecordBatch | pa.Table],
    geometry: GeometryHint,
    checkpoint: str | os.PathLike[str] | None,
    total: int | None,
    progress: ProgressCallback | None,
    force: bool,
    replay: bool,
) -> BuildSummary:
    if store.is_dir():  # a new store is staged in a folder made by the first file
        _refuse_damaged(store, geometry)
    # no counts given: a store's own files decide them (RocketMQ's defaults for a new one)
    service = IndexService(store, checkpoint_path=checkpoint, force=force, geometry=geometry)
    started = time.monotonic()
    records = 0
    with service:
        service.load()
        for note in service.repairs:
            _log.warning("%s", note)
        files_before = len(service.files)
        resume = None if replay else _Resume.of(service)
        with Progress(total, "building", "records", callback=progress) as bar:
            for batch in batches:
                service.build_index_batch(batch if resume is None else resume.cut(batch))
                records += batch.num_rows
                bar.advance(batch.num_rows)
        service.flush()
        return BuildSummary(
            store=str(store),
            records=records,
            files=len(service.files),
            new_files=len(service.files) - files_before,
            entries=sum(f.entry_count for f in service.files),
            repaired=len(service.repairs),
            seconds=round(time.monotonic() - started, 3),
        )


def _refuse_damaged(store: Path, geometry: GeometryHint) -> None:
    """A store with a file of the wrong size or an impossible header is not appended to:
    the build would extend or roll from a file it cannot trust.  One line says what to do."""
    damaged = [f for f in store_health(store, geometry).damaged if f.skipped_by_readers]
    if damaged:
        raise CorruptIndexError(
            f"{damaged[0].describe()}"
            + (f" (and {len(damaged) - 1} more damaged files)" if len(damaged) > 1 else "")
            + f"; a build does not append to a damaged store: check it (rmqarrow check "
            f"{store}), move the damaged file out of the store directory (keep it, e.g. "
            "beside the store), then build again, or build a new store from the CommitLog"
        )


@dataclass
class _Resume:
    """Where a build onto an existing store starts: after the record at the newest file's
    ``endPhyOffset``, once every key of that record is in the store.  A writer killed in
    the middle of that record's keys (the header is written after each put) leaves part
    of them: then the record is put again whole, RocketMQ's own rule, which loses none."""

    end: int
    entries: int  # entries already pointing at ``end`` (its keys may span two files)

    @classmethod
    def of(cls, service: IndexService) -> _Resume | None:
        if not any(f.entry_count for f in service.files):
            return None
        end = service.files[-1].end_phy_offset
        held = 0
        for f in service.files[-2:]:
            offsets = f.regions.entries["phy_offset"][1 : f.index_count]
            held += int(np.count_nonzero(offsets == end))
        return cls(end, held)

    def cut(self, batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch | pa.Table:
        """``batch`` without the record at ``end`` when the store holds all its keys (the
        guard skips the records below it)."""
        offsets = batch.column("commit_log_offset")
        at = pc.equal(offsets, self.end)
        if batch.num_rows == 0 or not pc.any(at).as_py():
            return batch
        rows = batch.filter(at)
        wanted = int(expand_keys(rows, skip=record_columns(rows).rollback).counts.sum())
        if self.entries < wanted:
            return batch  # cut short by a kill: put again whole
        self.entries -= wanted
        return batch.filter(pc.invert(at))
