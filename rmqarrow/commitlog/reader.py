"""Reading a CommitLog directory: records in commit-log order, damage reported or raised.

:class:`CommitLogReader` maps one file at a time read-only and walks it with the single
frame check of :mod:`._walk`.  Strict (the default): the first damaged record raises
:class:`CommitLogError` naming the file and the physical offset, after every good record
before it was yielded.  ``lenient=True``: the damage is appended to
:attr:`CommitLogReader.problems` (and warned about) and the reader goes on with the next
file.  Files must follow each other without gaps (each starts where the previous one ends);
a gap is damage of the same kind.

The newest file's write end is no damage: a newest file being born (0 bytes), or a last
record not (yet) written whole with nothing written after it (a broker appending, or a
crash in the middle of a record; :func:`._walk.write_end`), or a well-framed last record
whose bytes are not all copied yet (:func:`complete_end`), ends the log there, with a
note logged (a later read gets the record once it is whole); strict and lenient
readers, ``check`` included, read the log alike.
Damage anywhere else (an older file, or bytes written after the bad record) stays
damage.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rmqarrow.commitlog._files import (
    CommitLogFile,
    list_commitlog_files,
    map_file,
    mapped_size_of,
)
from rmqarrow.commitlog._walk import (
    END,
    Buf,
    Damage,
    check_record,
    first_store_timestamp,
    record_positions,
    walk_file,
    write_end,
)
from rmqarrow.commitlog.record import Record, parse_record
from rmqarrow.errors import CommitLogError, RmqArrowError

__all__ = ["CommitLogProblem", "CommitLogReader", "CommitLogWarning", "iter_records"]

_log = logging.getLogger(__name__)


class CommitLogWarning(UserWarning):
    """Damage skipped by a lenient reader."""


@dataclass(frozen=True)
class CommitLogProblem:
    """A damaged spot a lenient reader skipped: the rest of ``path`` after it was not read.

    ``unread`` is the physical range ``[start, end)`` that was therefore not read: from the
    damage to the end of its file, or the gap between two files.
    """

    path: Path
    physical_offset: int
    reason: str
    unread: tuple[int, int] = (0, 0)

    def __str__(self) -> str:
        return f"{self.path}: physical offset {self.physical_offset}: {self.reason}"


class CommitLogReader:
    """The files of one CommitLog directory and their records.

    ``mapped_file_size`` defaults to the largest file's size (every file of a store has
    the same preallocated size).
    """

    def __init__(
        self,
        commitlog_dir: str | os.PathLike[str],
        *,
        mapped_file_size: int | None = None,
        lenient: bool = False,
    ) -> None:
        self.commitlog_dir = Path(commitlog_dir)
        self.files: list[CommitLogFile] = list_commitlog_files(self.commitlog_dir)
        self.mapped_file_size = mapped_size_of(self.files, mapped_file_size)
        self.lenient = lenient
        self.problems: list[CommitLogProblem] = []

    # -- damage handling -------------------------------------------------------------
    def _ended(self, file: CommitLogFile, buf: Buf, is_last: bool, damage: Damage) -> bool:
        """True (and a note logged) when ``damage`` is the newest file's write end."""
        if not is_last or not write_end(buf, file.size, self.mapped_file_size, damage.position):
            return False
        at = file.start_offset + damage.position
        # a file that ends right after a whole record is a writer appending (no preallocation)
        clean = 0 < file.size <= damage.position
        _log.log(
            logging.DEBUG if clean else logging.INFO,
            "%s: the log ends at physical offset %d: %s (not yet written: a broker "
            "writing it, or a crash before it finished); read up to there",
            file.path,
            at,
            "the newest file is empty" if file.size == 0 else damage.reason,
        )
        return True

    def _whole(self, file: CommitLogFile, buf: Buf, pos: int) -> bool:
        """Whether the newest file's last well-framed record (at ``pos``) is whole; if not
        (a broker still copying it), the log ends before it, with a note logged, and a later
        read gets it."""
        if complete_end(buf, file, self.mapped_file_size, pos, True) != pos:
            return True
        _log.info(
            "%s: the log ends at physical offset %d: its last record is not yet written "
            "whole (a broker copying it, or a crash before it finished); read up to there",
            file.path,
            file.start_offset + pos,
        )
        return False

    def _damage(
        self, file: CommitLogFile, position: int, reason: str, unread: tuple[int, int] | None = None
    ) -> None:
        at = file.start_offset + position
        problem = CommitLogProblem(
            file.path, at, reason, unread or (at, file.start_offset + self.mapped_file_size)
        )
        if not self.lenient:
            raise CommitLogError(str(problem))
        self.problems.append(problem)
        warnings.warn(str(problem), CommitLogWarning, stacklevel=4)

    @property
    def min_offset(self) -> int:
        """Physical offset of the first byte of the oldest file (0 for an empty log)."""
        return self.files[0].start_offset if self.files else 0

    @property
    def max_offset(self) -> int:
        """Physical offset just after the last file (not the last record)."""
        return self.files[-1].start_offset + self.mapped_file_size if self.files else 0

    def file_for(self, physical_offset: int) -> CommitLogFile | None:
        """The file whose range holds ``physical_offset``, or ``None``."""
        for f in self.files:
            if f.start_offset <= physical_offset < f.start_offset + self.mapped_file_size:
                return f
        return None

    # -- walking ----------------------------------------------------------------------
    def _files_from(
        self, start_offset: int, end_offset: int | None = None
    ) -> Iterator[tuple[CommitLogFile, int, bool]]:
        """Files to walk from ``start_offset`` (those starting before ``end_offset``, if
        given): (file, start position, is last of the whole log); gaps are damage."""
        mapped = self.mapped_file_size
        # The newest files a broker has created but not written yet (0 bytes, or mapped
        # with nothing at position 0: its allocator makes the next file ahead of time)
        # leave the file before them the one being written.
        last = len(self.files) - 1
        while last > 0 and _unborn(self.files[last]):
            last -= 1
        prev: CommitLogFile | None = None
        for i, file in enumerate(self.files):
            if end_offset is not None and file.start_offset >= end_offset:
                return
            if file.start_offset + mapped <= start_offset:
                prev = file
                continue
            if prev is not None and file.start_offset != prev.start_offset + mapped:
                self._damage(
                    file,
                    0,
                    f"file starts at {file.start_offset}, expected {prev.start_offset + mapped} "
                    f"(previous file {prev.path.name} + mapped file size {mapped})",
                    (prev.start_offset + mapped, file.start_offset),
                )
            prev = file
            yield file, max(0, start_offset - file.start_offset), i >= last

    def positions(
        self, start_offset: int = 0, end_offset: int | None = None
    ) -> Iterator[tuple[CommitLogFile, Buf, np.ndarray[Any, np.dtype[np.int64]]]]:
        """For each file from ``start_offset``: the file, its mapped bytes, record positions.

        ``end_offset`` stops before the first file starting at or after it (a task that
        decodes one file of a log walks only that file, yet judges it as part of the log).
        The buffer is valid only until the next item is taken; drop every view of it first.
        Damage is raised (or reported) after the good positions before it were yielded.
        """
        for file, start_pos, is_last in self._files_from(start_offset, end_offset):
            with map_file(file.path, file.size) as buf:
                found, damage = record_positions(
                    buf, file.size, self.mapped_file_size, file.start_offset, start_pos, is_last
                )
                if is_last and damage is None and len(found):
                    found = found[: len(found) - (not self._whole(file, buf, int(found[-1])))]
                yield file, buf, found
                if damage is not None and self._ended(file, buf, is_last, damage):
                    damage = None
            if damage is not None:
                self._damage(file, damage.position, damage.reason)

    def records(self, start_offset: int = 0) -> Iterator[Record]:
        """Every message record from ``start_offset`` on (a record's physical offset)."""
        for file, start_pos, is_last in self._files_from(start_offset):
            with map_file(file.path, file.size) as buf:
                walk = walk_file(
                    buf, file.size, self.mapped_file_size, file.start_offset, start_pos, is_last
                )
                # a record is yielded once the next one is seen (or the file's end), so
                # the newest file's last record is judged whole first (:func:`complete_end`)
                pending: int | None = None
                try:
                    with closing(walk):
                        for pos in walk:
                            if pending is not None:
                                yield parse_record(buf, pending, file.path, file.start_offset)
                            pending = pos
                except Damage as d:
                    damage: Damage | None = None if self._ended(file, buf, is_last, d) else d
                    newest = False  # a record follows the pending one: it is whole
                else:
                    damage = None
                    newest = is_last
                if pending is not None and (not newest or self._whole(file, buf, pending)):
                    yield parse_record(buf, pending, file.path, file.start_offset)
            if damage is not None:
                self._damage(file, damage.position, damage.reason)

    def recover_start_offset(self, timestamp: int) -> int:
        """Where the broker's abnormal recovery replays from, for a checkpoint timestamp.

        ``CommitLog.recoverAbnormally`` walks the files newest first and starts at the first
        file whose first record is a message (V1/V2 magic) with a non-zero store timestamp
        ``<= timestamp`` (``isMappedFileMatchedRecover``; the timestamp is the checkpoint's
        ``minTimestampIndex`` when the index is "safe", else ``minTimestamp``); with no such
        file it starts at the oldest.  Re-indexing from there and letting the index service's
        offset guard skip what it already holds resumes exactly as the broker does.
        """
        for file in reversed(self.files):
            with map_file(file.path, file.size) as buf:
                first = first_store_timestamp(buf, file.size)
            if first is not None and first != 0 and first <= timestamp:
                return file.start_offset
        return self.min_offset

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def read_record(self, physical_offset: int) -> Record:
        """The message record at ``physical_offset`` (always strict: damage raises)."""
        file = self.file_for(physical_offset)
        if file is None:
            raise CommitLogError(
                f"{self.commitlog_dir}: physical offset {physical_offset} is outside the log "
                f"[{self.min_offset}, {self.max_offset})"
            )
        pos = physical_offset - file.start_offset
        with map_file(file.path, file.size) as buf:
            try:
                total = check_record(buf, pos, file.size, self.mapped_file_size, file.start_offset)
            except Damage as d:
                raise CommitLogError(
                    f"{file.path}: physical offset {physical_offset}: {d.reason}"
                ) from None
            if total <= 0:
                raise CommitLogError(
                    f"{file.path}: physical offset {physical_offset}: no message record there "
                    "(end of the file's data)"
                )
            return parse_record(buf, pos, file.path, file.start_offset)


