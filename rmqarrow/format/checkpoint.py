"""RocketMQ's ``StoreCheckpoint`` file (``store/checkpoint``): where recovery starts.

A 4 KiB file (one OS page); big-endian int64 fields at the start, the rest zero::

    0   physicMsgTimestamp   store time of the last flushed CommitLog message
    8   logicsMsgTimestamp   store time of the last flushed ConsumeQueue entry
    16  indexMsgTimestamp    end timestamp of the last *full* index file flushed
    24  masterFlushedOffset  (RocketMQ 5; kept as found)
    32  confirmPhyOffset     (RocketMQ 5; kept as found)

Writes rewrite only these 40 bytes, so a checkpoint written by a broker keeps every
other byte.
"""

from __future__ import annotations

import os
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np

from rmqarrow.errors import CorruptIndexError

__all__ = ["CHECKPOINT_SIZE", "StoreCheckpoint"]

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
        if not p.exists():
            return cls()
        data = p.read_bytes()
        if len(data) < _DTYPE.itemsize:
            raise CorruptIndexError(
                f"{p}: checkpoint truncated: expected {CHECKPOINT_SIZE} bytes, found {len(data)}"
            )
        return cls(*np.frombuffer(data, dtype=_DTYPE, count=1)[0].item())

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the fields, keeping every other byte of an existing file."""
        p = Path(path)
        data = bytearray(p.read_bytes()) if p.exists() else bytearray(CHECKPOINT_SIZE)
        if len(data) < CHECKPOINT_SIZE:
            data.extend(bytes(CHECKPOINT_SIZE - len(data)))
        data[: _DTYPE.itemsize] = np.array([astuple(self)], dtype=_DTYPE).tobytes()
        tmp = p.with_name(f".{p.name}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)

    @property
    def min_timestamp(self) -> int:
        """``getMinTimestamp``: where an abnormal recovery of the CommitLog starts (less 3 s)."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)
