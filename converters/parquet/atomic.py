"""All-or-nothing outputs: build in a hidden temporary sibling, rename into place.

A reader never sees a half-written dataset or store: the output appears by one
``rename`` once complete, and any exception (``KeyboardInterrupt`` included) removes the
temporary directory instead.  An existing output is replaced only with ``overwrite=True``,
and only after the new one is complete (old moved aside, new renamed in, old deleted).

Staging siblings carry the owning pid (:mod:`rmqarrow._staging`): kill -9 leaves one
behind, and the next run on the same output removes it; a kill between moving the old
output aside and renaming the new one in is undone (the old output is put back).
Imports into an existing directory stage next to it too and journal what they place
(:func:`place_journaled`), so the next run finishes or rolls back a killed import
(:func:`recover_import`).  Every writer here holds the output's writer lock
(:mod:`rmqarrow._lock`) from its recovery of earlier runs to its last rename, so a
leftover of another process is known to be a dead run's and is cleaned whoever owns it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet.manifest import FORMAT, MANIFEST_NAME

from rmqarrow._broker import broker_state, check_store_writable
from rmqarrow._crash import crash_point
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._paths import local_path
from rmqarrow._staging import (
    check_output_place,
    fsync_dir,
    remove_path,
    sibling,
    stale_siblings,
)
from rmqarrow.errors import OutputExistsError
from rmqarrow.format.detect import (
    DATASET_KINDS,
    ROCKSDB_DATASET_FORMAT,
    TIERED_DATASET_FORMAT,
    detect,
)

__all__ = [
    "atomic_dir",
    "check_replaceable",
    "move_files_no_replace",
    "place_journaled",
    "recover",
    "recover_import",
]

_JOURNAL = "_placing.json"
_log = logging.getLogger(__name__)


def recover(target: Path) -> list[str]:
    """Clean up after killed runs on ``target`` (its writer lock held); what was done, one
    line each, also logged as warnings."""
    done = []
    for old in stale_siblings(target, "old", locked=True):
        if not target.exists() and not target.is_symlink():
            os.rename(old, target)
            done.append(f"{target}: restored from {old.name} (a replace was interrupted)")
        else:
            remove_path(old)
            done.append(f"{old}: removed (left by a killed run)")
    for tmp in stale_siblings(target, "tmp", locked=True):
        remove_path(tmp)
        done.append(f"{tmp}: removed (left by a killed run)")
    for line in done:
        _log.warning("%s", line)
    return done + recover_import(target)


def check_replaceable(out: Path) -> None:
    """``--overwrite`` replaces by a rename only a dataset of the older manifest layout
    (of any kind), never anything else: a folder of documents, a CommitLog, a store, nor a
    dataset of Delta tables, whose versions would go (an export of its own kind makes an
    overwrite one more version of it; one of another kind is refused here)."""
    if not out.exists() and not out.is_symlink():
        return
    what = "a file" if not out.is_dir() or out.is_symlink() else "a directory"
    if out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
        return  # an empty directory: nothing to lose
    if out.is_dir() and not out.is_symlink() and is_delta_dataset(out):
        raise OutputExistsError(
            f"{out}: a dataset of Delta tables of another kind than this export's; "
            "overwrite=True would replace it and its versions: export to another folder, "
            "or remove it yourself"
        )
    formats = (FORMAT, TIERED_DATASET_FORMAT, ROCKSDB_DATASET_FORMAT)
    try:
        ok = (
            out.is_dir()
            and not out.is_symlink()
            and json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")).get("format")
            in formats
        )
    except (OSError, ValueError, AttributeError, RecursionError):
        ok = False
    if not ok:
        raise OutputExistsError(
            f"{out}: exists and is {what} that is not an rmqarrow dataset; overwrite=True "
            "replaces only a dataset: remove it yourself or choose another output"
        )


@contextlib.contextmanager
def atomic_dir(
    target: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    wait: Wait = False,
    refuse: Callable[[Path], None] | None = None,
) -> Iterator[Path]:
    """Yield an empty temporary directory that becomes ``target`` when the block succeeds.

    Raises :class:`OutputExistsError` up front (and again at the end, should the target
    appear meanwhile) when ``target`` exists and ``overwrite`` is false; an existing empty
    directory is taken as the place to write (replaced by the output, nothing to lose).
    The target's writer lock is held throughout (``wait``: see :func:`rmqarrow._lock.acquire`);
    ``refuse(target)``, when given, is called first under it, to refuse what no other
    writer may change meanwhile.
    """
    out = local_path(target).absolute()
    check_output_place(out)
    state = broker_state(out)
    if state is not None and state.running:  # a dataset is no part of a broker's store
        check_store_writable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with writer_lock(out, wait=wait):
        if refuse is not None:
            refuse(out)
        yield from _atomic_dir(out, overwrite)


def _atomic_dir(out: Path, overwrite: bool) -> Generator[Path, None, None]:
    if out.parent.is_dir():
        recover(out)
    if out.exists() and not overwrite and not _empty_dir(out):
        if detect(out).kind not in DATASET_KINDS:
            check_replaceable(out)  # anything but a dataset: refused, saying what it is
        raise OutputExistsError(f"{out}: already exists; pass overwrite=True to replace it")
    if overwrite:
        check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling(out, "tmp")
    tmp.mkdir()
    try:
        yield tmp
        fsync_tree(tmp)  # durable before it is renamed into place
        crash_point("atomic:complete")
        if not overwrite and _empty_dir(out):
            try:  # an empty directory given as the output: the dataset takes its place
                out.rmdir()
            except OSError:  # something was put in it meanwhile
                raise OutputExistsError(
                    f"{out}: files appeared in it while writing; nothing was replaced"
                ) from None
        if out.exists() or out.is_symlink():
            if not overwrite:
                raise OutputExistsError(f"{out}: appeared while writing; nothing was replaced")
            check_replaceable(out)
            old = sibling(out, "old")
            os.rename(out, old)
            try:
                crash_point("atomic:old-aside")
                os.rename(tmp, out)
            except BaseException:
                if not os.path.lexists(out):
                    os.rename(old, out)  # interrupted: the old output back in place
                raise
            try:
                fsync_dir(out.parent)
                crash_point("atomic:new-in")
            finally:  # the new output is in: the old one goes, interrupted or not
                _remove_tree(old)
        else:
            os.rename(tmp, out)
            fsync_dir(out.parent)
            crash_point("atomic:renamed")
    except BaseException:
        remove_path(tmp)
        raise


def _empty_dir(path: Path) -> bool:
    """An existing, empty, real directory: an output that holds nothing to lose."""
    try:
        return path.is_dir() and not path.is_symlink() and not any(path.iterdir())
    except OSError:
        return False


def _remove_tree(root: Path) -> None:
    """Remove a replaced output, file by file (a kill half-way leaves a stale ``old``
    sibling, which the next run's :func:`recover` removes: the new output is in place)."""
    if not root.is_dir() or root.is_symlink():
        remove_path(root)
        return
    for dirpath, dirs, files in os.walk(root, topdown=False):
        for name in files:
            (Path(dirpath) / name).unlink()
            crash_point("atomic:cleanup")
        for name in dirs:
            remove_path(Path(dirpath) / name)
    remove_path(root)


def fsync_tree(root: Path) -> None:
    """fsync every file and directory under ``root`` (then ``root``)."""
    for dirpath, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            _fsync_file(Path(dirpath) / name)
        fsync_dir(Path(dirpath))


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def recover_import(target_dir: Path) -> list[str]:
    """Finish or roll back killed imports into ``target_dir`` (its writer lock held): one
    whose journal says ``placed`` is finished (its staged copies removed), any other is
    rolled back (the files it placed removed).  What was done, one line each, logged."""
    done = []
    for staging in stale_siblings(target_dir, "import", locked=True):
        done.append(
            f"{target_dir}: {settle_import(staging, target_dir)} (by a killed import, "
            f"{staging.name})"
        )
        _log.warning("%s", done[-1])
    return done


# -- journaled placement ---------------------------------------------------------------
#
# The journal (STAGING/_placing.json, replaced whole by rename, fsynced) is the truth
# about an import into an existing directory, and is removed last:
#
#   no journal        nothing was placed: the staging folder is removed
#   "placing"         some files may be placed: each target file that is the journaled
#                     inode is removed (its staged copy, or itself, keeps that inode alive,
#                     so it cannot be another file's), then "rolled-back" is written
#   "placed"          every file is placed and durable: the import is complete
#   "rolled-back"     nothing of it is left in the target
#
# and then the staged copies are removed, the journal after them, the folder last.  A
# kill at any point leaves a state the next run settles the same way.


def _write_journal(staging: Path, journal: dict[str, Any]) -> None:
    tmp = staging / f".{_JOURNAL}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(journal, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, staging / _JOURNAL)
    fsync_dir(staging)


def _read_journal(staging: Path) -> dict[str, Any] | None:
    try:
        journal = json.loads((staging / _JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # never written (it appears whole, by rename)
    return journal if isinstance(journal, dict) else None


def settle_import(staging: Path, target_dir: Path) -> str:
    """Bring the import staged in ``staging`` to an end by its journal; what happened."""
    journal = _read_journal(staging)
    state = None if journal is None else journal.get("state")
    if journal is not None and state == "placing":
        for name, (dev, ino) in journal["files"].items():
            dst = target_dir / name
            try:
                st = os.lstat(dst)
            except FileNotFoundError:
                continue
            if (st.st_dev, st.st_ino) == (dev, ino):
                dst.unlink()
                crash_point("import:rollback")
        fsync_dir(target_dir)
        _write_journal(staging, {**journal, "state": "rolled-back"})
        crash_point("import:rolled-back")
    _dispose(staging)
    if state == "placed":
        return "completed an import"
    if state in ("placing", "rolled-back"):
        return "rolled back an import"
    return "removed an unfinished import's staging folder"


def _dispose(staging: Path) -> None:
    """Remove a staging folder: its journal after everything else, the folder last."""
    try:
        names = sorted(os.listdir(staging))
    except FileNotFoundError:
        return
    for name in names:
        if name != _JOURNAL:
            remove_path(staging / name)
            crash_point("import:cleanup")
    with contextlib.suppress(FileNotFoundError):
        (staging / _JOURNAL).unlink()
    crash_point("import:journal-removed")
    with contextlib.suppress(FileNotFoundError):
        staging.rmdir()


def place_journaled(staging: Path, names: list[str], target_dir: Path) -> list[Path]:
    """Put the files ``names`` of ``staging`` into ``target_dir``, all or none, none
    replacing a file; then remove ``staging``.  A kill or an interrupt at any point is
    finished or rolled back by the next :func:`recover_import` (see the journal above).

    Each file is hard-linked (which fails on an existing name, so there is no race), or
    renamed after a check where links are unsupported.
    """
    placed: list[Path] = []
    try:
        files: dict[str, list[int]] = {}
        for name in names:
            _fsync_file(staging / name)
            st = os.stat(staging / name)
            files[name] = [st.st_dev, st.st_ino]
        journal = {"state": "placing", "target": str(target_dir), "files": files}
        _write_journal(staging, journal)
        crash_point("import:journal")
        for name in names:
            src, dst = staging / name, target_dir / name
            try:
                os.link(src, dst)
            except FileExistsError:
                raise OutputExistsError(
                    f"{dst}: already exists; rmqarrow never overwrites native files"
                ) from None
            except OSError:
                if dst.exists() or dst.is_symlink():
                    raise OutputExistsError(
                        f"{dst}: already exists; rmqarrow never overwrites native files"
                    ) from None
                os.rename(src, dst)
            placed.append(dst)
            crash_point("import:placed")
        fsync_dir(target_dir)
        _write_journal(staging, {**journal, "state": "placed"})
        crash_point("import:committed")
    except BaseException:
        settle_import(staging, target_dir)  # rolls back unless "placed" was written
        raise
    _dispose(staging)
    return placed


def move_files_no_replace(files: list[Path], target_dir: Path) -> list[Path]:
    """Put ``files`` into ``target_dir`` under their names, none replacing a file; all or none.

    Each file is hard-linked (which fails on an existing name, so there is no race; a plain
    rename after a check where links are unsupported); on any failure the names already
    placed are removed again.  The names are journaled in the staging folder first, so
    a kill -9 half-way is undone by :func:`recover_import` on the next run.  The sources
    stay: the caller deletes its temporary dir.
    """
    placed: list[Path] = []
    if files:
        (files[0].parent / _JOURNAL).write_text(
            json.dumps([f.name for f in files]), encoding="utf-8"
        )
    try:
        for src in files:
            dst = target_dir / src.name
            try:
                os.link(src, dst)
            except FileExistsError:
                raise OutputExistsError(
                    f"{dst}: already exists; rmqarrow never overwrites native files"
                ) from None
            except OSError:
                if dst.exists() or dst.is_symlink():
                    raise OutputExistsError(
                        f"{dst}: already exists; rmqarrow never overwrites native files"
                    ) from None
                os.rename(src, dst)
            placed.append(dst)
            crash_point("import:placed")
    except BaseException:
        for dst in placed:
            with contextlib.suppress(FileNotFoundError):
                dst.unlink()
        raise
    return placed
