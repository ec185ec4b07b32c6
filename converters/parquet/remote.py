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
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rmqarrow.converters.delta.layout import LOG_DIR
from rmqarrow.converters.parquet.manifest import read_manifest, snapshot_point

from rmqarrow._paths import ObjectLocation, dataset_location
from rmqarrow.errors import DatasetError

__all__ = ["copy_object", "local_snapshot"]


def copy_object(src: ObjectLocation, dest: Path) -> None:
    """The object ``src`` copied to the local file ``dest`` (its folder made);
    :class:`DatasetError` in one line when it cannot be read (gone: vacuumed, deleted)."""
    from pyarrow import fs as pafs

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
    point = None if as_of is None else snapshot_point(as_of)
    manifest = read_manifest(where, as_of=point)
    versions = {str(t): int(v) for t, v in manifest["delta"]["versions"].items()}
    with tempfile.TemporaryDirectory(prefix="rmqarrow-snapshot-") as tmp:
        root = Path(tmp) / where.name
        for table, version in sorted(versions.items()):
            log = where / table / LOG_DIR
            for name in _log_names(log, version):
                copy_object(log / name, root / table / LOG_DIR / name)
        for record in manifest["parts"] if parts else []:
            copy_object(where / str(record["path"]), root / str(record["path"]))
        yield root
