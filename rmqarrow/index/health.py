"""Per-file health of a store, so one damaged file never blinds the whole store.

A crash leaves the newest index file truncated, a disk error a garbage header.  RocketMQ
would refuse such a store; an operator after the crash wants the rest answered.
:func:`store_health` reads only sizes and the 40-byte headers (nothing is mapped) and gives
every file a status:

* ``ok``
* ``truncated``: shorter than the store's geometry;
* ``wrong geometry``: longer, or of a size no geometry of the store explains;
* ``bad header``: counts out of range or inconsistent (more used slots than entries), or
  times and offsets no RocketMQ file holds, which its reader misreads: a begin or end time
  before 1970 or at the end of the long range, a negative offset (:func:`header_problems`
  says what RocketMQ's lookup does with each);
* ``misread header``: values RocketMQ writes but treats oddly, so the file is still read
  (as RocketMQ reads it): begin time after end time (a broker writes that when its clock
  steps back while a file fills; RocketMQ's ``isTimeMatched`` then skips the file for every
  time range starting at or after its begin time, although its entries lie there), or a
  begin offset after the end offset (keys put out of CommitLog order; RocketMQ's build
  guard and expiry go by the end offset);
* ``out of name order``: a file whose entries run later than the begin time of a file
  whose name sorts after it (RocketMQ's ``IndexService.load`` orders files by name, and
  its lookup, newest first, stops at the first file that begins before the query's
  begin): every time-ranged lookup starting between the two misses this file's entries.
  A name that is not the 17 digits of ``yyyyMMddHHmmssSSS`` (an 18-digit one sorts
  before every 17-digit name it follows in time) is named as the cause.  Such a file is
  read, as RocketMQ reads it; it is flagged only when the order changes answers;
* ``not an index file``: an entry of the store directory that is not loaded (a directory,
  FIFO or dangling symlink named like an index file, a file named otherwise, see
  :mod:`rmqarrow.format.naming`).  Listed so that ``check`` and ``info`` name it; it never
  counts as damage of the index.

(``damaged chains`` is added by :mod:`rmqarrow.verify.fsck`, which reads whole files.)

The store's geometry is **fitted from the healthy files**: explicit counts win; otherwise
the geometry that the most files' sizes fit (RocketMQ's defaults or the 1:4 ratio), ties
to the newest such file, so a truncated newest file cannot mislead it.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rmqarrow.errors import CorruptIndexError, GeometryError
from rmqarrow.format.java import JAVA_INT_MAX, JAVA_LONG_MAX
from rmqarrow.format.layout import (
    ENTRY_DTYPE,
    HEADER_DTYPE,
    HEADER_SIZE,
    SLOT_DTYPE,
    Geometry,
    GeometryHint,
    check_header,
)
from rmqarrow.format.naming import is_index_file_name, list_index_files, stray_entries

__all__ = [
    "MISORDERED",
    "OK",
    "READ_AS_ROCKETMQ",
    "FileHealth",
    "StoreHealth",
    "confirms_geometry",
    "expired_during_run",
    "file_health",
    "fit_geometry",
    "header_problems",
    "healthy_index_files",
    "store_health",
]

OK = "ok"
TRUNCATED = "truncated"
WRONG_GEOMETRY = "wrong geometry"
BAD_HEADER = "bad header"
MISREAD_HEADER = "misread header"
MISORDERED = "out of name order"
STRAY = "not an index file"
#: statuses of files that readers still read, as RocketMQ does, though some of its
#: time-ranged answers miss their entries
READ_AS_ROCKETMQ = (MISREAD_HEADER, MISORDERED)

_log = logging.getLogger(__name__)

#: The latest time at which RocketMQ still reads every entry of a file back: it computes an
#: entry's time as ``beginTimestamp + timeDiff * 1000`` in a Java long, ``timeDiff`` up to
#: ``Integer.MAX_VALUE``; past this the sum wraps to a negative time.
LATEST_TIME = JAVA_LONG_MAX - JAVA_INT_MAX * 1000


@dataclass
class FileHealth:
    """One file's status and, when not ok, what is wrong with it (one line)."""

    path: Path
    size: int
    status: str = OK
    detail: str = ""
    header: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def skipped_by_readers(self) -> bool:
        """Whether ``query``, ``export`` and ``verify`` leave this file out: they judge
        sizes and headers only, so damage found in whole files (chains, offsets) is not
        a reason (``verify`` reports damaged chains itself)."""
        return self.status in (TRUNCATED, WRONG_GEOMETRY, BAD_HEADER, STRAY)

    def describe(self) -> str:
        return f"{self.path}: {self.status}" + (f": {self.detail}" if self.detail else "")

    def to_dict(self) -> dict[str, object]:
        return {
            "file": str(self.path),
            "name": self.name,
            "size": self.size,
            "status": self.status,
            "detail": self.detail,
            "skipped_by_readers": self.skipped_by_readers,
            **self.header,
        }


