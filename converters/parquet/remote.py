"""A dataset on object storage, read as one snapshot on local disk.

The readers (import, and whatever takes a dataset folder) open local files; a dataset on
object storage is always in the Delta layout, whose pinned run names exactly the parts a
reader needs.  :func:`local_snapshot` copies that run, and nothing else: each table's log
up to the version the run pins and the parts those versions hold, into a temporary
folder that is a dataset of its own, gone when the reader is done.  A writer committing
meanwhile changes nothing of it (later log entries are not copied; parts are never
rewritten in place), so a reader sees the old run or the new one, whole.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rmqarrow.converters.delta.layout import LOG_DIR
from rmqarrow.converters.parquet.manifest import read_manifest, snapshot_point

from rmqarrow._paths import ObjectLocation, dataset_location
from rmqarrow.errors import DatasetError

__all__ = ["local_snapshot"]


def _copy(src: ObjectLocation, dest: Path) -> None:
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


@contextmanager
def local_snapshot(
    dataset: str | os.PathLike[str] | ObjectLocation, as_of: object = None
) -> Iterator[Path]:
    """``dataset`` as a local folder: itself when local, else a temporary copy of its
    pinned run (see the module), deleted on exit.  ``as_of``: of the run pinned at that
    version or time instead of the latest (the copy's logs end there, so the copy's latest
    is that run)."""
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
            for v in range(version + 1):
                name = f"{LOG_DIR}/{v:020d}.json"
                _copy(where / table / name, root / table / name)
        for record in manifest["parts"]:
            _copy(where / str(record["path"]), root / str(record["path"]))
        yield root
