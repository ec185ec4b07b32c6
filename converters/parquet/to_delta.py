"""Convert a dataset of the manifest layout (``_rmqarrow.json``) to Delta tables in place.

Nothing is rewritten: the parts the manifest lists are committed as they are, one Delta
table per table folder, in one run pinned by its ``files`` commit (a tiered or RocksDB
dataset's: its own pin table, :data:`~rmqarrow.format.detect.PIN_TABLES`, and the parts
of its folders, which its manifest does not list)
(:func:`rmqarrow.converters.delta.run.commit_run`), whose record is the manifest but its
parts list (which the tables now hold).  The manifest is deleted last; until then the
dataset is still the one it describes (:func:`rmqarrow.converters.delta.layout.
is_delta_dataset`), so a conversion killed at any point leaves a readable dataset and the
next one finishes it (a pin already landed is not committed again, unless an incremental
run switched the manifest since: the difference is then committed; tables a killed run
committed without a pin are restored to the pin first).  Parts the manifest does not list
(a killed incremental run's, replaced ones) are left on disk uncommitted, for a vacuum.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from rmqarrow.converters.delta.layout import PIN_TABLE, is_delta_dataset, pin_table_of
from rmqarrow.converters.manifests import AnyManifest, as_manifest
from rmqarrow.converters.parquet.atomic import recover
from rmqarrow.converters.parquet.kind_read import kind_manifest, listed_manifest
from rmqarrow.converters.parquet.manifest import (
    MANIFEST_NAME,
    check_parts,
    dataset_manifest,
    delta_manifest,
    load_manifest_json,
)

from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._paths import DatasetLocation, ObjectLocation, dataset_location, local_path
from rmqarrow._staging import fsync_dir, remove_path, sibling
from rmqarrow.errors import DatasetError, InvalidValueError, StoreNotFoundError
from rmqarrow.format.detect import PIN_TABLES, ROCKSDB_DATASET_FORMAT, TIERED_DATASET_FORMAT

__all__ = [
    "CONVERT_APP",
    "DEFAULT_RETENTION_HOURS",
    "MIN_RETENTION_HOURS",
    "commit_manifest",
    "commit_replacement",
    "convert_to_delta",
    "replacing",
    "run_record",
    "vacuum_dataset",
]

_log = logging.getLogger(__name__)

#: The application id of a conversion's run.
CONVERT_APP = "rmqarrow-convert"
#: Manifest keys a Delta dataset's record leaves out: its tables list the parts.
_NOT_RECORDED = ("parts", "superseded", "delta", "digests")


#: What a part's record holds that Delta's add action does not: the checksums readers
#: check a part by (:func:`rmqarrow.converters.parquet.manifest.check_parts`).
DIGESTS = ("footer_sha256", "sha256")


def run_record(manifest: AnyManifest | dict[str, Any]) -> dict[str, Any]:
    """What a run's pin records of a dataset (its ``source``): the manifest's keys but
    the parts lists, and each part's checksums (``digests``, by path), so a part changed
    in place is refused as in the manifest layout."""
    typed = as_manifest(manifest)
    record = {k: v for k, v in typed.to_dict().items() if k not in _NOT_RECORDED}
    digests = {}
    for r in typed.parts or ():
        sums = {
            k: v for k, v in zip(DIGESTS, (r.footer_sha256, r.sha256), strict=True) if v is not None
        }
        if sums:
            digests[r.path] = sums
    if digests:
        record["digests"] = digests
    return record


def commit_manifest(
    root: DatasetLocation,
    manifest: AnyManifest | dict[str, Any],
    app: str,
    version: int | None = None,
    *,
    expect_pin: int | None = None,
    pin_table: str = PIN_TABLE,
) -> bool:
    """Make the Delta tables of ``root`` hold exactly the parts ``manifest`` lists, in one
    run pinned with the manifest's record (:func:`run_record`): the parts the pinned run
    does not hold added, those it holds and the manifest does not list removed.  Returns
    False when the pinned run already holds them and the same record (nothing committed:
    a re-run, or a conversion killed after its pin).  ``app``: the run's application id;
    its version ``version``, or the pin's version after this run.  ``expect_pin``: the pin
    version the manifest was planned on; another pinned since refuses the run
    (:class:`~rmqarrow.errors.CommitConflictError`: its changes are of an older run).
    ``pin_table``: the table whose commit pins the run (the dataset kind's:
    :data:`~rmqarrow.format.detect.PIN_TABLES`)."""
    # the Delta engine loads on first use: deltalake's library must not map for native stores
    from deltalake import DeltaTable
    from rmqarrow.converters.delta.run import TableChange, commit_run

    typed = as_manifest(manifest, root)
    after = {r.path for r in typed.parts or ()}
    if not any(p.startswith(f"{pin_table}/") for p in after):
        raise DatasetError(f"{root}: the manifest lists no part of {pin_table}/; export it again")
    before: set[str] = set()
    next_version = 0
    if DeltaTable.is_deltatable(str(root / pin_table)):
        pinned = as_manifest(delta_manifest(root, pin_table=pin_table), root / pin_table)
        before = {r.path for r in pinned.parts or ()}
        if before == after and run_record(pinned) == run_record(typed):
            return False
        next_version = (pinned.delta_version or 0) + 1
    changes: dict[str, TableChange] = {}
    for table in sorted({p.split("/", 1)[0] for p in before | after}):
        add = [root / p for p in sorted(after - before) if p.startswith(f"{table}/")]
        remove = [p.split("/", 1)[1] for p in sorted(before - after) if p.startswith(f"{table}/")]
        if add or remove:
            changes[table] = TableChange(add=add, remove=remove)
    run = next_version if version is None else version
    committed = commit_run(
        root,
        changes,
        app=(app, run),
        source=run_record(typed),
        expect_pin=expect_pin,
        pin_table=pin_table,
    )
    return committed is not None


@contextmanager
def replacing(out: Path, *, wait: Wait = False) -> Iterator[Path]:
    """An empty staging folder (beside ``out``) for a whole new export of the dataset of
    Delta tables ``out``, its writer lock held throughout; the export finishes with
    :func:`commit_replacement` inside the block.  The staging folder goes either way (a
    killed run's is removed by the next writer's recovery)."""
    with writer_lock(out, wait=wait):
        recover(out)
        if not is_delta_dataset(out):
            raise DatasetError(f"{out}: no longer a dataset of Delta tables; export it again")
        tmp = sibling(out, "tmp")
        tmp.mkdir()
        try:
            yield tmp
        finally:
            remove_path(tmp)


def commit_replacement(
    out: Path, staged: Path, manifest: dict[str, Any], app: str, *, pin_table: str = PIN_TABLE
) -> None:
    """Make the export staged in ``staged`` (its ``manifest``) the next version of the
    dataset of Delta tables ``out``: its parts are moved into the table folders under new
    names, then one run commits them and removes every part of the version before, which
    stays readable (``as_of``) until a vacuum.  The export takes the next run number, so
    its parts are named as that run's (``part-rRUN-...``): a kill before the commit
    leaves them unpinned, and the next incremental run removes them as a killed run's (a
    vacuum, for a kind that has no incremental run);
    names of older versions, still on disk, are never reused.  ``manifest`` is updated
    (run and parts paths)."""
    run = as_manifest(delta_manifest(out, pin_table=pin_table), out).run_count + 1
    staged_parts = as_manifest(manifest, staged).parts or ()
    parts = []
    for record in staged_parts:
        table, name = record.path.split("/", 1)
        new = f"{table}/part-r{run:06d}-{name.removeprefix('part-')}"
        (out / table).mkdir(exist_ok=True)
        os.replace(staged / record.path, out / new)
        parts.append(replace(record, path=new).to_dict())
    for table in {r.path.split("/", 1)[0] for r in staged_parts}:
        fsync_dir(out / table)
    crash_point("delta:replaced-parts")
    # the caller's record, which it returns: the run and the parts as committed
    manifest["run"] = run
    manifest["parts"] = parts
    commit_manifest(out, manifest, app, pin_table=pin_table)


def _kind_format(root: Path) -> str | None:
    """The format of a tiered or RocksDB dataset's manifest at ``root`` (None: another)."""
    manifest = load_manifest_json(root)
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    return fmt if fmt in (TIERED_DATASET_FORMAT, ROCKSDB_DATASET_FORMAT) else None


