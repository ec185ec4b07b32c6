"""Finding a store's CommitLog files and its mapped file size.

Files are named by their 20-digit start offset (``UtilAll.offset2FileName``) and all have
the store's mapped file size (``mappedFileSizeCommitLog``, 1 GiB by default), because the
broker preallocates each one.  Other names in the directory are ignored, as the broker's
own tools would never create them.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmqarrow.commitlog._layout import FILE_NAME_DIGITS
from rmqarrow.errors import CommitLogError, InvalidValueError, StoreNotFoundError

__all__ = [
    "CommitLogFile",
    "file_name",
    "list_commitlog_files",
    "map_file",
    "mapped_size_of",
]


@dataclass(frozen=True)
class CommitLogFile:
    """One file of the log: its path, the physical offset of its first byte, its size."""

    path: Path
    start_offset: int
    size: int


def file_name(start_offset: int) -> str:
    """``UtilAll.offset2FileName``: the offset, zero-padded to 20 digits."""
    if start_offset < 0:
        raise InvalidValueError(f"start offset must be >= 0, got {start_offset}")
    return f"{start_offset:0{FILE_NAME_DIGITS}d}"


def list_commitlog_files(commitlog_dir: str | os.PathLike[str]) -> list[CommitLogFile]:
    """The files of a CommitLog directory, in offset order."""
    root = Path(commitlog_dir)
    if not root.is_dir():
        raise StoreNotFoundError(f"CommitLog directory {root} does not exist")
    files = []
    for entry in root.iterdir():
        name = entry.name
        if len(name) == FILE_NAME_DIGITS and name.isdigit() and name.isascii() and entry.is_file():
            files.append(CommitLogFile(entry, int(name), entry.stat().st_size))
    files.sort(key=lambda f: f.start_offset)
    return files


def mapped_size_of(files: list[CommitLogFile], mapped_file_size: int | None = None) -> int:
    """The store's mapped file size: given, or the largest file size (all files share it).

    A file shorter than that is reported as truncated when it is read.
    """
    if mapped_file_size is not None:
        if mapped_file_size < 8:
            raise CommitLogError(
                f"mapped file size must be at least 8 bytes, got {mapped_file_size}"
            )
        return mapped_file_size
    if not files:
        return 0
    return max(f.size for f in files)


@contextmanager
def map_file(path: Path, size: int) -> Iterator[Any]:
    """A CommitLog file read-only as a buffer (an empty bytes for an empty file)."""
    if size == 0:
        yield b""
        return
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield m
    finally:
        # Views of the map may still be alive (a decoder's arrays held by an exception's
        # frames): closing would raise BufferError over the real error; the map is then
        # unmapped when the last view goes.
        with suppress(BufferError):
            m.close()
