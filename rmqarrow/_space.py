"""Space first: reserve a file's blocks before mapping or writing it.

A memory map over a sparse file faults pages in on first touch; on a full disk that
touch is a SIGBUS (exit 135, no message).  :func:`reserve` allocates every block up front
(``posix_fallocate``), so a full disk is one clear :class:`DiskFullError` before anything
is written.  Where the filesystem cannot allocate (no ``posix_fallocate`` support), the
file is simply extended, as before.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from rmqarrow.errors import DiskFullError

__all__ = ["disk_full", "is_disk_full", "reserve"]

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def disk_full(path: str | os.PathLike[str], size: int | None, exc: OSError) -> DiskFullError:
    """The one-line error for ENOSPC/EDQUOT while writing ``path``."""
    need = f" ({size:,} bytes needed)" if size is not None else ""
    return DiskFullError(
        f"{path}: no space left on the device{need}: {exc.strerror or exc}; "
        "free space (or write elsewhere) and run again"
    )


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC/EDQUOT, also as Arrow reports it (an ``OSError`` without errno)."""
    if not isinstance(exc, OSError):
        return False
    return (
        exc.errno in _NO_SPACE
        or "No space left on device" in str(exc)
        or ("Disk quota exceeded" in str(exc))
    )


def reserve(fd: int, size: int, path: str | os.PathLike[str]) -> None:
    """Make the open file ``fd`` ``size`` bytes long with every block allocated.

    Raises :class:`DiskFullError` (the file is left as it was: the caller removes it).
    """
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise disk_full(Path(path), size, exc) from None
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    except AttributeError:  # no posix_fallocate on this platform
        pass
    os.ftruncate(fd, size)