def _stale_record(root: Path) -> Path:
    """The older writer's half-written record, left when it was killed: never the record."""
    return root / f".{MANIFEST_NAME}.tmp"


def convert_to_delta(dataset: str | os.PathLike[str], *, wait: Wait = False) -> bool:
    """Make ``dataset`` (manifest layout) a dataset of Delta tables; returns False when it
    already is one.  Refused (:class:`DatasetError`) when its parts are not the ones its
    manifest lists, or it lists none (an export older than parts lists: export again).
    Holds the dataset's writer lock (``wait``: see :func:`rmqarrow._lock.acquire`)."""
    root = local_path(dataset).absolute()
    if not root.is_dir():
        raise StoreNotFoundError(f"{root}: no such dataset directory")
    with writer_lock(root, wait=wait):
        recover(root)
        if is_delta_dataset(root):
            _stale_record(root).unlink(missing_ok=True)  # a conversion killed after its commit
            return False
        fmt = _kind_format(root)
        if fmt is not None:
            # a tiered or RocksDB dataset: its manifest lists no parts, its folders do
            listed = listed_manifest(root, kind_manifest(root, fmt), fmt)
            commit_manifest(root, listed, CONVERT_APP, pin_table=PIN_TABLES[fmt])
        else:
            manifest = dataset_manifest(root)
            if manifest.parts is None:
                raise DatasetError(
                    f"{root}: the manifest lists no parts (an older export); export it whole "
                    "again (overwrite=True), then convert"
                )
            check_parts(root, manifest)
            commit_manifest(root, manifest, CONVERT_APP)
        crash_point("convert:committed")
        Path(root / MANIFEST_NAME).unlink()
        _stale_record(root).unlink(missing_ok=True)
        fsync_dir(root)
        _log.info("%s: converted to Delta tables", root)
    return True