@dataclass
class StoreHealth:
    """Every file of a store (oldest first), with the geometry fitted from the healthy ones."""

    store: Path
    geometry: Geometry
    note: str | None
    files: list[FileHealth]

    @property
    def healthy(self) -> list[FileHealth]:
        """The files readers load: ok, or with a header RocketMQ reads (and misreads)."""
        return [f for f in self.files if f.ok or f.status in READ_AS_ROCKETMQ]

    @property
    def damaged(self) -> list[FileHealth]:
        """Index files that are not ok (entries that are no index file, and files only out
        of name order, aside)."""
        return [f for f in self.files if not f.ok and f.status not in (STRAY, MISORDERED)]

    @property
    def misordered(self) -> list[FileHealth]:
        """Sound files whose name sorts them where RocketMQ's time-ranged lookup misses
        their entries: every reader reads them (as RocketMQ does); ``check`` fails."""
        return [f for f in self.files if f.status == MISORDERED]

    @property
    def strays(self) -> list[FileHealth]:
        """Entries of the store directory that are not index files (never loaded)."""
        return [f for f in self.files if f.status == STRAY]

    @property
    def blocking(self) -> list[FileHealth]:
        """Entries named like index files that are not regular files (a directory, a FIFO,
        a dangling symlink): RocketMQ's load fails on them, so the broker does not start."""
        return [f for f in self.strays if is_index_file_name(f.name)]

    @property
    def ok(self) -> bool:
        return not self.damaged and not self.blocking and not self.misordered


def _size_geometry(size: int) -> Geometry | None:
    default = Geometry()
    if size == default.file_size:
        return default
    return Geometry.for_size_default_ratio(size)


def confirms_geometry(path: Path, geometry: Geometry) -> bool:
    """Whether ``path``'s own contents confirm that it was written with ``geometry``: its
    newest entry (position indexCount - 1) is written, links back, and heads the chain of
    its key hash's slot, as every completed put of RocketMQ's ``putKey`` leaves it.  Read
    with another geometry the slots and entries lie elsewhere, so this holds by chance
    about once in the number of slots.  A file without entries, or one that cannot be
    read, confirms nothing.  Three small reads."""
    try:
        with open(path, "rb") as fh:
            header = np.frombuffer(fh.read(HEADER_SIZE), dtype=HEADER_DTYPE, count=1)
            newest = int(header["index_count"][0]) - 1
            if not 1 <= newest < geometry.index_num:
                return False
            fh.seek(geometry.entries_offset + newest * ENTRY_DTYPE.itemsize)
            entry = np.frombuffer(fh.read(ENTRY_DTYPE.itemsize), dtype=ENTRY_DTYPE, count=1)
            key_hash, prev = int(entry["key_hash"][0]), int(entry["prev_index"][0])
            # an unwritten (all-zero) position, or a link that does not point back, is no
            # entry RocketMQ wrote there
            if key_hash < 0 or not entry.tobytes().strip(b"\0") or not 0 <= prev < newest:
                return False
            fh.seek(HEADER_SIZE + (key_hash % geometry.hash_slot_num) * SLOT_DTYPE.itemsize)
            head = int(np.frombuffer(fh.read(SLOT_DTYPE.itemsize), dtype=SLOT_DTYPE, count=1)[0])
    except (OSError, ValueError):
        return False
    return head == newest


def fit_geometry(
    sizes: list[int],
    geometry: GeometryHint = GeometryHint.NONE,
    paths: list[Path] | None = None,
) -> tuple[Geometry, str | None]:
    """The store geometry for files of ``sizes`` (oldest first) and a note when fitted:
    when the sizes do not fit RocketMQ's defaults, none was given, and the newest file of
    that size (of ``paths``, the files of ``sizes``) does not confirm it
    (:func:`confirms_geometry`), the case where the 1:4 ratio was a guess worth saying."""
    if geometry.given:
        return geometry.or_default(), None
    fits = [(i, g) for i, g in enumerate(_size_geometry(s) for s in sizes) if g is not None]
    if not fits:
        return Geometry(), None
    votes = Counter(g for _, g in fits)
    best = max(votes.values())
    # ties go to the newest file's geometry
    fitted = next(g for _, g in reversed(fits) if votes[g] == best)
    if fitted == Geometry():
        return fitted, None
    if paths is not None:
        fitting = [p for p, size in zip(paths, sizes, strict=True) if size == fitted.file_size]
        if fitting and confirms_geometry(fitting[-1], fitted):
            return fitted, None
    return fitted, (
        f"file size {fitted.file_size} does not fit the defaults; using {fitted} (1:4 ratio)"
    )


