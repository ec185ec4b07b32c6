"""RocketMQ's ``StoreCheckpoint`` file (``store/checkpoint``): where recovery starts.

A 4 KiB file (one OS page, which the broker maps); big-endian int64 fields at the start,
the rest zero::

    0   physicMsgTimestamp   store time of the last flushed CommitLog message
    8   logicsMsgTimestamp   store time of the last flushed ConsumeQueue entry
    16  indexMsgTimestamp    end timestamp of the last *full* index file flushed
    24  masterFlushedOffset  (RocketMQ 5; kept as found)
    32  confirmPhyOffset     (RocketMQ 5; kept as found)

A file of any other size, or whose fields are not timestamps and offsets, is refused
(:class:`~rmqarrow.errors.CheckpointError`) before a byte is written: a text file or a
CommitLog given by mistake stays untouched.  An existing checkpoint is written in place
(only the fields that change, then ``fsync``), never replaced by a new file: a running
broker maps it and would go on writing the old, unlinked one.  A missing checkpoint is
created whole (written aside, then linked into place).  Writes take the checkpoint's
writer lock (:mod:`rmqarrow._lock`), and refuse the checkpoint of a store a RocketMQ
broker is running on (:mod:`rmqarrow._broker`; ``force`` only for a copy whose
``abort`` is left without a ``lock`` file).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from rmqarrow._broker import check_store_writable
from rmqarrow._lock import Wait, writer_lock
from rmqarrow._staging import fsync_dir, remove_path, sibling, stale_siblings
from rmqarrow.errors import CheckpointError

__all__ = ["CHECKPOINT_SIZE", "StoreCheckpoint", "check_checkpoint"]

CHECKPOINT_SIZE = 4096
_DTYPE = np.dtype(
    [
        ("physic_msg_timestamp", ">i8"),
        ("logics_msg_timestamp", ">i8"),
        ("index_msg_timestamp", ">i8"),
        ("master_flushed_offset", ">i8"),
        ("confirm_phy_offset", ">i8"),
    ]
)
_FIELDS: Mapping[str, tuple[Any, ...]] = _DTYPE.fields or {}
_OFFSETS: dict[str, int] = {name: int(_FIELDS[name][1]) for name in _DTYPE.names or ()}
_JAVA_NAMES = {
    "physic_msg_timestamp": "physicMsgTimestamp",
    "logics_msg_timestamp": "logicsMsgTimestamp",
    "index_msg_timestamp": "indexMsgTimestamp",
    "master_flushed_offset": "masterFlushedOffset",
    "confirm_phy_offset": "confirmPhyOffset",
}
#: epoch milliseconds of 2100-01-01: a store time past it is not a store time
_MAX_TIMESTAMP = 4_102_444_800_000
#: far beyond any CommitLog (2^56 bytes), far below what eight text bytes make
_MAX_OFFSET = 1 << 56


def _decode(head: bytes) -> tuple[int, ...]:
    return tuple(int(v) for v in np.frombuffer(head, dtype=_DTYPE, count=1)[0].item())


def check_checkpoint(path: Path, size: int, head: bytes) -> tuple[int, ...]:
    """The fields of a checkpoint file of ``size`` bytes starting with ``head``; raises
    :class:`CheckpointError` naming what makes it something else."""
    if size != CHECKPOINT_SIZE:
        raise CheckpointError(
            f"{path}: not a RocketMQ checkpoint: expected a {CHECKPOINT_SIZE}-byte file "
            f"(the broker's store/checkpoint), found {size} bytes; nothing was written"
        )
    values = _decode(head[: _DTYPE.itemsize])
    for name, value in zip(_DTYPE.names or (), values, strict=True):
        low, high = (0, _MAX_TIMESTAMP) if name.endswith("timestamp") else (-1, _MAX_OFFSET)
        if not low <= value <= high:
            what = "an epoch-millisecond time" if name.endswith("timestamp") else "an offset"
            raise CheckpointError(
                f"{path}: not a RocketMQ checkpoint: {_JAVA_NAMES[name]} (bytes "
                f"{_OFFSETS[name]}-{_OFFSETS[name] + 7}) is {value}, expected "
                f"{what} in {low}..{high}; give the broker's store/checkpoint; nothing "
                "was written"
            )
    return values


@dataclass
class StoreCheckpoint:
    """The checkpoint's fields; :meth:`read` / :meth:`write` move them to and from disk."""

    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> StoreCheckpoint:
        """Read a checkpoint; a missing file reads as all zero, as RocketMQ starts one."""
        p = Path(path)
        try:
            with open(p, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                head = fh.read(_DTYPE.itemsize)
        except FileNotFoundError:
            return cls()
        except IsADirectoryError:
            raise CheckpointError(f"{p}: a directory, not a RocketMQ checkpoint file") from None
        return cls(*check_checkpoint(p, size, head))

    @classmethod
    def check(cls, path: str | os.PathLike[str]) -> None:
        """Refuse, before anything is written, a ``path`` that exists and is no checkpoint."""
        cls.read(path)

    def write(
        self, path: str | os.PathLike[str], *, wait: Wait = False, force: bool = False
    ) -> None:
        """Write every field, keeping every other byte of an existing file."""
        values = dict(zip(_DTYPE.names or (), astuple(self), strict=True))
        _store(Path(path), values, wait, force)

    @classmethod
    def update(
        cls,
        path: str | os.PathLike[str],
        *,
        wait: Wait = False,
        force: bool = False,
        **values: int,
    ) -> StoreCheckpoint:
        """Write only the named fields (``index_msg_timestamp=...``) in place; the
        checkpoint as it is now on disk is returned."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise TypeError(f"unknown checkpoint fields {unknown}; known: {sorted(known)}")
        _store(Path(path), values, wait, force)
        return cls.read(path)

    @property
    def min_timestamp(self) -> int:
        """``getMinTimestamp``: where an abnormal recovery of the CommitLog starts (less 3 s)."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)


def _encode(value: int) -> bytes:
    return int(value).to_bytes(8, "big", signed=True)


def _store(p: Path, values: dict[str, int], wait: Wait, force: bool) -> None:
    broker = check_store_writable(p, force=force)
    # the store's broker (this process) is its one writer already
    with contextlib.nullcontext() if broker else writer_lock(p, wait=wait):
        for old in stale_siblings(p, "tmp"):
            remove_path(old)
        try:
            fd = os.open(p, os.O_RDWR)
        except FileNotFoundError:
            _create(p, values)
            return
        except IsADirectoryError:
            raise CheckpointError(f"{p}: a directory, not a RocketMQ checkpoint file") from None
        try:
            check_checkpoint(p, os.fstat(fd).st_size, os.pread(fd, _DTYPE.itemsize, 0))
            for name, value in values.items():
                os.pwrite(fd, _encode(value), _OFFSETS[name])
            os.fsync(fd)
        finally:
            os.close(fd)


def _create(p: Path, values: dict[str, int]) -> None:
    data = bytearray(CHECKPOINT_SIZE)
    for name, value in values.items():
        offset = _OFFSETS[name]
        data[offset : offset + 8] = _encode(value)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling(p, "tmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, p)  # never over a file that appeared meanwhile
        fsync_dir(p.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
