"""Opening index files: memory maps, size and header checks with helpful messages."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from rmqarrow.errors import CorruptIndexError, GeometryError, OutputExistsError, StoreNotFoundError
from rmqarrow.tiered.layout.binary import BEGIN_MAGIC, END_MAGIC, HEADER_STRUCT, unsealed_size

__all__ = [
    "Header",
    "check_unsealed_header",
    "check_unsealed_size",
    "create_zeroed",
    "map_existing",
    "read_header",
]

Header = tuple[int, int, int, int, int]
"""``(magic, begin_timestamp, end_timestamp, hash_slot_count, item_count)``."""


def create_zeroed(path: Path, size: int) -> mmap.mmap:
    """Create ``path`` as ``size`` zero bytes and map it read-write; never replace a file."""
    if not path.parent.is_dir():
        raise StoreNotFoundError(f"{path.parent}: no such directory to create {path.name} in")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise OutputExistsError(f"{path} exists; rmqarrow never overwrites an index file") from None
    try:
        os.ftruncate(fd, size)
        return mmap.mmap(fd, size, access=mmap.ACCESS_WRITE)
    finally:
        os.close(fd)


def map_existing(path: Path, writable: bool) -> mmap.mmap | None:
    """Map an existing file (``None`` for an empty file, which cannot be mapped)."""
    if not path.is_file():
        raise StoreNotFoundError(f"{path}: no such index file")
    with open(path, "r+b" if writable else "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
        return mmap.mmap(f.fileno(), 0, access=access)


def check_unsealed_size(path: Path, size: int, hash_slot_num: int, index_num: int) -> None:
    """A local file is exactly ``28 + 8*S + 32*N`` bytes."""
    want = unsealed_size(hash_slot_num, index_num)
    if size != want:
        raise GeometryError(
            f"{path}: {size} bytes, but a tiered index file with hash_slot_num={hash_slot_num} "
            f"and index_num={index_num} has {want} (28 + 8*S + 32*N); open it with the "
            "broker's tieredStoreIndexFileMaxHashSlotNum/MaxIndexNum, or the file is truncated"
        )


def check_unsealed_header(path: Path, header: Header, index_num: int) -> None:
    """The header of a local file holds values RocketMQ could have written."""
    magic, _begin, _end, slot_count, item_count = header
    problems = []
    if magic not in (BEGIN_MAGIC, END_MAGIC):
        problems.append(
            f"magic {magic:#x} is neither BEGIN {BEGIN_MAGIC & 0xFFFFFFFF:#x} "
            f"nor END {END_MAGIC & 0xFFFFFFFF:#x}"
        )
    if not 0 <= item_count < index_num:
        problems.append(f"itemCount {item_count} outside 0 .. {index_num - 1} (N - 1)")
    elif (magic == END_MAGIC) != (item_count == index_num - 1) and magic in (
        BEGIN_MAGIC,
        END_MAGIC,
    ):
        problems.append(
            f"magic {'END' if magic == END_MAGIC else 'BEGIN'} does not match "
            f"itemCount {item_count} (END exactly when itemCount == N - 1)"
        )
    if not 0 <= slot_count <= max(item_count, 0):
        problems.append(f"hashSlotCount {slot_count} outside 0 .. itemCount {item_count}")
    if problems:
        raise CorruptIndexError(
            f"{path}: not a tiered index file header: "
            + "; ".join(problems)
            + ". The file is damaged or not a RocketMQ tiered index file"
        )


def read_header(buf: mmap.mmap | bytes) -> Header:
    """The five header fields."""
    values: Header = HEADER_STRUCT.unpack_from(buf, 0)
    return values
