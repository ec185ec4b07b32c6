"""Is a RocketMQ broker running on the store a path belongs to?  Asked before every write.

A running broker holds a lock on ``STORE/lock`` (Java's ``FileChannel.tryLock(0, 1,
false)``: a POSIX record lock on byte 0, taken with ``fcntl``, not ``flock``) and keeps an
empty ``STORE/abort`` from its start until a clean shutdown removes it.  A crash (kill -9,
power loss) leaves ``abort``; the kernel frees the lock when the process dies, and the
lock file itself is never removed.  Writing index files, a checkpoint or anything else
into the store of a running broker races its own writes: keys are lost and files rolled
back under it.  So every writer asks :func:`check_store_writable` first.

**Which store.**  The path is the store root itself, or a path in it: its ``index/``
directory (existing or about to be built), a file there, its ``checkpoint``, its
``commitlog/``, ``rocksdbstore/`` or ``tiered_index_file/``.  The store root is the first
of the path, its parent, and (for a path inside one of those folders) its grandparent
that holds a regular file ``lock`` or ``abort``; a path in no such folder belongs to no
broker and is written freely.  A staging name next to an output (``.index.build-PID-...``)
counts as the output it stands for.

**The rules.**

- ``lock`` held by another process: a broker is running.  Refused
  (:class:`~rmqarrow.errors.BrokerRunningError`, naming the store, the lock and the
  holder's pid); ``force`` does not override a lock a live process holds: stop the
  broker, or copy the store (a copy's lock is held by nobody) and write the copy.
- ``abort`` present, ``lock`` present and free: the broker crashed and is not running.
  Writing is allowed (this is the operator's recovery); a note says so once.
- ``abort`` present and no ``lock`` file (or a lock that cannot be tested): whether a
  broker runs cannot be told (a partial copy, or storage where locks are not visible).
  Refused unless ``force=True`` (``--force``): the user vouches the store is a copy.
- neither, or ``lock`` free and no ``abort``: no broker.  Writing is allowed.

The lock is tested with ``fcntl(F_GETLK)`` on a read-only descriptor: nothing is ever
taken, created or written, a missing ``lock`` is never created, and the holder's pid is
read from the kernel.  POSIX locks belong to a process, and closing *any* descriptor of a
file drops the process's locks on it; so a process that holds a store's lock itself
(:func:`hold_broker_lock`, the broker-like writer of :mod:`rmqarrow.testing.broker_like`)
is never tested by opening the file again: the store is its own, and it writes freely,
without rmqarrow's writer locks (:mod:`rmqarrow._lock`), as a broker writes its store.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from rmqarrow._args import check_flag
from rmqarrow._paths import local_path
from rmqarrow._staging import staged_target
from rmqarrow._store_folders import STORE_FOLDERS
from rmqarrow.errors import BrokerRunningError

__all__ = [
    "ABORT_NAME",
    "LOCK_NAME",
    "BrokerState",
    "broker_state",
    "check_store_writable",
    "hold_broker_lock",
    "release_broker_lock",
    "store_root",
]

_log = logging.getLogger("rmqarrow.broker")

LOCK_NAME = "lock"
ABORT_NAME = "abort"

#: (st_dev, st_ino) of lock files this process holds the broker lock on, with their fds
_own: dict[tuple[int, int], int] = {}
_own_guard = threading.Lock()
#: store roots whose crashed broker was already noted by this process
_noted: set[str] = set()


def _forget_in_child() -> None:
    # POSIX record locks are not inherited by a forked child: it holds none of them.
    _own.clear()


os.register_at_fork(after_in_child=_forget_in_child)


@dataclass(frozen=True)
class BrokerState:
    """What the marker files of a store root say about its broker.

    ``holder`` is the pid of the process holding ``lock`` (0 when the kernel names none:
    a lock held over a network file system or through an open file description), None
    when nobody else holds it.  ``untestable`` says why the lock could not be tested.
    ``own`` is true when this very process holds the lock (:func:`hold_broker_lock`).
    """

    root: Path
    lock_exists: bool
    abort_exists: bool
    holder: int | None = None
    untestable: str | None = None
    own: bool = False

    @property
    def lock(self) -> Path:
        return self.root / LOCK_NAME

    @property
    def abort(self) -> Path:
        return self.root / ABORT_NAME

    @property
    def running(self) -> bool:
        """Another process holds the lock: a broker runs on this store."""
        return self.holder is not None

    @property
    def crashed(self) -> bool:
        """``abort`` left behind with the lock free: a broker died and is not running."""
        return (
            self.abort_exists
            and self.lock_exists
            and self.holder is None
            and self.untestable is None
            and not self.own
        )

    @property
    def unknown(self) -> bool:
        """``abort`` present but the lock missing or untestable: cannot tell."""
        return (
            not self.own
            and self.holder is None
            and self.abort_exists
            and (not self.lock_exists or self.untestable is not None)
        )


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def store_root(path: str | os.PathLike[str]) -> Path | None:
    """The broker store root ``path`` belongs to (see the module's rules), or None."""
    p = Path(os.path.realpath(os.path.abspath(local_path(path))))
    staged = staged_target(p)
    if staged is not None:
        p = staged
    candidates = [p, p.parent]
    if p.parent.name in STORE_FOLDERS:
        candidates.append(p.parent.parent)
    for c in candidates:
        if _regular(c / LOCK_NAME) or _regular(c / ABORT_NAME):
            return c
    return None


# struct flock, as the kernel lays it out: Linux (64-bit off_t) and the BSDs/macOS
if sys.platform.startswith("linux"):
    _FLOCK = struct.Struct("hhqqi4x")

    def _pack(kind: int) -> bytes:
        return _FLOCK.pack(kind, os.SEEK_SET, 0, 1, 0)

    def _unpack(raw: bytes) -> tuple[int, int]:
        kind, _, _, _, pid = _FLOCK.unpack(raw)
        return kind, pid

elif sys.platform == "darwin" or "bsd" in sys.platform:
    _FLOCK = struct.Struct("qqihh")

    def _pack(kind: int) -> bytes:
        return _FLOCK.pack(0, 1, 0, kind, os.SEEK_SET)

    def _unpack(raw: bytes) -> tuple[int, int]:
        _, _, pid, kind, _ = _FLOCK.unpack(raw)
        return kind, pid

else:  # pragma: no cover - no known struct flock: the lock cannot be tested
    _FLOCK = None


def _test_lock(lock: Path) -> tuple[int | None, str | None]:
    """(holder pid or None, why it could not be tested or None): ``F_GETLK`` for an
    exclusive lock on byte 0, as the broker takes it, on a read-only descriptor."""
    if _FLOCK is None:  # pragma: no cover
        return None, f"POSIX locks cannot be tested on {sys.platform}"
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        return None, f"cannot open it to test its lock ({exc.strerror})"
    try:
        raw = fcntl.fcntl(fd, fcntl.F_GETLK, _pack(fcntl.F_WRLCK))
    except OSError as exc:  # a file system without POSIX locks (ENOLCK) and the like
        return None, f"its lock cannot be tested here ({exc.strerror})"
    finally:
        os.close(fd)
    kind, pid = _unpack(raw)
    if kind == fcntl.F_UNLCK:
        return None, None
    return max(pid, 0), None


def _own_lock(lock: Path) -> bool:
    try:
        st = os.stat(lock)
    except OSError:
        return False
    with _own_guard:
        return (st.st_dev, st.st_ino) in _own


def broker_state(path: str | os.PathLike[str]) -> BrokerState | None:
    """The state of the broker of the store ``path`` belongs to; None when it belongs to
    none.  Never creates, takes or writes anything."""
    root = store_root(path)
    if root is None:
        return None
    lock, abort = root / LOCK_NAME, root / ABORT_NAME
    lock_exists, abort_exists = _regular(lock), _regular(abort)
    if lock_exists and _own_lock(lock):
        # testing it would mean opening and closing it, which drops our own lock
        return BrokerState(root, True, abort_exists, own=True)
    holder, untestable = _test_lock(lock) if lock_exists else (None, None)
    return BrokerState(root, lock_exists, abort_exists, holder, untestable)


def check_store_writable(path: str | os.PathLike[str], *, force: bool = False) -> bool:
    """Refuse to write ``path`` when it lies in the store of a running broker (or of one
    that cannot be told from a running one, unless ``force``); see the module's rules.

    Raises :class:`~rmqarrow.errors.BrokerRunningError` in one line naming the store, its
    lock and the holder.  Returns whether this process is the store's broker
    (:func:`hold_broker_lock`): its one writer, which needs no writer lock of rmqarrow's
    (:mod:`rmqarrow._lock`), as a broker takes none.
    """
    force = check_flag("force", force)  # "no" is not True
    state = broker_state(path)
    if state is None:
        return False
    if state.own:
        return True
    root = state.root
    if state.running:
        who = f"pid {state.holder}" if state.holder else "a process the kernel does not name"
        raise BrokerRunningError(
            f"{root}: a RocketMQ broker is running on this store ({who} holds the lock on "
            f"{state.lock}); rmqarrow never writes under a running broker: stop the broker, "
            "or copy the store and write the copy (force=True is only for a copy "
            "whose lock cannot be seen; it never overrides a held lock); readers (read-only "
            "opens) work beside it"
        )
    if state.unknown:
        why = (
            f"{state.lock} is missing"
            if not state.lock_exists
            else f"{state.lock}: {state.untestable}"
        )
        if not force:
            raise BrokerRunningError(
                f"{root}: cannot tell whether a RocketMQ broker is running on this store: "
                f"{state.abort} is present (a broker is running or crashed) and {why}; stop "
                "the broker, or if this is a copy you vouch for (nothing writes it), pass "
                "force=True"
            )
        _note(root, f"{root}: {state.abort} is present and {why}; writing anyway (forced)")
        return False
    if state.crashed:
        _note(
            root,
            f"{root}: its broker did not shut down cleanly ({state.abort} is left and "
            f"nobody holds {state.lock}): it is not running; writing as its recovery would",
        )
    return False


def _note(root: Path, text: str) -> None:
    key = str(root)
    if key in _noted:
        return
    _noted.add(key)
    _log.warning("%s", text)


def hold_broker_lock(root: str | os.PathLike[str]) -> int:
    """Take ``ROOT/lock`` as a RocketMQ broker does (created when missing, an exclusive
    POSIX lock on byte 0, ``lock`` written into it); the descriptor holding it.

    Raises :class:`~rmqarrow.errors.BrokerRunningError` when another process holds it.
    This process's own writers then treat the store as theirs
    (:func:`check_store_writable` lets them write and never opens the lock file again).
    """
    lock = Path(root) / LOCK_NAME
    with _own_guard:
        # POSIX locks never conflict inside one process, and closing any descriptor of
        # the file drops them: a second hold here must be refused before the file is
        # opened again, or it would succeed and its release would free the broker's lock
        try:
            st = os.stat(lock)
        except FileNotFoundError:
            pass
        else:
            if (st.st_dev, st.st_ino) in _own:
                raise BrokerRunningError(
                    f"{Path(root)}: this process (pid {os.getpid()}) already holds the lock "
                    f"on {lock}; one broker a store"
                )
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0, os.SEEK_SET)
        except OSError:
            os.close(fd)
            holder, _ = _test_lock(lock)
            who = f"pid {holder}" if holder else "a process the kernel does not name"
            raise BrokerRunningError(
                f"{Path(root)}: {who} already holds the lock on {lock}; one broker a store"
            ) from None
        os.pwrite(fd, b"lock", 0)
        os.fsync(fd)
        st = os.fstat(fd)
        _own[(st.st_dev, st.st_ino)] = fd
    return fd


def release_broker_lock(fd: int) -> None:
    """Let go of a lock taken with :func:`hold_broker_lock` (the file stays, as Java's)."""
    with _own_guard:
        for key, held in list(_own.items()):
            if held == fd:
                del _own[key]
    with contextlib.suppress(OSError):
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0, os.SEEK_SET)
    with contextlib.suppress(OSError):
        os.close(fd)