def _read_header(path: Path) -> np.ndarray:
    with open(path, "rb") as fh:
        raw = fh.read(HEADER_SIZE)
    return np.frombuffer(raw, dtype=HEADER_DTYPE, count=1)


def file_health(path: Path, geometry: Geometry, common_size: int | None = None) -> FileHealth:
    """Size and header sanity of one file against the store geometry.

    ``common_size`` is the size most of the store's files share: a file of that size that
    does not match the geometry is of the wrong geometry, not truncated (a crash cuts one
    file, it does not shrink them all alike).
    """
    size = path.stat().st_size
    fh = FileHealth(path, size)
    if size < HEADER_SIZE:
        fh.status, fh.detail = TRUNCATED, f"{size} bytes, shorter than the 40-byte header"
        return fh
    header = _read_header(path)
    fh.header = {name: int(header[name][0]) for name in HEADER_DTYPE.names or ()}
    if size < geometry.file_size and size != common_size:
        fh.status = TRUNCATED
        fh.detail = (
            f"{size} bytes, expected {geometry.file_size} for {geometry}; a crash cut it short"
        )
        return fh
    if size != geometry.file_size:
        fh.status = WRONG_GEOMETRY
        own = _size_geometry(size)
        fh.detail = f"{size} bytes, expected {geometry.file_size} for {geometry}" + (
            f"; it fits --hash-slot-num {own.hash_slot_num} --index-num {own.index_num}"
            if own
            else "; pass the --hash-slot-num and --index-num it was written with"
        )
        return fh
    try:
        check_header(path, geometry, header)
    except (CorruptIndexError, GeometryError) as exc:
        fh.status, fh.detail = BAD_HEADER, str(exc).removeprefix(f"{path}: ")
        return fh
    bad, misread = header_problems(fh.header)
    if bad:
        fh.status, fh.detail = BAD_HEADER, "; ".join(bad + misread)
    elif misread:
        fh.status, fh.detail = MISREAD_HEADER, "; ".join(misread)
    return fh


def header_problems(h: dict[str, int]) -> tuple[list[str], list[str]]:
    """What is wrong with a header's values: (impossible values, which readers skip the
    file for; values RocketMQ writes but its reader misreads, which readers still read).

    Each line says what RocketMQ's ``IndexService.queryOffset`` / ``IndexFile`` do with the
    value (rmqarrow's lookup does the same with any file it reads).
    """
    bad: list[str] = []
    misread: list[str] = []
    count, slots = h["index_count"], h["hash_slot_count"]
    begin, end = h["begin_timestamp"], h["end_timestamp"]
    begin_off, end_off = h["begin_phy_offset"], h["end_phy_offset"]
    if count < 0:
        bad.append(f"indexCount {count} < 0")
    if count > 1 and slots > count - 1:
        bad.append(f"hashSlotCount {slots} > entries {count - 1} (each used slot needs an entry)")
    if count <= 1 and slots > 0:
        bad.append(f"hashSlotCount {slots} in a file without entries")
    if begin < 0:
        bad.append(
            f"beginTimestamp {begin} is before 1970 (no store time is): RocketMQ's "
            "lookup stops at a file that begins before the query's range, so it "
            "reads no older file, and reads this file's entries as times before 1970"
        )
    elif begin > LATEST_TIME:
        bad.append(
            f"beginTimestamp {begin} is at the end of the long range (no store time "
            "is): RocketMQ's entry time (begin + timeDiff * 1000) wraps to a negative "
            "value there, so its lookup stops at the first entry stored later"
        )
    if end < 0:
        bad.append(
            f"endTimestamp {end} is before 1970 (no store time is): RocketMQ reads "
            "this file only for time ranges starting before its begin time"
        )
    elif end > LATEST_TIME:
        bad.append(
            f"endTimestamp {end} is at the end of the long range (no store time is): "
            "RocketMQ starts the next file at this time, and reads every entry of "
            "that file as stored then"
        )
    if begin_off < 0 or end_off < 0:
        bad.append(
            f"negative CommitLog offset (beginPhyOffset {begin_off}, endPhyOffset {end_off})"
        )
    elif begin_off > end_off:
        misread.append(
            f"beginPhyOffset {begin_off} after endPhyOffset {end_off} (keys put "
            "out of CommitLog order: IndexFile.putKey allows it, a broker does "
            "not do it): RocketMQ's lookup reads the file as usual, but its build "
            "guard and its expiry judge the file by that end offset"
        )
    if 0 <= end < begin <= LATEST_TIME and not bad:
        misread.append(
            f"beginTimestamp {begin} after endTimestamp {end} (the store clock "
            "stepped back while the file filled, or damage): RocketMQ's lookup "
            "reads this file only for time ranges that start before its begin "
            "and end after its end, and misses its entries for any range "
            "starting at or after its begin time"
        )
    return bad, misread


