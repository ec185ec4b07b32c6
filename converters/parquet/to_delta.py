"""Convert a dataset of the manifest layout (``_rmqarrow.json``) to Delta tables in place.

Nothing is rewritten: the parts the manifest lists are committed as they are, one Delta
table per table folder, in one run pinned by its ``files`` commit
(:func:`rmqarrow.converters.delta.run.commit_run`), whose record is the manifest but its
parts list (which the tables now hold).  The manifest is deleted last; until then the
dataset is still the one it describes (:func:`rmqarrow.converters.delta.layout.
is_delta_dataset`), so a conversion killed at any point leaves a readable dataset and the
next one finishes it (a pin already landed is not committed again; tables a killed run
created without a pin are emptied and committed anew).  Parts the manifest does not list
(a killed incremental run's, replaced ones) are left on disk uncommitted, for a vacuum.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet.atomic import recover
from rmqarrow.converters.parquet.manifest import MANIFEST_NAME, check_parts, read_manifest

from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._paths import local_path
from rmqarrow._staging import fsync_dir
from rmqarrow.errors import DatasetError, StoreNotFoundError

__all__ = ["CONVERT_APP", "commit_parts", "convert_to_delta", "run_record"]

_log = logging.getLogger(__name__)

#: The application transaction of a conversion: one per dataset, so a re-run after a
#: kill between the pin and the manifest's deletion commits nothing again.
CONVERT_APP = ("rmqarrow-convert", 1)
#: Manifest keys a Delta dataset's record leaves out: its tables list the parts.
_NOT_RECORDED = ("parts", "superseded", "delta")


def run_record(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a run's pin records of a dataset (its ``source``): the manifest's keys but
    the parts lists."""
    return {k: v for k, v in manifest.items() if k not in _NOT_RECORDED}


def commit_parts(root: Path, manifest: dict[str, Any], app: tuple[str, int]) -> None:
    """Commit the parts ``manifest`` lists as the Delta tables of ``root`` (one run, pinned
    with the manifest's record); nothing when the run ``app`` has landed already."""
    from rmqarrow.converters.delta.run import TableChange, commit_run

    adds: dict[str, list[Path]] = {}
    for rec in manifest["parts"]:
        rel = str(rec["path"])
        adds.setdefault(rel.split("/", 1)[0], []).append(root / rel)
    if "files" not in adds:
        raise DatasetError(f"{root}: the manifest lists no part of files/; export it again")
    changes = {table: TableChange(add=parts) for table, parts in adds.items()}
    commit_run(root, changes, app=app, source=run_record(manifest))


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
            return False
        manifest = read_manifest(root)
        listed = manifest.get("parts")
        if not isinstance(listed, list):
            raise DatasetError(
                f"{root}: the manifest lists no parts (an older export); export it whole "
                "again (--overwrite), then convert"
            )
        check_parts(root, manifest)
        commit_parts(root, manifest, CONVERT_APP)
        crash_point("convert:committed")
        Path(root / MANIFEST_NAME).unlink()
        fsync_dir(root)
        _log.info("%s: converted to Delta tables", root)
    return True
