"""The IndexFile byte layout, written down once.

An IndexFile is three consecutive regions, every integer big-endian::

    header   40 bytes   HEADER_DTYPE (one record)
    slots    4 * S      int32 head of each hash slot's chain (0 = empty)
    entries  20 * N     ENTRY_DTYPE records; position 0 is never written

``S`` is ``hash_slot_num`` and ``N`` is ``index_num``.  Nothing else in the project
computes offsets into a file: it maps the file and takes the three numpy views that
:func:`map_regions` returns.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Mapping
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import ClassVar, Protocol

import numpy as np

from rmqarrow.errors import CorruptIndexError, GeometryError, StoreNotFoundError, UsageError
from rmqarrow.format.java import JAVA_INT_MAX

__all__ = [
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "ENTRY_DTYPE",
    "HASH_SLOT_SIZE",
    "HEADER_DTYPE",
    "HEADER_SIZE",
    "INDEX_SIZE",
    "SLOT_DTYPE",
    "Geometry",
    "GeometryHint",
    "HeaderState",
    "MappedIndex",
    "OpenIndex",
    "StoreSnapshot",
    "as_hint",
    "as_of",
    "check_header",
    "check_one_form",
    "check_size",
    "geometry_hint",
    "map_regions",
    "write_header",
]

HEADER_SIZE = 40
HASH_SLOT_SIZE = 4
INDEX_SIZE = 20

#: RocketMQ's ``maxHashSlotNum`` and ``maxIndexNum`` defaults.
DEFAULT_HASH_SLOT_NUM = 5_000_000
DEFAULT_INDEX_NUM = 20_000_000

HEADER_DTYPE = np.dtype(
    [
        ("begin_timestamp", ">i8"),
        ("end_timestamp", ">i8"),
        ("begin_phy_offset", ">i8"),
        ("end_phy_offset", ">i8"),
        ("hash_slot_count", ">i4"),
        ("index_count", ">i4"),
    ]
)
SLOT_DTYPE = np.dtype(">i4")
ENTRY_DTYPE = np.dtype(
    [
        ("key_hash", ">i4"),
        ("phy_offset", ">i8"),
        ("time_diff", ">i4"),
        ("prev_index", ">i4"),
    ]
)
assert HEADER_DTYPE.itemsize == HEADER_SIZE
assert SLOT_DTYPE.itemsize == HASH_SLOT_SIZE
assert ENTRY_DTYPE.itemsize == INDEX_SIZE


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GeometryError(f"{name}: expected a positive int, found {value!r}")


@dataclass(frozen=True)
class Geometry:
    """How many hash slots and entry positions a file has; fixes its size."""

    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM
    index_num: int = DEFAULT_INDEX_NUM

    def __post_init__(self) -> None:
        _check_count("hash_slot_num", self.hash_slot_num)
        _check_count("index_num", self.index_num)
        if self.file_size > JAVA_INT_MAX:
            raise GeometryError(
                f"geometry {self.hash_slot_num} slots x {self.index_num} entries needs "
                f"{self.file_size} bytes; RocketMQ sizes files with a Java int "
                f"(at most {JAVA_INT_MAX})"
            )

    @property
    def file_size(self) -> int:
        return HEADER_SIZE + HASH_SLOT_SIZE * self.hash_slot_num + INDEX_SIZE * self.index_num

    @property
    def entries_offset(self) -> int:
        return HEADER_SIZE + HASH_SLOT_SIZE * self.hash_slot_num

    @classmethod
    def for_size_default_ratio(cls, size: int) -> Geometry | None:
        """The geometry with RocketMQ's 1:4 slot:entry ratio whose size is ``size``, if any."""
        body = size - HEADER_SIZE
        unit = HASH_SLOT_SIZE + 4 * INDEX_SIZE
        if body <= 0 or body % unit:
            return None
        return cls(body // unit, 4 * (body // unit))

    def __str__(self) -> str:
        return f"{self.hash_slot_num} slots x {self.index_num} entries ({self.file_size} bytes)"


@dataclass(frozen=True)
class GeometryHint:
    """What a caller said of a store's geometry: either count, both, or neither.

    RocketMQ's ``maxHashSlotNum`` and ``maxIndexNum`` are separate broker settings, so
    either may be given without the other; what is not given is found when a file is
    opened (:meth:`resolve` for an IndexFile; the tiered format has its own rules).  A
    complete :class:`Geometry` is accepted wherever a hint is (:func:`as_hint`).
    """

    #: nothing given (set below): the default of every parameter that takes a hint
    NONE: ClassVar[GeometryHint]

    hash_slot_num: int | None = None
    index_num: int | None = None

    def __post_init__(self) -> None:
        if self.hash_slot_num is not None:
            _check_count("hash_slot_num", self.hash_slot_num)
        if self.index_num is not None:
            _check_count("index_num", self.index_num)

    @property
    def given(self) -> bool:
        """Whether the caller said anything (either count)."""
        return self.hash_slot_num is not None or self.index_num is not None

    @property
    def complete(self) -> bool:
        """Whether both counts were given."""
        return self.hash_slot_num is not None and self.index_num is not None

    def or_else(self, fallback: Geometry) -> Geometry:
        """The given counts, ``fallback``'s for the rest."""
        return Geometry(
            fallback.hash_slot_num if self.hash_slot_num is None else self.hash_slot_num,
            fallback.index_num if self.index_num is None else self.index_num,
        )

    def or_default(self) -> Geometry:
        """The given counts, RocketMQ's defaults for the rest."""
        return self.or_else(Geometry())

    def resolve(self, size: int) -> tuple[Geometry, str | None]:
        """Pick the geometry for an IndexFile of ``size`` bytes.

        Given values win (the defaults fill in the other).  With neither given,
        RocketMQ's defaults are used when they fit; otherwise a geometry with the default
        1:4 ratio that fits is used and a note saying so is returned (``None`` when
        nothing needs saying).
        """
        if self.given:
            return self.or_default(), None
        default = Geometry()
        if size == default.file_size:
            return default, None
        fitted = Geometry.for_size_default_ratio(size)
        if fitted is not None:
            return fitted, f"file size {size} does not fit the defaults; using {fitted} (1:4 ratio)"
        return default, None


GeometryHint.NONE = GeometryHint()


def as_hint(geometry: Geometry | GeometryHint | None) -> GeometryHint:
    """``geometry`` as a hint: a complete :class:`Geometry` gives both counts, ``None``
    neither."""
    if geometry is None:
        return GeometryHint.NONE
    if isinstance(geometry, GeometryHint):
        return geometry
    if isinstance(geometry, Geometry):
        return GeometryHint(geometry.hash_slot_num, geometry.index_num)
    raise UsageError(
        f"geometry: expected a Geometry, a GeometryHint or None, found {type(geometry).__name__}"
    )


def geometry_hint(
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> GeometryHint:
    """The one hint from what a public function was given: ``geometry=``, or the older
    ``hash_slot_num=`` and ``index_num=`` keywords, never both forms."""
    if geometry is None:
        return GeometryHint(hash_slot_num, index_num)
    check_one_form(geometry, hash_slot_num=hash_slot_num, index_num=index_num)
    return as_hint(geometry)


def check_one_form(geometry: object, **counts: object) -> None:
    """Refuse ``geometry=`` given together with any of ``counts`` (the older keywords,
    by name) with a :class:`UsageError` naming both forms."""
    given = ", ".join(f"{name}={value}" for name, value in counts.items() if value is not None)
    if geometry is not None and given:
        raise UsageError(
            f"geometry={geometry!r} and {given} were both given; pass the geometry one way "
            "(geometry=, or hash_slot_num= and index_num=)"
        )


def check_size(path: Path, size: int, geometry: Geometry) -> None:
    """Raise :class:`GeometryError` unless ``size`` is exactly ``geometry.file_size``."""
    if size == geometry.file_size:
        return
    hint = "; pass the hash-slot and index counts the file was written with"
    fitted = Geometry.for_size_default_ratio(size)
    if fitted is not None:
        hint = (
            f"; a file of this size fits hash_slot_num={fitted.hash_slot_num} "
            f"index_num={fitted.index_num}"
        )
    if size < geometry.file_size:
        what = "truncated or opened with the wrong geometry"
    else:
        what = "larger than the geometry allows"
    raise GeometryError(
        f"{path}: {what}: expected {geometry.file_size} bytes for {geometry.hash_slot_num} "
        f"slots x {geometry.index_num} entries, found {size} bytes{hint}"
    )


@dataclass
class HeaderState:
    """The in-memory IndexHeader; written through to the file on every put and on flush."""

    begin_timestamp: int = 0
    end_timestamp: int = 0
    begin_phy_offset: int = 0
    end_phy_offset: int = 0
    hash_slot_count: int = 0
    index_count: int = 1


@dataclass
class MappedIndex:
    """A memory map of one index file and the three numpy views into it."""

    path: Path
    geometry: Geometry
    mm: mmap.mmap
    header: np.ndarray  # shape (1,), HEADER_DTYPE
    slots: np.ndarray  # shape (S,), SLOT_DTYPE
    entries: np.ndarray  # shape (N,), ENTRY_DTYPE
    writable: bool

    def close(self) -> None:
        """Unmap now, or, while a caller still holds a view, when the last view goes."""
        if self.mm.closed:
            return
        if self.writable:
            self.mm.flush()
        empty = np.empty(0, dtype=np.uint8)
        self.header = self.slots = self.entries = empty
        with contextlib.suppress(BufferError):
            self.mm.close()


class OpenIndex(Protocol):
    """What the kernels need of an open index file: its mapped regions and header state."""

    @property
    def regions(self) -> MappedIndex: ...

    @property
    def state(self) -> HeaderState: ...


#: The headers of a store's files pinned at one moment, by file name (oldest first): what
#: readers comparing answers over a store a broker writes read each file as of
#: (:meth:`rmqarrow.IndexFile.pin` takes them).
StoreSnapshot = Mapping[str, HeaderState]


def as_of(regions: MappedIndex, state: HeaderState) -> MappedIndex:
    """``regions`` read as of the pinned header ``state``: the same map with that header,
    read-only (close the original, not this view).  Slot heads past the pinned count
    are for the reader to walk back (:func:`rmqarrow.kernels.walk.committed_heads`)."""
    header = np.array([astuple(state)], dtype=HEADER_DTYPE)
    return MappedIndex(
        regions.path, regions.geometry, regions.mm, header, regions.slots, regions.entries, False
    )


def write_header(regions: MappedIndex, state: HeaderState) -> None:
    """Write the whole in-memory header into the mapped file."""
    regions.header[0] = astuple(state)


def map_regions(path: str | os.PathLike[str], geometry: Geometry, writable: bool) -> MappedIndex:
    """Map an existing file after checking its size against ``geometry``."""
    p = Path(path)
    if not p.is_file():
        raise StoreNotFoundError(f"{p}: no such index file")
    with open(p, "r+b" if writable else "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        check_size(p, size, geometry)
        access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
        mm = mmap.mmap(fh.fileno(), size, access=access)
    header = np.frombuffer(mm, dtype=HEADER_DTYPE, count=1, offset=0)
    slots = np.frombuffer(mm, dtype=SLOT_DTYPE, count=geometry.hash_slot_num, offset=HEADER_SIZE)
    entries = np.frombuffer(
        mm, dtype=ENTRY_DTYPE, count=geometry.index_num, offset=geometry.entries_offset
    )
    return MappedIndex(p, geometry, mm, header, slots, entries, writable)


def check_header(path: Path, geometry: Geometry, header: np.ndarray) -> None:
    """Reject header values no RocketMQ file can hold (counts out of range)."""
    index_count = int(header["index_count"][0])
    slot_count = int(header["hash_slot_count"][0])
    if index_count > geometry.index_num:
        raise CorruptIndexError(
            f"{path}: header indexCount is {index_count}, expected at most index_num "
            f"{geometry.index_num}: garbage header or wrong geometry"
        )
    if not 0 <= slot_count <= geometry.hash_slot_num:
        raise CorruptIndexError(
            f"{path}: header hashSlotCount is {slot_count}, expected 0..{geometry.hash_slot_num}: "
            "garbage header or wrong geometry"
        )