def store_health(
    store: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> StoreHealth:
    """Every file of ``store`` (a directory, or one index file) with its status."""
    p = Path(store)
    listed = [p] if p.is_file() else list_index_files(p)
    strays = [] if p.is_file() else stray_entries(p)
    paths, sizes = [], []
    for q in listed:
        try:
            sizes.append(q.stat().st_size)
        except FileNotFoundError:
            if q == p:
                raise
            expired_during_run(q)
            continue
        paths.append(q)
    fitted, note = fit_geometry(sizes, geometry, paths)
    counts = Counter(sizes).most_common(2)
    common = counts[0][0] if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]) else None
    if len(sizes) == 1 and (geometry.given or _size_geometry(sizes[0]) is not None):
        common = None  # one file, a geometry to hold it against: shorter means truncated
    files = []
    for q in paths:
        try:
            files.append(file_health(q, fitted, common))
        except FileNotFoundError:
            if q == p:
                raise
            expired_during_run(q)
    flag_misordered(files)
    files += [FileHealth(e.path, _entry_size(e.path), STRAY, e.reason) for e in strays]
    return StoreHealth(p, fitted, note, files)


def expired_during_run(path: Path) -> None:
    """Note a file listed a moment ago and gone now: a broker expires (deletes) its oldest
    files while readers run, which is no damage; the reader leaves it out."""
    _log.info("%s: expired during the run (deleted), skipped", path)


#: the length of RocketMQ's file names, ``yyyyMMddHHmmssSSS``
NAME_DIGITS = 17


def flag_misordered(files: list[FileHealth]) -> None:
    """Mark each loaded file (name order) whose entries a time-ranged lookup misses
    because a file sorting after it by name begins earlier than its last entry.

    RocketMQ's ``queryOffset`` walks the files newest (last by name) first and stops after
    the first whose ``beginTimestamp`` is before the query's begin; a file further back
    whose ``endTimestamp`` is later than that begin time is never reached for a query
    beginning between the two times.  Only files that hold entries are flagged, and only
    when some query's answer really changes.
    """
    loaded = [f for f in files if f.ok or f.status in READ_AS_ROCKETMQ]
    earliest: FileHealth | None = None  # the file after this one, by name, that begins first
    for fh in reversed(loaded):
        h = fh.header
        if earliest is not None and h["index_count"] > 1:
            later = earliest.header["begin_timestamp"]
            if h["end_timestamp"] > later:
                cause = (
                    f"its name has {len(fh.name)} characters, not the {NAME_DIGITS} digits "
                    "of yyyyMMddHHmmssSSS, so it sorts out of time order; "
                    if len(fh.name) != NAME_DIGITS or not fh.name.isdigit()
                    else ""
                )
                note = (
                    f"{cause}its entries run to store time {h['end_timestamp']}, after the "
                    f"begin time {later} of {earliest.name}, which sorts after it by name: "
                    "RocketMQ orders files by name and its lookup stops at the first file "
                    "(newest first) that begins before the query's begin, so every "
                    f"time-ranged lookup beginning after {later} misses this file's entries"
                )
                fh.detail = f"{note}; {fh.detail}" if fh.detail else note
                if fh.ok:
                    fh.status = MISORDERED
        if earliest is None or h["begin_timestamp"] < earliest.header["begin_timestamp"]:
            earliest = fh


def _entry_size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def healthy_index_files(
    store: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> tuple[Geometry, list[Path], list[FileHealth]]:
    """What a reader of a possibly damaged store uses: the fitted geometry, the healthy
    files (oldest first) and the damaged ones it must name (``export`` calls this)."""
    health = store_health(store, geometry)
    return health.geometry, [f.path for f in health.healthy], health.damaged
