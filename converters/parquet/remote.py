"""A dataset on object storage, read as one snapshot on local disk.

The readers (import, and whatever takes a dataset folder) open local files; a dataset on
object storage is always in the Delta layout, whose pinned run names exactly the parts a
reader needs.  :func:`local_snapshot` copies that run, and nothing else: each table's log
up to the version the run pins and the parts those versions hold, into a temporary
folder that is a dataset of its own, gone when the reader is done.  A writer committing
meanwhile changes nothing of it (later log entries are not copied; parts are never
rewritten in place), so a reader sees the old run or the new one, whole.

A table's log is copied from its newest checkpoint at or below the pinned version (the
checkpoint's files, then the JSON entries from its version on): once a checkpoint is
written and the log cleaned up (``DeltaTable.create_checkpoint`` and
``cleanup_metadata``), the entries before it are gone, and the checkpoint holds what they
said.  A checkpoint newer than the pinned version (an older run read ``as_of``) is not
copied: the copy's latest stays that run.

Every kind of dataset (of index files, tiered files, a RocksDB index) is read and written
here the same way, told apart only by its pin table
(:data:`~rmqarrow.format.detect.PIN_TABLES`): an export writes its run into a local
staging folder and publishes it with :func:`publish_run`, after
:func:`check_export_target` refused what it must not replace.
"""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyarrow import fs as pafs
from rmqarrow.converters.delta.layout import LOG_DIR, PIN_TABLE, is_delta_dataset, pin_table_of
from rmqarrow.converters.manifests import as_manifest
from rmqarrow.converters.parquet.manifest import delta_manifest, pinned_manifest, snapshot_point
from rmqarrow.converters.parquet.to_delta import commit_manifest

from rmqarrow._crash import crash_point
from rmqarrow._paths import ObjectLocation, dataset_location, storage_errors
from rmqarrow.errors import CommitConflictError, DatasetError, OutputExistsError
from rmqarrow.format.detect import PIN_TABLES, ROCKSDB_DATASET_FORMAT, TIERED_DATASET_FORMAT

__all__ = ["check_export_target", "copy_object", "local_snapshot", "publish_run"]

#: What each kind's pin table says a dataset holds, as a refusal names it.
_KIND_OF = {
    PIN_TABLE: "index files",
    PIN_TABLES[TIERED_DATASET_FORMAT]: "tiered index files",
    PIN_TABLES[ROCKSDB_DATASET_FORMAT]: "a RocksDB message index",
}


def copy_object(src: ObjectLocation, dest: Path) -> None:
    """The object ``src`` copied to the local file ``dest`` (its folder made);
    :class:`DatasetError` in one line when it cannot be read (gone: vacuumed, deleted)."""

    fs, key = src.filesystem()
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        pafs.copy_files(
            key, str(dest), source_filesystem=fs, destination_filesystem=pafs.LocalFileSystem()
        )
    except OSError as exc:
        raise DatasetError(
            f"{src}: cannot read it ({str(exc).splitlines()[0]}); the dataset's pinned run "
            "names it: was it vacuumed or deleted meanwhile? Run again"
        ) from None


# a classic checkpoint, NNN.checkpoint.parquet, or one part of a multi-part one,
# NNN.checkpoint.PART.PARTS.parquet (the tables rmqarrow commits use no v2 checkpoints)
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d{10}\.\d{10})?\.parquet$")


def _log_names(log: ObjectLocation, version: int) -> list[str]:
    """The names of the log objects that give a table's state at ``version``: the files
    of its newest checkpoint at or below it and the JSON entries from that checkpoint's
    version to ``version`` (all of them from 0 when there is no checkpoint)."""
    names = [item.name for item in log.iterdir()]
    checkpoints: dict[int, list[str]] = {}
    for name in names:
        match = _CHECKPOINT.match(name)
        if match is not None and int(match.group(1)) <= version:
            checkpoints.setdefault(int(match.group(1)), []).append(name)
    # a multi-part checkpoint counts only when every part is there (a writer killed while
    # writing one leaves some): the older checkpoint (or the JSON) is read instead
    whole = [v for v, parts in checkpoints.items() if _complete(parts)]
    start = max(whole, default=-1)
    entries = [f"{v:020d}.json" for v in range(max(start, 0), version + 1)]
    present = set(names)
    missing = [e for e in entries if e not in present and int(e[:20]) > start]
    if missing:
        raise DatasetError(
            f"{log}: the log entry {missing[0]} of the version the dataset's run pins is "
            f"gone and no checkpoint at or below version {version} holds it; the log was "
            "cleaned up past the run: read a newer version, or export again"
        )
    return sorted(checkpoints.get(start, [])) + [e for e in entries if e in present]


def _complete(parts: list[str]) -> bool:
    """Whether a checkpoint's files are all there (one classic file, or every part)."""
    if len(parts) == 1 and parts[0].endswith(".checkpoint.parquet"):
        return True
    counts = {int(p.split(".")[3]) for p in parts if p.count(".") == 4}
    return len(counts) == 1 and len(parts) == counts.pop()


@contextmanager
def local_snapshot(
    dataset: str | os.PathLike[str] | ObjectLocation, as_of: object = None, *, parts: bool = True
) -> Iterator[Path]:
    """``dataset`` as a local folder: itself when local, else a temporary copy of its
    pinned run (see the module), deleted on exit.  ``as_of``: of the run pinned at that
    version or time instead of the latest (the copy's logs end there, so the copy's latest
    is that run).  ``parts=False``: the logs only, for a writer that plans a run from
    them and copies the few parts it reads (:func:`copy_object`)."""
    where = dataset_location(dataset)
    if not isinstance(where, ObjectLocation):
        yield where
        return
    manifest = as_manifest(remote_manifest(where, as_of), where)
    versions = {} if manifest.delta is None else dict(manifest.delta.versions)
    with tempfile.TemporaryDirectory(prefix="rmqarrow-snapshot-") as tmp:
        root = Path(tmp) / where.name
        for table, version in sorted(versions.items()):
            log = where / table / LOG_DIR
            for name in _log_names(log, version):
                copy_object(log / name, root / table / LOG_DIR / name)
        for record in manifest.parts or () if parts else ():
            copy_object(where / record.path, root / record.path)
        yield root