def complete_end(buf: Buf, file: CommitLogFile, mapped: int, pos: int, newest: bool) -> int:
    """Position after the record at ``pos`` (which the walk found well framed), or ``pos``
    when it is the newest file's last record and its bytes are not all there yet.

    A broker copies a record into its preallocated file front to back, so a record cut
    short keeps its frame (the lengths come first) and ends in zeros where its last bytes
    will go.  RocketMQ ends every property with the separator 0x02, and a record without
    properties ends with its topic (never a NUL; an empty one is whole): a last byte of
    zero there means the copy is still going on.  A record that another one follows is always whole.
    """
    end = pos + check_record(buf, pos, file.size, mapped, file.start_offset)
    if not newest:
        return end
    try:
        if check_record(buf, end, file.size, mapped, file.start_offset) == END:
            return end  # the file is closed
    except Damage:
        pass  # what follows is being written: judge the record itself
    try:
        rec = parse_record(buf, pos, file.path, file.start_offset)
    except (RmqArrowError, ValueError):
        return pos
    # a frame that adds up with an empty topic and no properties has nothing left to
    # copy (a topic length not yet written would not add up)
    last_props = rec.properties_raw[-1:]
    whole = last_props != b"\x00" if last_props else not rec.topic.endswith("\x00")
    return end if whole else pos


def _unborn(file: CommitLogFile) -> bool:
    """True when nothing is written in ``file`` yet: empty, or 0 where its first record's
    TOTALSIZE goes (its walk still checks that the rest is zero)."""
    if file.size < 4:
        return True
    try:
        with open(file.path, "rb") as fh:
            return fh.read(4) == bytes(4)
    except FileNotFoundError:
        return True  # deleted since it was listed: nothing to read in it


def iter_records(
    commitlog_dir: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    lenient: bool = False,
    mapped_file_size: int | None = None,
) -> Iterator[Record]:
    """Every message record of a CommitLog directory in commit-log order.

    Strict by default; with ``lenient=True`` damage is warned about (``CommitLogWarning``)
    and the rest of the damaged file skipped.  Use :class:`CommitLogReader` to get the
    list of problems.
    """
    reader = CommitLogReader(commitlog_dir, mapped_file_size=mapped_file_size, lenient=lenient)
    return reader.records(start_offset)
