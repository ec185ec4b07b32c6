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

__all__ = ["pid_alive", "remove_path", "sibling", "stale_siblings"]


def sibling(target: Path, tag: str) -> Path:
    """A fresh hidden name next to ``target`` owned by this process."""
    return target.parent / f".{target.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stale_siblings(target: Path, tag: str) -> list[Path]:
    """Siblings ``.TARGET.TAG-PID-*`` of ``target`` whose owning process is dead."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.{re.escape(tag)}-(\d+)-[0-9a-f]+$")
    out = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    for name in sorted(names):
        m = pattern.match(name)
        if m and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))):
            out.append(target.parent / name)
    return out


def remove_path(path: Path) -> None:
    """Remove a file or a directory tree; gone already is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
