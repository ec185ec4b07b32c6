"""The readable end of a CommitLog a broker is writing, for readers that follow it.

A broker appends records to its newest file front to back, so a reader that follows the
log (a streaming query, an incremental export) must stop before a record still being
copied: :func:`complete_end_offset` finds the physical offset just past the last complete
record, and :func:`bounded_reader` reads the records before an offset, ignoring what lies
past it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from rmqarrow.commitlog._files import CommitLogFile, map_file
from rmqarrow.commitlog._walk import Buf, record_positions, write_end
from rmqarrow.commitlog.reader import CommitLogReader, complete_end
from rmqarrow.errors import CommitLogError, StoreWentBackwardsError

__all__ = ["bounded_reader", "complete_end_offset"]

_log = logging.getLogger(__name__)


def complete_end_offset(
    commitlog_dir: str | os.PathLike[str],
    start_offset: int,
    *,
    mapped_file_size: int | None = None,
) -> int:
    """The physical offset just past the last complete record at or after ``start_offset``.

    Records are walked frame by frame (no field is decoded).  In the newest file a record
    that is not complete yet ends the walk (a writer is in the middle of it: the write
    end of :func:`rmqarrow.commitlog._walk.write_end`); other damage raises
    :class:`~rmqarrow.errors.CommitLogError`.  An offset past the log's end means the log
    went backwards: :class:`~rmqarrow.errors.StoreWentBackwardsError`.
    """
    log = CommitLogReader(commitlog_dir, mapped_file_size=mapped_file_size)
    mapped = log.mapped_file_size
    if log.files and start_offset < log.min_offset:
        _log.warning(
            "%s: the log now starts at %d, after offset %d the stream had reached "
            "(expired files): the messages between are skipped",
            commitlog_dir,
            log.min_offset,
            start_offset,
        )
        start_offset = log.min_offset
    end = start_offset
    for file, start_pos, is_last in log._files_from(start_offset):
        with map_file(file.path, file.size) as buf:
            found, damage = record_positions(
                buf, file.size, mapped, file.start_offset, start_pos, is_last
            )
            if len(found):
                last = int(found[-1])
                newest = is_last and damage is None
                end = file.start_offset + complete_end(buf, file, mapped, last, newest)
            else:
                end = max(end, file.start_offset + start_pos)
            del found
            torn = damage is not None and (
                is_last and write_end(buf, file.size, mapped, damage.position)
            )
        if damage is not None:
            if not torn:
                raise CommitLogError(
                    f"{file.path}: physical offset {file.start_offset + damage.position}: "
                    f"{damage.reason}"
                )
            # the newest file: a record still being written; read up to it, later the rest
            end = file.start_offset + damage.position
            break
    if log.files and start_offset > log.max_offset:
        raise StoreWentBackwardsError(
            f"{commitlog_dir}: the stream has read up to physical offset {start_offset}, past "
            f"the log's end {log.max_offset} (files deleted or replaced); start the query on "
            "a new checkpoint"
        )
    return end


def bounded_reader(
    commitlog_dir: str | os.PathLike[str], stop: int, *, mapped_file_size: int | None = None
) -> CommitLogReader:
    """A CommitLog reader that yields only records before ``stop`` and ignores what lies
    at or past it (the newest file's tail, still being written)."""

    class _Reader(CommitLogReader):
        def _damage(
            self,
            file: CommitLogFile,
            position: int,
            reason: str,
            unread: tuple[int, int] | None = None,
        ) -> None:
            if file.start_offset + position >= stop:
                return
            super()._damage(file, position, reason, unread)

        def positions(
            self, start_offset: int = 0, end_offset: int | None = None
        ) -> Iterator[tuple[CommitLogFile, Buf, np.ndarray[Any, np.dtype[np.int64]]]]:
            for file, buf, found in super().positions(start_offset, end_offset):
                yield file, buf, found[found < stop - file.start_offset]

    return _Reader(commitlog_dir, mapped_file_size=mapped_file_size)
