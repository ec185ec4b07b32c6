"""One writer at a time per store, dataset or checkpoint; readers are never blocked.

A writer holds ``fcntl.flock`` on a hidden lock file next to what it writes:
``.NAME.lock`` beside the store directory, dataset directory or checkpoint file ``NAME``.
Next to it, not inside: RocketMQ's ``IndexService.load`` opens every entry of
``store/index`` (a lock file there would stop a broker from starting), and a dataset is
replaced by renaming a new directory into place (a lock inside would move with the old
one).  A staging name ``.NAME.TAG-PID-RANDOM`` (:mod:`rmqarrow._staging`) locks ``NAME``.

The kernel drops a flock when its holder dies, however it dies, so a killed writer's
lock is free at once; the file stays and holds the dead holder's details until the next
writer takes it.  The holder writes its pid, host, command and start time into the file,
which is how a refused writer's :class:`~rmqarrow.errors.StoreLockedError` names it.  The
holder removes the file while still holding the lock, and a writer that got the lock
checks that the path still names the file it locked (else it tries again): the file does
not linger after clean runs, and two writers never both hold it.

Locks are re-entrant within a process (counted), so nested writers (an import that also
writes a checkpoint, a build that stages) take them freely.  Readers take nothing.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rmqarrow._staging import staged_target
from rmqarrow.errors import InvalidValueError, LockFileError, StoreLockedError

__all__ = ["WriterLock", "acquire", "lock_path", "wait_seconds", "writer_lock"]

Wait = bool | float


@dataclass
class _Held:
    fd: int
    count: int


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def _forget_in_child() -> None:
    # A forked child shares the parent's lock; closing its copies leaves the parent's
    # lock held (flock is released only when every copy is closed).
    for held in _held.values():
        with contextlib.suppress(OSError):
            os.close(held.fd)
    _held.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def lock_path(target: str | os.PathLike[str]) -> Path:
    """The lock file guarding writes to ``target``: ``.NAME.lock`` next to it."""
    real = Path(os.path.realpath(os.path.abspath(target)))
    staged = staged_target(real)
    if staged is not None:
        real = staged
    return real.parent / f".{real.name}.lock"


def wait_seconds(wait: Wait) -> float | None:
    """``wait`` as a timeout: ``False`` is 0 (refuse at once), ``True`` is None (forever)."""
    if isinstance(wait, bool):
        return None if wait else 0.0
    if isinstance(wait, int | float) and math.isfinite(wait) and wait >= 0:
        return float(wait)
    raise InvalidValueError(f"wait must be True, False or a number of seconds >= 0, got {wait!r}")


class WriterLock:
    """A held writer lock; :meth:`release` (or the ``with`` block's end) lets it go."""

    def __init__(self, target: Path, path: Path) -> None:
        self.target = target
        self.path = path
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        with _guard:
            held = _held.get(str(self.path))
            if held is None:
                return
            held.count -= 1
            if held.count > 0:
                return
            del _held[str(self.path)]
            # Unlink while still holding it: a writer waiting on this file then finds it
            # is no longer the one at the path and opens the new one.
            with contextlib.suppress(OSError):
                if _same_file(held.fd, self.path):
                    self.path.unlink()
            os.close(held.fd)

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    fst = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)


def _command() -> str:
    argv = list(sys.argv) or ["python"]
    head = Path(argv[0])
    argv[0] = head.parent.name if head.name == "__main__.py" else head.name
    text = " ".join(argv)
    return text if len(text) <= 200 else text[:197] + "..."


def _describe(fd: int) -> str:
    try:
        raw = os.pread(fd, 4096, 0)
        info = json.loads(raw.decode("utf-8"))
        return (
            f"pid {int(info['pid'])} on {info['host']} ({info['command']}), since {info['since']}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not recorded itself yet"


def _try(path: Path, target: Path) -> int | str:
    """One attempt: the locked fd, or the holder's description."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise LockFileError(
            f"{path}: cannot open or create the writer lock for {target} ({exc.strerror}); "
            "a writer needs the folder holding it writable (and the lock file, if one is "
            "left there, its own)"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _describe(fd)
        os.close(fd)
        return holder
    except BaseException:
        os.close(fd)
        raise
    if not _same_file(fd, path):  # its holder removed it as we opened it: try again
        os.close(fd)
        return ""
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": _command(),
        "since": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
    return fd


def acquire(target: str | os.PathLike[str], *, wait: Wait = False) -> WriterLock:
    """Take the writer lock of ``target`` (a store, dataset or checkpoint path).

    ``wait``: ``False`` raises :class:`StoreLockedError` at once when another process
    holds it, ``True`` waits as long as it takes, a number waits that many seconds.
    """
    timeout = wait_seconds(wait)
    tgt = Path(target)
    path = lock_path(tgt)
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.01
    while True:
        with _guard:
            held = _held.get(str(path))
            if held is not None:
                held.count += 1
                return WriterLock(tgt, path)
            got = _try(path, tgt)
            if isinstance(got, int):
                _held[str(path)] = _Held(got, 1)
                return WriterLock(tgt, path)
        if got and deadline is not None and time.monotonic() >= deadline:
            waited = "" if timeout == 0 else f" after waiting {timeout:g} s"
            raise StoreLockedError(
                f"{tgt}: another writer holds it{waited}: {got}; readers are not blocked, "
                "writers run one at a time: retry when it ends, or wait for it "
                "(wait=True)"
            )
        if got:
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


@contextlib.contextmanager
def writer_lock(target: str | os.PathLike[str], *, wait: Wait = False) -> Iterator[WriterLock]:
    """``with writer_lock(store): ...``: :func:`acquire` for the block."""
    lock = acquire(target, wait=wait)
    try:
        yield lock
    finally:
        lock.release()
