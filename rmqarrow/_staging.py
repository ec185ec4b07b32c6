"""Staging names next to an output, owned by a process, and the removal of stale ones.

Every output rmqarrow builds aside (a dataset, an imported store, a new store from
``build``) is staged in a hidden sibling of the output, never inside it (RocketMQ's
``IndexService.load`` opens every entry of ``store/index``).  The name carries the owning
process id: ``.OUT.TAG-PID-RANDOM``.  A later run on the same output removes stale
siblings whose owner is provably dead (no such process), so kill -9 leftovers do not
accumulate; a sibling whose pid is alive is left alone, whoever owns it now.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from pathlib import Path

from rmqarrow.errors import UsageError

__all__ = [
    "check_output_place",
    "fsync_dir",
    "pid_alive",
    "remove_path",
    "sibling",
    "staged_target",
    "stale_siblings",
]

_STAGED = re.compile(r"^\.(.+)\.([a-z]+)-(\d+)-[0-9a-f]+$")


def sibling(target: Path, tag: str) -> Path:
    """A fresh hidden name next to ``target`` owned by this process."""
    return target.parent / f".{target.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def staged_target(path: Path) -> Path | None:
    """The output a staging name ``.OUT.TAG-PID-RANDOM`` stands for (``OUT`` next to it),
    or None when ``path`` is not a staging name."""
    m = _STAGED.match(path.name)
    return path.parent / m.group(1) if m else None


def fsync_dir(directory: Path) -> None:
    """Make the entries of ``directory`` (names created, renamed, removed) durable."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # a file system without directory handles: nothing more to do
    try:
        with contextlib.suppress(OSError):  # EINVAL where directories cannot be synced
            os.fsync(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stale_siblings(target: Path, tag: str, *, locked: bool = False) -> list[Path]:
    """Siblings ``.TARGET.TAG-PID-*`` of ``target`` whose owning process is dead.

    ``locked``: the caller holds ``target``'s writer lock (:mod:`rmqarrow._lock`), which
    every writer of it holds while its siblings exist: another process's sibling is then
    a dead run's even when its pid is alive again (reused by an unrelated process)."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.{re.escape(tag)}-(\d+)-[0-9a-f]+$")
    out = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    for name in sorted(names):
        m = pattern.match(name)
        if m and int(m.group(1)) != os.getpid() and (locked or not pid_alive(int(m.group(1)))):
            out.append(target.parent / name)
    return out


def remove_path(path: Path) -> None:
    """Remove a file or a directory tree; gone already is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


_INDEX_NAME = re.compile(r"^[0-9]{17}$")


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
