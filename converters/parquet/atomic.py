"""All-or-nothing outputs: build in a hidden temporary sibling, rename into place.

A reader never sees a half-written dataset or store: the output appears by one
``rename`` once complete, and any exception (``KeyboardInterrupt`` included) removes the
temporary directory instead.  An existing output is replaced only with ``overwrite=True``,
and only after the new one is complete (old moved aside, new renamed in, old deleted).

Staging siblings carry the owning pid (:mod:`rmqarrow._staging`): kill -9 leaves one
behind, and the next run on the same output removes it; a kill between moving the old
output aside and renaming the new one in is undone (the old output is put back).
Imports into an existing directory stage next to it too and journal what they place, so
a killed import's files are taken out again by the next run (:func:`recover_import`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from rmqarrow._crash import crash_point
from rmqarrow._staging import remove_path, sibling, stale_siblings
from rmqarrow.errors import OutputExistsError, UsageError

__all__ = [
    "atomic_dir",
    "check_output_place",
    "check_replaceable",
    "move_files_no_replace",
    "recover",
    "recover_import",
]

_JOURNAL = "_placing.json"


def recover(target: Path) -> list[str]:
    """Clean up after killed runs on ``target``; what was done, one line each."""
    done = []
    for old in stale_siblings(target, "old"):
        if not target.exists() and not target.is_symlink():
            os.rename(old, target)
            done.append(f"{target}: restored from {old.name} (a replace was interrupted)")
        else:
            remove_path(old)
            done.append(f"{old}: removed (left by a killed run)")
    for tmp in stale_siblings(target, "tmp"):
        remove_path(tmp)
        done.append(f"{tmp}: removed (left by a killed run)")
    done += recover_import(target)
    return done


_INDEX_NAME = re.compile(r"^\d{17}$")  # RocketMQ's yyyyMMddHHmmssSSS file names


def check_output_place(out: Path) -> None:
    """Refuse an output whose parent is a store directory (it holds index files):
    RocketMQ's ``IndexService.load`` opens every entry there and fails on anything else."""
    parent = out.parent
    try:
        names = os.listdir(parent)
    except OSError:
        return
    if any(_INDEX_NAME.match(n) and (parent / n).is_file() for n in names):
        raise UsageError(
            f"{out}: inside the index store directory {parent} (RocketMQ's load() opens "
            "every entry there and would fail on it); write it outside the store"
        )


def check_replaceable(out: Path) -> None:
    """``--overwrite`` replaces only an rmqarrow dataset (its manifest present), never
    anything else (a folder of documents, a CommitLog, a store)."""
    from rmqarrow.converters.parquet.manifest import FORMAT, MANIFEST_NAME

    if not out.exists() and not out.is_symlink():
        return
    what = "a file" if not out.is_dir() or out.is_symlink() else "a directory"
    if out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
        return  # an empty directory: nothing to lose
    try:
        ok = out.is_dir() and not out.is_symlink() and json.loads(
            (out / MANIFEST_NAME).read_text(encoding="utf-8")
        ).get("format") == FORMAT
    except (OSError, ValueError, AttributeError, RecursionError):
        ok = False
    if not ok:
        raise OutputExistsError(
            f"{out}: exists and is {what} that is not an rmqarrow dataset (no "
            f"{MANIFEST_NAME}); --overwrite replaces only a dataset: remove it yourself "
            "or choose another output"
        )


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield an empty temporary directory that becomes ``target`` when the block succeeds.

    Raises :class:`OutputExistsError` up front (and again at the end, should the target
    appear meanwhile) when ``target`` exists and ``overwrite`` is false.
    """
    out = Path(target).absolute()
    check_output_place(out)
    if out.parent.is_dir():
        recover(out)
    if out.exists() and not overwrite:
        raise OutputExistsError(
            f"{out}: already exists; pass overwrite (--overwrite) to replace it"
        )
    if overwrite:
        check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling(out, "tmp")
    tmp.mkdir()
    try:
        yield tmp
        crash_point("atomic:complete")
        if out.exists() or out.is_symlink():
            if not overwrite:
                raise OutputExistsError(f"{out}: appeared while writing; nothing was replaced")
            check_replaceable(out)
            old = sibling(out, "old")
            os.rename(out, old)
            crash_point("atomic:old-aside")
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old, out)
                raise
            crash_point("atomic:new-in")
            remove_path(old)
        else:
            os.rename(tmp, out)
    except BaseException:
        remove_path(tmp)
        raise


def recover_import(target_dir: Path) -> list[str]:
    """Undo the placements of killed imports into ``target_dir``: each file they linked
    in (the same inode as their staged copy) is removed, then their staging folder."""
    done = []
    for staging in stale_siblings(target_dir, "import"):
        journal = staging / _JOURNAL
        with contextlib.suppress(OSError, ValueError):
            for name in json.loads(journal.read_text(encoding="utf-8")):
                src, dst = staging / name, target_dir / name
                with contextlib.suppress(OSError):
                    if os.path.samefile(src, dst):
                        dst.unlink()
                        done.append(f"{dst}: removed (placed by an import that was killed)")
        remove_path(staging)
        done.append(f"{staging}: removed (left by a killed import)")
    return done


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
        (files[0].parent / _JOURNAL).write_text(json.dumps([f.name for f in files]),
                                                encoding="utf-8")
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