def remote_manifest(where: ObjectLocation, as_of: object = None) -> dict[str, Any]:
    """The manifest of the dataset of any kind at ``where`` (its pinned run's, the one
    pinned ``as_of`` a version or time when given; the one a reader pinned here, when it
    did); its format is checked by the reader of its kind, on the local copy."""
    if as_of is None:
        pinned = pinned_manifest(where)
        if pinned is not None:
            return pinned
    if not is_delta_dataset(where):
        tables = ", ".join(f"{t}/" for t in _KIND_OF)
        raise DatasetError(
            f"{where}: no dataset here (no Delta table of a dataset: {tables}); export one "
            "with `rmqarrow export STORE URI`"
        )
    point = None if as_of is None else snapshot_point(as_of)
    return delta_manifest(where, point, pin_table_of(where))


def check_export_target(
    out: ObjectLocation,
    pin_table: str,
    tables: Collection[str],
    *,
    overwrite: bool,
    hint: str = "",
) -> None:
    """Refuse, before anything is written, an export to ``out`` of the kind whose pin
    table is ``pin_table`` and whose tables are ``tables``: a dataset there without
    ``overwrite``; a dataset of another kind even with it (its versions would go, and its
    tables would be mixed with this export's); objects that are no dataset's.  ``hint``:
    what else the caller's kind offers for an existing dataset (", or ...")."""
    if is_delta_dataset(out):
        there = pin_table_of(out)
        if there != pin_table:
            raise OutputExistsError(
                f"{out}: a dataset of Delta tables of another kind ({_KIND_OF[there]}) than "
                f"this export's ({_KIND_OF[pin_table]}); overwrite would replace it and its "
                "versions: export to another prefix, or delete it yourself"
            )
        if not overwrite:
            raise OutputExistsError(
                f"{out}: a dataset is already there; pass overwrite=True to replace "
                f"its tables in a new version{hint}"
            )
        return
    foreign = [c.name for c in out.iterdir() if c.name not in tables]
    if foreign:
        raise OutputExistsError(
            f"{out}: holds {foreign[0]!r} ({len(foreign)} such), which is not a dataset's; "
            "export to an empty prefix"
        )


def publish_run(
    out: ObjectLocation,
    tmp: Path,
    manifest: dict[str, Any],
    *,
    pin_table: str,
    overwrite: bool,
    app: str,
    renamed: Callable[[dict[str, str]], None] | None = None,
    hint: str = "",
) -> None:
    """Publish the run staged in the local folder ``tmp`` (its parts listed by
    ``manifest``) as the dataset ``out`` on object storage, which has no rename: the
    parts are copied under new names (the run's token in each: no part of another run is
    ever overwritten) and committed as one run pinned by ``pin_table``'s commit through
    delta-rs, whose conditional put lets one of two writers commit a version and fails
    the other (:class:`CommitConflictError`, in one line).  A killed export leaves only
    parts no commit references, which no reader lists.  ``renamed`` is given the parts'
    new names by their staged ones (for what else of ``manifest`` names them) before the
    commit.  ``overwrite``: the run replaces every table's parts (older versions stay
    readable until a vacuum); without it a dataset committed meanwhile is refused, as is
    one of another kind with it (:func:`check_export_target` refused them up front;
    ``hint`` as there)."""

    token = uuid.uuid4().hex[:12]
    fs, root = out.filesystem()
    records = []
    staged = as_manifest(manifest, tmp).parts or ()
    for record in staged:
        local = record.path
        table, _, name = local.partition("/")
        stem, dot, ext = name.rpartition(".")
        remote = f"{table}/{stem}-{token}{dot}{ext}"
        with storage_errors(out / remote):
            pafs.copy_files(
                str(tmp / local),
                f"{root}/{remote}",
                source_filesystem=pafs.LocalFileSystem(),
                destination_filesystem=fs,
            )
        crash_point("export:uploaded")
        records.append(replace(record, path=remote))
    manifest["parts"] = [r.to_dict() for r in records]  # the caller's record, as published
    if renamed is not None:
        renamed({old.path: new.path for old, new in zip(staged, records, strict=True)})
    # another export may have pinned a run while this one wrote: without overwrite it
    # is not replaced (a commit that found its run already there committed nothing), nor
    # with it when it is of another kind
    if is_delta_dataset(out) and (not overwrite or pin_table_of(out) != pin_table):
        raise OutputExistsError(
            f"{out}: another export committed a dataset here while this one ran (this "
            "export's parts are left for a vacuum); "
            + (
                "it is of another kind: export to another prefix"
                if pin_table_of(out) != pin_table
                else f"pass overwrite=True to replace it in a new version{hint}"
            )
        )
    if overwrite and is_delta_dataset(out):
        # the next run number, as a local replacement takes: an incremental run after
        # it must not take a number an earlier incremental run committed (its commit
        # would be taken for that run's, already landed)
        pinned = as_manifest(delta_manifest(out, pin_table=pin_table), out)
        manifest["run"] = pinned.run_count + 1
    if not commit_manifest(out, manifest, app, pin_table=pin_table):
        raise CommitConflictError(
            f"{out}: another writer committed this run's version first; nothing of this "
            "export is read (its parts are left for a vacuum): run it again"
        )
