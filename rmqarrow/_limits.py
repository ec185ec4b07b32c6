"""System limits a command can hit with many files: one line naming the limit.

CPython's ``mmap`` keeps a duplicate descriptor of the file it maps, so every mapped file
costs one descriptor; rmqarrow keeps a bounded set of maps open
(:mod:`rmqarrow.index._maps`), but other processes, or a limit set very low, can still
exhaust it.  :func:`limit_error` turns the resulting ``OSError`` into one line that says
which limit was hit and what to do.
"""

from __future__ import annotations

import errno
import os

from rmqarrow.errors import RmqArrowError

__all__ = ["ResourceLimitError", "fd_soft_limit", "limit_error"]


class ResourceLimitError(RmqArrowError, OSError):
    """A system limit (open files, address space) stopped the command; the message names
    the limit and its value.  ``errno`` is the system's (EMFILE, ENFILE, ENOMEM)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)  # one argument: str() is the message, no "[Errno N]"
        self.errno = code


def fd_soft_limit() -> int | None:
    """The soft ``RLIMIT_NOFILE`` of this process (None when unlimited or unknown)."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def limit_error(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` as a :class:`ResourceLimitError` when it is a limit (open files, memory);
    otherwise ``exc`` itself."""
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        soft = fd_soft_limit()
        which = (
            "the system's open-file table is full"
            if exc.errno == errno.ENFILE
            else f"ulimit -n is {soft if soft is not None else 'unlimited'}"
        )
        return ResourceLimitError(
            exc.errno,
            f"too many open files ({which}) while opening {path}; raise the limit "
            "(ulimit -n) or close other programs holding files",
        )
    if exc.errno == errno.ENOMEM:
        return ResourceLimitError(
            exc.errno,
            f"out of memory or address space (ulimit -v / the container's memory limit) "
            f"while mapping {path}; raise the limit",
        )
    return exc
