"""Index file names and the order of files in a store directory.

RocketMQ names a new index file after its creation time, ``yyyyMMddHHmmssSSS``
(``UtilAll.timeMillisToHumanString``, the JVM's local zone).  Its ``IndexService.load``
lists every entry of the directory, sorts them by name (``Arrays.sort(File[])``: Java
string order, i.e. UTF-16 code units) and opens each as a ``MappedFile``, whose
constructor first parses the name with ``Long.parseLong``:

* a name that is not a Java ``long`` (``x.bak``, ``notes.txt``, ``.tmp``) throws
  ``NumberFormatException``, which ``load`` logs and skips;
* an entry with such a name that cannot be mapped read-write (a directory, a FIFO) throws
  ``IOException`` and the whole load fails (the broker does not start);
* a dangling symlink is followed and its target created, as a new empty index file.

rmqarrow loads exactly the regular files (symlinks to them included) whose name
``Long.parseLong`` accepts.  Every other entry is reported, never loaded: a warning on the
``rmqarrow.format.naming`` logger names each one (once per process), and
:func:`stray_entries` gives them to ``check`` and ``info``.  Hidden entries (a leading
``.``: rmqarrow's own temporary, staging and lock files) are left alone silently.
A new file never overwrites one: a name that is taken moves on to the next free
millisecond.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from rmqarrow.errors import InvalidValueError, StoreNotFoundError

__all__ = [
    "StrayEntry",
    "file_name_for",
    "free_file_name",
    "is_index_file_name",
    "java_name_order",
    "list_index_files",
    "stray_entries",
]

_log = logging.getLogger(__name__)
_JAVA_LONG_MIN, _JAVA_LONG_MAX = -(2**63), 2**63 - 1
#: (directory, name) pairs already warned about, so that one command opening a store
#: several times names each stray entry once
_warned: set[tuple[str, str]] = set()


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


def is_index_file_name(name: str) -> bool:
    """Whether Java's ``Long.parseLong`` accepts ``name`` (what ``MappedFile`` requires).

    An optional sign, then one or more decimal digits (``Character.digit``: any Unicode
    decimal digit of one UTF-16 unit, not only ASCII), the value within a Java ``long``.
    """
    digits = name[1:] if name[:1] in ("+", "-") else name
    if not digits:
        return False
    value = 0
    for ch in digits:
        d = unicodedata.decimal(ch, None) if ord(ch) <= 0xFFFF else None
        if d is None:
            return False
        value = value * 10 + d
    if name[:1] == "-":
        value = -value
    return _JAVA_LONG_MIN <= value <= _JAVA_LONG_MAX


@dataclass(frozen=True)
class StrayEntry:
    """An entry of a store directory that is not an index file, and what it is."""

    path: Path
    kind: str  # "directory", "FIFO", "dangling symlink", "other file", ...
    reason: str  # one line: why it is not loaded and what RocketMQ would do with it

    def describe(self) -> str:
        return f"{self.path}: {self.reason}"


def _entry_kind(p: Path) -> str:
    try:
        mode = p.stat().st_mode  # follows symlinks, as RocketMQ's open does
    except FileNotFoundError:
        return "dangling symlink" if p.is_symlink() else "vanished"
    except OSError as exc:
        return f"unreadable entry ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "special file"


def _classify(directory: Path) -> tuple[list[Path], list[StrayEntry]]:
    if not directory.is_dir():
        raise StoreNotFoundError(f"{directory}: no such store directory")
    files: list[Path] = []
    strays: list[StrayEntry] = []
    for p in directory.iterdir():
        if p.name.startswith("."):
            continue  # rmqarrow's own temporary, staging and lock files
        if _undecodable(p.name):
            raw = p.name.encode("utf-8", "surrogateescape")
            raise InvalidValueError(
                f"{directory}: holds a file whose name is not UTF-8 text ({raw!r}); index "
                "files are named yyyyMMddHHmmssSSS: move it out of the store"
            )
        kind = _entry_kind(p)
        if kind == "vanished":
            continue  # removed while listing (a concurrent roll-back or cleanup)
        named = is_index_file_name(p.name)
        if named and kind == "file":
            files.append(p)
            continue
        if not named:
            what = "a file" if kind == "file" else f"a {kind}"
            reason = (
                f"not an index file ({what} whose name is not a number, as "
                "yyyyMMddHHmmssSSS is; RocketMQ skips it too): not loaded; move it "
                "out of the store"
            )
        elif kind == "dangling symlink":
            reason = (
                f"a dangling symlink named like an index file (to "
                f"{os.readlink(p)!r}; RocketMQ would create its target as a new "
                "empty index file): not loaded; remove it or restore its target"
            )
        else:
            reason = (
                f"a {kind} named like an index file (RocketMQ's load fails on it and "
                "the broker does not start): not loaded; move it out of the store"
            )
        strays.append(StrayEntry(p, kind, reason))
    files.sort(key=lambda p: java_name_order(p.name))
    strays.sort(key=lambda e: java_name_order(e.path.name))
    return files, strays


def stray_entries(store_dir: str | os.PathLike[str]) -> list[StrayEntry]:
    """Every entry of a store directory that is not an index file (hidden ones aside)."""
    return _classify(Path(store_dir))[1]


def list_index_files(store_dir: str | os.PathLike[str]) -> list[Path]:
    """The index files of a store directory, oldest first, as RocketMQ orders them.

    Only regular files named as RocketMQ can load them; every other entry is named in a
    warning on this module's logger (once per process), never loaded.
    """
    directory = Path(store_dir)
    files, strays = _classify(directory)
    for e in strays:
        seen = (str(directory), e.path.name)
        if seen not in _warned:
            _warned.add(seen)
            _log.warning("%s", e.describe())
    return files


def _undecodable(name: str) -> bool:
    """True for a name the file system gave as bytes that are not UTF-8 (surrogateescape)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
