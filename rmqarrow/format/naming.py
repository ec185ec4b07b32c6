"""Index file names and the order of files in a store directory.

RocketMQ names a new index file after its creation time, ``yyyyMMddHHmmssSSS``
(``UtilAll.timeMillisToHumanString``, the JVM's local zone), and on ``load()`` takes every
file in the directory, sorted by name (``Arrays.sort(File[])``: Java string order, i.e.
UTF-16 code units).  rmqarrow does the same, skipping only hidden files (names starting
with ``.``, such as its own temporary files), and never overwrites a file: a name that is
taken moves on to the next free millisecond.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from rmqarrow.errors import InvalidValueError, StoreNotFoundError

__all__ = ["file_name_for", "free_file_name", "java_name_order", "list_index_files"]


def file_name_for(millis: int, tz: _dt.tzinfo | None = None) -> str:
    """``yyyyMMddHHmmssSSS`` of epoch milliseconds, in ``tz`` (local zone when None)."""
    moment = _dt.datetime.fromtimestamp(millis / 1000, tz=tz or _local_zone())
    return f"{moment:%Y%m%d%H%M%S}{millis % 1000:03d}"


def _local_zone() -> _dt.tzinfo:
    zone = _dt.datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone


def free_file_name(store_dir: Path, millis: int, tz: _dt.tzinfo | None = None) -> tuple[str, int]:
    """The first name at or after ``millis`` not taken in ``store_dir``, and its millis."""
    while True:
        name = file_name_for(millis, tz)
        if not (store_dir / name).exists():
            return name, millis
        millis += 1


def java_name_order(name: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` (UTF-16 code unit order)."""
    return name.encode("utf-16-be", "surrogatepass")


def list_index_files(store_dir: str | os.PathLike[str]) -> list[Path]:
    """The index files of a store directory, oldest first, as RocketMQ orders them."""
    directory = Path(store_dir)
    if not directory.is_dir():
        raise StoreNotFoundError(f"{directory}: no such store directory")
    files = [p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")]
    for p in files:
        if _undecodable(p.name):
            raw = p.name.encode("utf-8", "surrogateescape")
            raise InvalidValueError(
                f"{directory}: holds a file whose name is not UTF-8 text ({raw!r}); index "
                "files are named yyyyMMddHHmmssSSS: move it out of the store"
            )
    return sorted(files, key=lambda p: java_name_order(p.name))


def _undecodable(name: str) -> bool:
    """True for a name the file system gave as bytes that are not UTF-8 (surrogateescape)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
