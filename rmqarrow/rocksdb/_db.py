"""Opening a RocksDB database: a new one to write, or a broker's read-only and untouched.

A broker's directory is never opened in place: RocksDB would not take its ``LOCK`` in
read-only mode, but the binding (rocksdict) writes a ``rocksdict-config.json`` into every
directory it opens, read-only and secondary modes included.  So the reader opens a
*shadow*: a private temporary directory holding copies of the small files RocketMQ's
RocksDB rewrites or appends (``CURRENT``, ``MANIFEST-*``, ``OPTIONS-*``, ``IDENTITY``, the
write-ahead ``*.log`` files) and symbolic links to the immutable table files (``*.sst``,
``*.blob``).  Opened read-only with every table file held open, the shadow is a
point-in-time view that a writer compacting or deleting files afterwards cannot disturb;
a writer deleting a file between listing and opening makes the open fail, and it is
retried on a fresh shadow.  Nothing is written to, locked in or renamed in the broker's
directory.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rmqarrow._optional import require
from rmqarrow.errors import CorruptIndexError, OutputExistsError, StoreNotFoundError
from rmqarrow.format.detect import ROCKSDB_DIR_NAMES, describe, detect
from rmqarrow.rocksdb._layout import COLUMN_FAMILIES

__all__ = [
    "Shadow",
    "create_db",
    "is_rocksdb_dir",
    "open_shadow",
    "resolve_db_dir",
    "rocksdict_module",
]

_log = logging.getLogger(__name__)
_LINKED_SUFFIXES = (".sst", ".blob")
_SKIPPED = ("LOCK", "LOG", "rocksdict-config.json")
_ATTEMPTS = 5


def rocksdict_module() -> Any:
    """The rocksdict binding, or the error naming the extra that installs it."""
    return require("rocksdict", "reading RocketMQ's RocksDB index")


def is_rocksdb_dir(p: Path) -> bool:
    """A RocksDB database directory (:func:`rmqarrow.format.detect.detect` decides)."""
    t = detect(p)
    return t.kind == "rocksdb" and t.rocksdb_dir == p


def resolve_db_dir(path: Path) -> Path:
    """The database directory for ``path``: itself, or a broker store root's
    ``rocksdbstore/`` (also beside an ``index/``)."""
    t = detect(path)
    if t.rocksdb_dir is not None:
        return t.rocksdb_dir
    if t.kind == "missing":
        raise StoreNotFoundError(f"{path}: no such RocksDB directory")
    raise StoreNotFoundError(
        f"{path}: not a RocksDB message index (expected CURRENT, MANIFEST-* and OPTIONS-* "
        f"files, or a broker store root holding {ROCKSDB_DIR_NAMES[0]}/); it is "
        f"{describe(t)}"
    )


def _options(rd: Any, *, create: bool) -> Any:
    opts = rd.Options(raw_mode=True)  # bytewise keys, as RocksJava writes them
    opts.set_max_open_files(-1)  # hold every table file: later deletions cannot hurt
    if create:
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
    return opts


def create_db(path: Path) -> Any:
    """A new database at ``path`` with the families ``default``, ``timer``, ``trans``."""
    rd = rocksdict_module()
    if path.exists() and any(path.iterdir()):
        raise OutputExistsError(f"{path}: exists and is not empty; choose a new directory")
    path.mkdir(parents=True, exist_ok=True)
    cfs = {name: rd.Options(raw_mode=True) for name in COLUMN_FAMILIES[1:]}
    return rd.Rdict(str(path), options=_options(rd, create=True), column_families=cfs)


class Shadow:
    """A read-only open of a shadow of ``source`` (see the module); close removes it."""

    def __init__(self, source: Path, db: Any, tmp: Path) -> None:
        self.source = source
        self.db = db
        self._tmp = tmp

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        shutil.rmtree(self._tmp, ignore_errors=True)


def _make_shadow(source: Path, into: Path) -> None:
    current = (source / "CURRENT").read_bytes()
    (into / "CURRENT").write_bytes(current)
    for child in sorted(source.iterdir()):
        name = child.name
        if (
            name == "CURRENT"
            or name in _SKIPPED
            or name.startswith("LOG.old")
            or not child.is_file()
        ):
            continue
        if name.endswith(_LINKED_SUFFIXES):
            (into / name).symlink_to(child.resolve())
        else:
            shutil.copyfile(child, into / name)


def open_shadow(source: Path) -> Shadow:
    """``source`` opened read-only through a fresh shadow, retried while a writer moves."""
    rd = rocksdict_module()
    last: Exception | None = None
    for attempt in range(_ATTEMPTS):
        tmp = Path(tempfile.mkdtemp(prefix="rmqarrow-rocksdb-"))
        try:
            _make_shadow(source, tmp)
            names = rd.Rdict.list_cf(str(tmp))
            cfs = {n: rd.Options(raw_mode=True) for n in names if n != "default"}
            db = rd.Rdict(
                str(tmp),
                options=_options(rd, create=False),
                column_families=cfs,
                access_type=rd.AccessType.read_only(),
            )
            return Shadow(source, db, tmp)
        except FileNotFoundError as exc:  # a file went away while copying
            last = exc
        except Exception as exc:  # rocksdict raises a bare Exception for RocksDB errors
            last = exc
        shutil.rmtree(tmp, ignore_errors=True)
        _log.info("%s changed while opening it (%s); retrying", source, last)
        time.sleep(0.05 * (attempt + 1))
    raise CorruptIndexError(
        f"{source}: RocksDB could not open it read-only ({last}); "
        "check the directory, or copy it while the broker is stopped"
    )
