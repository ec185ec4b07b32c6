"""``rmqarrow.build``: a store from message records or a CommitLog, crash-safe."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from rmqarrow._broker import check_store_writable
from rmqarrow._lock import Wait
from rmqarrow._progress import ProgressCallback
from rmqarrow.commitlog import CommitLogReader, index_records
from rmqarrow.errors import UsageError
from rmqarrow.format.detect import require_commitlog
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.format.records import DEFAULT_ROCKETMQ_VERSION, indexes_tags
from rmqarrow.index.record_files import bad_record, read_record_batches, validate_record_file
from rmqarrow.index.store_build import BuildSummary, build_store, check_build_output

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["build"]


def _commitlog_batches(
    commitlog: Path, start: int, engine: str, master: str | None, batch_rows: int, tags: bool
) -> Iterator[pa.RecordBatch]:
    """The index records of ``commitlog`` from ``start``, in log order: decoded here, or by
    Spark's executors and handed back in order (the same batches either way)."""
    if engine == "spark":
        from rmqarrow.converters.spark.records import ordered_index_records
        from rmqarrow.converters.spark.session import get_spark

        spark = get_spark(master, app_name="rmqarrow-build")
        yield from ordered_index_records(
            spark, commitlog, start_offset=start, batch_rows=batch_rows
        )
        return

    yield from index_records(commitlog, start_offset=start, batch_rows=batch_rows, tags=tags)


def build(
    store: str | os.PathLike[str],
    *,
    records: str | os.PathLike[str] | None = None,
    commitlog: str | os.PathLike[str] | None = None,
    start_offset: int = 0,
    start_timestamp: int | None = None,
    engine: str = "local",
    master: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    batch_rows: int = 1 << 20,
    progress: ProgressCallback | None = None,
    wait: Wait = False,
    force: bool = False,
    rocketmq_version: str = DEFAULT_ROCKETMQ_VERSION,
) -> BuildSummary:
    """Build (or append to) the index store ``store`` as the broker's IndexService does.

    The records come from ``records`` (a Parquet, CSV or TSV file of
    :data:`rmqarrow.format.records.RECORD_COLUMNS`) or from a ``commitlog`` directory (a
    broker root's ``commitlog/``), from ``start_offset`` or from where the broker's recovery
    would start for ``start_timestamp``; ``engine="spark"`` decodes the CommitLog on Spark
    (``master``) and writes the same bytes.  A new store appears whole or not at all; an
    existing one is appended crash-consistently (see :mod:`rmqarrow.index.store_build`),
    after its last indexed record, so a rerun over the same input adds nothing; with
    ``start_timestamp`` the record at the store's end offset is put again, as the broker's
    recovery replay does (see :func:`rmqarrow.index.store_build.build_store`).
    One writer at a time: another process writing the store refuses this build in one line
    naming it, or is waited for with ``wait`` (True, or that many seconds).  A store a
    RocketMQ broker is running on is refused (:class:`~rmqarrow.errors.BrokerRunningError`:
    stop the broker or build a copy); ``force=True`` only writes a copy whose ``abort`` is
    left without a ``lock`` file.

    ``rocketmq_version`` says whose rules a CommitLog build follows: from ``"5.4"`` on,
    each message's tags are indexed too (``topic#T#tags``, see
    :mod:`rmqarrow.format.records`); the default, ``"5.3"``, is what 4.9.x to 5.3.x write.

    The geometry of new files is ``geometry`` (a :class:`~rmqarrow.GeometryHint`, or a
    complete :class:`~rmqarrow.Geometry`) or ``hash_slot_num``/``index_num`` (not both
    forms); a count not given is the existing store's (RocketMQ's default for a new one).
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    tags = indexes_tags(rocketmq_version)
    if (records is None) == (commitlog is None):
        raise UsageError("give one source: records (a Parquet/CSV file) or commitlog (a DIR)")
    if batch_rows < 1:
        raise UsageError(f"batch_rows must be >= 1, got {batch_rows}")
    if start_timestamp is not None and commitlog is None:
        raise UsageError("start_timestamp goes with commitlog")
    if isinstance(start_offset, bool) or not isinstance(start_offset, int) or start_offset < 0:
        raise UsageError(
            f"start_offset must be a CommitLog offset >= 0, got {start_offset!r}; give 0 "
            "(the default) to build from the first record"
        )
    if start_offset and commitlog is None:
        raise UsageError("start_offset goes with commitlog; records from a file are all built")
    if start_offset and start_timestamp is not None:
        raise UsageError("start_offset and start_timestamp both say where to resume; give one")
    if checkpoint is not None and not Path(checkpoint).parent.is_dir():
        # the checkpoint sits in the broker's store root: a missing directory is a typo,
        # not a place to create one
        raise UsageError(
            f"checkpoint {checkpoint}: {Path(checkpoint).parent} is not an existing "
            "directory; give the broker store root's checkpoint file (or create the directory)"
        )
    if engine not in ("local", "spark"):
        raise UsageError(f"unknown build engine {engine!r}; choose from local, spark")
    if engine == "spark" and commitlog is None:
        raise UsageError(
            "the spark engine decodes a CommitLog (records from a file are read by this process)"
        )
    if tags and records is not None:
        raise UsageError(
            f"rocketmq_version {rocketmq_version} indexes tags, and a records file has no "
            "tags column; build from the CommitLog (commitlog=...) to index tags"
        )
    if tags and engine == "spark":
        raise UsageError(
            f"rocketmq_version {rocketmq_version} indexes tags, which the spark engine does "
            "not decode yet; build with the local engine"
        )
    if engine != "spark" and master is not None:
        raise UsageError("master needs engine='spark'")
    check_build_output(store)
    # before the input is read (a whole file is validated before an append)
    check_store_writable(store, force=force)
    if checkpoint is not None:
        check_store_writable(checkpoint, force=force)
    if records is not None:
        source = Path(records)
        target = Path(store)
        if target.is_dir() and any(target.iterdir()):
            validate_record_file(source, batch_rows)  # never half-append a bad file
        batches, total = read_record_batches(source, batch_rows)

        try:
            return build_store(
                store,
                batches,
                geometry=hint,
                checkpoint=checkpoint,
                total=total,
                progress=progress,
                wait=wait,
                force=force,
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise bad_record(source, exc) from None
    assert commitlog is not None
    log = require_commitlog(commitlog)
    start = start_offset
    if start_timestamp is not None:
        start = CommitLogReader(log).recover_start_offset(start_timestamp)
    return build_store(
        store,
        _commitlog_batches(log, start, engine, master, batch_rows, tags),
        geometry=hint,
        checkpoint=checkpoint,
        progress=progress,
        wait=wait,
        force=force,
        # the broker's abnormal-recovery replay puts the record at the store's end offset
        # again; any other resume starts after it (see build_store)
        replay=start_timestamp is not None,
    )