#: How long a removed part stays readable (for readers of older runs, ``as_of``) unless
#: asked otherwise: Delta's own default retention.
DEFAULT_RETENTION_HOURS = 168


#: The shortest retention :func:`vacuum_dataset` takes without ``force``.
MIN_RETENTION_HOURS = 1


def vacuum_dataset(
    dataset: str | os.PathLike[str] | ObjectLocation,
    retention_hours: int | None = None,
    *,
    dry_run: bool = False,
    wait: Wait = False,
    force: bool = False,
) -> dict[str, list[str]]:
    """Delete the parts of a Delta dataset no run within ``retention_hours`` reads (and
    those no run ever committed, once as old), holding its writer lock; returns them by
    table (``dry_run``: only lists them).  ``retention_hours`` None:
    :data:`DEFAULT_RETENTION_HOURS`; under :data:`MIN_RETENTION_HOURS` only with ``force``,
    since a reader still on an older run (a DuckDB view, a Spark plan, a ``sql`` prompt)
    would lose its files mid-query.  See :func:`rmqarrow.converters.delta.run.vacuum`."""
    # the Delta engine loads on first use: deltalake's library must not map for native stores
    from rmqarrow.converters.delta.run import vacuum

    if retention_hours is not None and retention_hours < MIN_RETENTION_HOURS and not force:
        raise InvalidValueError(
            f"retention_hours {retention_hours} is under {MIN_RETENTION_HOURS}: readers still "
            "on an older run would lose its files mid-query; pass force=True when none can be"
        )
    where = dataset_location(dataset)
    root: DatasetLocation
    lock: contextlib.AbstractContextManager[object]
    if isinstance(where, ObjectLocation):
        # no flock on object storage: a concurrent run's commits conflict with the
        # vacuum's converge instead, and its parts are younger than any retention allowed
        root, lock = where, contextlib.nullcontext()
    else:
        root = where.absolute()
        if not root.is_dir():
            raise StoreNotFoundError(f"{root}: no such dataset directory")
        lock = writer_lock(root, wait=wait)
    with lock:
        if not is_delta_dataset(root):
            raise DatasetError(
                f"{root}: not a dataset of Delta tables (no versions to vacuum); convert it first"
            )
        hours = DEFAULT_RETENTION_HOURS if retention_hours is None else retention_hours
        return vacuum(root, hours, dry_run=dry_run, pin_table=pin_table_of(root))
