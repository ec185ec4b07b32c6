"""``IndexFile``: one memory-mapped RocketMQ index file, read and written as RocketMQ does.

The rules reproduced here are listed in :mod:`rmqarrow.format.rules`; the byte layout lives
in :mod:`rmqarrow.format.layout`.  The walk and the bulk forms (``put_keys``,
``select_phy_offsets_many``) are the kernels of :mod:`rmqarrow.kernels`: the same bytes and
the same answers as the one-at-a-time forms.

An open file keeps its header in memory and its bytes mapped only while they are used:
the maps of every open file together stay within a bound (:mod:`rmqarrow.index._maps`),
so a store of thousands of files needs neither thousands of descriptors nor their
address space.  A file is mapped again, transparently, when it is used after its map was
let go.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as _np

from rmqarrow._args import check_flag, check_int, check_non_negative
from rmqarrow._broker import check_store_writable
from rmqarrow._closing import Closing
from rmqarrow._limits import limit_error
from rmqarrow._space import reserve
from rmqarrow.errors import (
    ClosedIndexError,
    CorruptIndexError,
    InvalidValueError,
    OutputExistsError,
    ReadOnlyIndexError,
    RmqArrowError,
    StoreNotFoundError,
)
from rmqarrow.format import rules as _rules
from rmqarrow.format.hashing import check_query_key, index_key_hash
from rmqarrow.format.java import JAVA_LONG_MAX, JAVA_LONG_MIN
from rmqarrow.format.layout import (
    HEADER_DTYPE,
    HEADER_SIZE,
    Geometry,
    GeometryHint,
    HeaderState,
    MappedIndex,
    check_header,
    geometry_hint,
    map_regions,
    write_header,
)
from rmqarrow.index import _maps
from rmqarrow.kernels import lookup as _lookup
from rmqarrow.kernels import put as _put
from rmqarrow.kernels.walk import walk_chain

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["IndexFile"]


def _java_long_arg(name: str, value: object) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidValueError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    v = int(value)  # type: ignore[call-overload,unused-ignore]
    if not JAVA_LONG_MIN <= v <= JAVA_LONG_MAX:
        raise InvalidValueError(f"{name} must fit a Java long (int64), got {v}")
    return v


def _read_header(mapped: MappedIndex) -> HeaderState:
    """The stored header, read until two reads agree (a writer may be rewriting it)."""
    raw = mapped.header[0].item()
    for _ in range(100):
        again = mapped.header[0].item()
        if again == raw:
            break
        raw = again
    return _header_state(raw)


def _header_state(raw: tuple[int, ...]) -> HeaderState:
    header = HeaderState(*raw)
    header.index_count = max(header.index_count, 1)
    return header


def _read_header_unmapped(path: Path) -> HeaderState:
    """:func:`_read_header` through a plain read, for a file whose map was let go."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise limit_error(exc, path) from None
    try:
        raw = os.pread(fd, HEADER_SIZE, 0)
        for _ in range(100):
            again = os.pread(fd, HEADER_SIZE, 0)
            if again == raw:
                break
            raw = again
    finally:
        os.close(fd)
    if len(raw) < HEADER_SIZE:
        raise CorruptIndexError(f"{path}: shorter than its header ({len(raw)} bytes) now")
    return _header_state(_np.frombuffer(raw, dtype=HEADER_DTYPE, count=1)[0].item())


def _map(path: Path, geometry: Geometry, writable: bool) -> MappedIndex:
    try:
        return map_regions(path, geometry, writable)
    except OSError as exc:
        if isinstance(exc, RmqArrowError):
            raise
        raise limit_error(exc, path) from None


class IndexFile(Closing):
    """A RocketMQ IndexFile on disk.  Use :meth:`create` or :meth:`open`."""

    def __init__(self, mapped: MappedIndex, header: HeaderState) -> None:
        self._path = mapped.path
        self._geometry = mapped.geometry
        self._writable = mapped.writable
        self._mapped: MappedIndex | None = mapped
        self._h = header
        self._closed = False
        _maps.touch(self)

    @property
    def _m(self) -> MappedIndex:
        """The map, made again when the pool let it go (:mod:`rmqarrow.index._maps`)."""
        m = self._mapped
        if m is None:
            if self._closed:
                raise ClosedIndexError(f"{self._path}: index file is closed; open it again")
            m = _map(self._path, self._geometry, self._writable)
            self._mapped = m
        _maps.touch(self)
        return m

    def _release_map(self) -> None:
        """Let go of the map (the pool's bound was reached): a writable file's header goes
        to it first, only when it differs (an unchanged file is never dirtied).  The map
        closes when the last view of it goes."""
        m = self._mapped
        if m is None or self._closed:
            return
        if m.writable:
            _sync_header(m, self._h)
        self._mapped = None

    # -- construction --------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
        *,
        force: bool = False,
        geometry: Geometry | GeometryHint | None = None,
    ) -> IndexFile:
        """A new, empty file; refuses to replace an existing one.

        ``end_phy_offset`` and ``end_timestamp`` seed the header as RocketMQ does when it
        rolls from a full file (rule 6 of :mod:`rmqarrow.format.rules`).  A file in the
        store of a running broker is refused (:mod:`rmqarrow._broker`; ``force``: see
        :class:`~rmqarrow.IndexService`).  The geometry is ``geometry=`` or the
        ``hash_slot_num`` and ``index_num`` arguments (not both forms); a count not given is
        RocketMQ's default.
        """
        complete = geometry_hint(geometry, hash_slot_num, index_num).or_default()
        end_phy_offset = _java_long_arg("end_phy_offset", end_phy_offset)
        end_timestamp = _java_long_arg("end_timestamp", end_timestamp)
        p = Path(path)
        check_store_writable(p, force=check_flag("force", force))
        try:
            with open(p, "xb") as fh:
                try:
                    reserve(fh.fileno(), complete.file_size, p)  # space first: no SIGBUS
                except BaseException:
                    p.unlink()
                    raise
        except FileExistsError:
            raise OutputExistsError(
                f"{p}: already exists; an index file is never replaced"
            ) from None
        except FileNotFoundError:
            raise StoreNotFoundError(
                f"{p}: parent directory does not exist; create it first"
            ) from None
        header = HeaderState()
        if end_phy_offset > 0:
            header.begin_phy_offset = header.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            header.begin_timestamp = header.end_timestamp = end_timestamp
        f = cls(_map(p, complete, writable=True), header)
        f._write_header()
        return f

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        hash_slot_num: int | None = None,
        index_num: int | None = None,
        writable: bool = False,
        *,
        force: bool = False,
        geometry: Geometry | GeometryHint | None = None,
    ) -> IndexFile:
        """Open an existing file; its size must match the geometry (defaults: RocketMQ's).

        The geometry is ``geometry=`` or the ``hash_slot_num`` and ``index_num`` arguments
        (not both forms); a count not given is RocketMQ's default.

        Opening read-only never changes a byte.  A stored ``indexCount <= 0`` is read as 1,
        as ``IndexHeader.load`` does.  A writable open rolls an interrupted batch back, so
        it refuses a file in the store of a running broker (:mod:`rmqarrow._broker`;
        ``force``: see :class:`~rmqarrow.IndexService`).
        """
        writable = check_flag("writable", writable)
        force = check_flag("force", force)
        if writable:
            check_store_writable(path, force=force)
        complete = geometry_hint(geometry, hash_slot_num, index_num).or_default()
        mapped = _map(Path(path), complete, writable)
        try:
            check_header(mapped.path, complete, mapped.header)
        except RmqArrowError:
            mapped.close()
            raise
        header = _read_header(mapped)
        f = cls(mapped, header)
        if writable:
            f.repaired = _put.repair_uncommitted(f)
            if f.repaired is None:
                f._synced = _as_tuple(f._h)
        return f

    #: What :meth:`open` repaired after an interrupted write (None: nothing), for callers
    #: to report (``rmqarrow build`` prints it).
    repaired: str | None = None

    def refresh(self) -> None:
        """Re-read the header of a read-only file (a broker may be appending to it).

        Queries call this first, so each uses one consistent view: the count read here
        bounds every position followed (heads past it are walked back, see
        :func:`rmqarrow.kernels.walk.committed_heads`).  The count never goes down.
        """
        if self._writable or self._closed or self._pinned:
            return
        if self._h.index_count >= self._geometry.index_num:
            return  # full: RocketMQ never writes to it again
        m = self._mapped
        fresh = _read_header(m) if m is not None else _read_header_unmapped(self._path)
        if fresh.index_count >= self._h.index_count:
            self._h = fresh

    #: set by :meth:`pin`: :meth:`refresh` leaves the header as it is
    _pinned = False

    def pin(self) -> HeaderState:
        """Read the header once more and keep it: from now on this read-only file answers
        as of that header (:meth:`refresh` does nothing), so that several readers compare
        answers over one snapshot of a store a broker is appending to.  Returns a copy of
        the pinned header, for the other readers."""
        self.refresh()
        self._pinned = True
        return dataclasses.replace(self._h)

    # -- header ----------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def name(self) -> str:
        return self._path.name

    @property
    def geometry(self) -> Geometry:
        return self._geometry

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def begin_timestamp(self) -> int:
        return self._h.begin_timestamp

    @property
    def end_timestamp(self) -> int:
        return self._h.end_timestamp

    @property
    def begin_phy_offset(self) -> int:
        return self._h.begin_phy_offset

    @property
    def end_phy_offset(self) -> int:
        return self._h.end_phy_offset

    @property
    def hash_slot_count(self) -> int:
        return self._h.hash_slot_count

    @property
    def index_count(self) -> int:
        """The next free position: the number of entries + 1."""
        return self._h.index_count

    @property
    def entry_count(self) -> int:
        return self._h.index_count - 1

    @property
    def capacity(self) -> int:
        """Entries a file of this geometry holds: ``index_num - 1`` (position 0 is unused)."""
        return self.geometry.index_num - 1

    def is_write_full(self) -> bool:
        return self._h.index_count >= self.geometry.index_num

    def is_time_matched(self, begin: int, end: int) -> bool:
        return _rules.is_time_matched(begin, end, self._h.begin_timestamp, self._h.end_timestamp)

    @property
    def regions(self) -> MappedIndex:
        """The mapped header, slot and entry regions (numpy views; read-only unless writable)."""
        return self._m

    @property
    def state(self) -> HeaderState:
        """The in-memory header (what RocketMQ keeps in ``IndexHeader``)."""
        return self._h

    def _write_header(self) -> None:
        write_header(self._m, self._h)

    # -- writing -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedIndexError(f"{self.path}: index file is closed; open it again")

    def _check_writable(self) -> None:
        self._check_open()
        if not self._writable:
            raise ReadOnlyIndexError(f"{self.path}: opened read-only; open with writable=True")

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Append one key; False exactly when RocketMQ's ``putKey`` is (the file is full)."""
        self._check_writable()
        key_hash = index_key_hash(key)
        phy_offset = _java_long_arg("phy_offset", phy_offset)
        store_timestamp = _java_long_arg("store_timestamp", store_timestamp)
        return _put.put_one(self, key_hash, phy_offset, store_timestamp)

    def put_keys(
        self,
        keys: pa.Array | pa.ChunkedArray | Sequence[str],
        phy_offsets: np.ndarray | Sequence[int],
        store_timestamps: np.ndarray | Sequence[int],
    ) -> int:
        """Append many keys in order; returns how many fit.  Same bytes as ``put_key`` each."""
        self._check_writable()
        return _put.put_keys(self, keys, phy_offsets, store_timestamps)

    # -- reading -------------------------------------------------------------------------------

    def select_phy_offsets(
        self, key: str, max_num: int, begin: int = 0, end: int = JAVA_LONG_MAX
    ) -> list[int]:
        """The chained lookup: offsets of ``key`` stored within ``[begin, end]``, newest first."""
        self._check_open()
        key_hash = index_key_hash(check_query_key(key))
        max_num = check_non_negative("max_num", max_num)
        begin, end = check_int("begin", begin), check_int("end", end)
        self.refresh()
        out: list[int] = []
        walk_chain(self._m, self._h, key_hash, max_num, begin, end, out)
        return out

    def select_phy_offsets_many(
        self,
        keys: pa.Array | pa.ChunkedArray | Sequence[str],
        max_num: int | np.ndarray | Sequence[int],
        begin: int | np.ndarray | Sequence[int] = 0,
        end: int | np.ndarray | Sequence[int] = JAVA_LONG_MAX,
    ) -> pa.Table:
        """Bulk :meth:`select_phy_offsets`: a table (``query`` int64 index of the key,
        ``phy_offset`` int64) in native order; ``max_num``/``begin``/``end`` are scalars or
        one value per key."""
        self._check_open()
        self.refresh()
        return _lookup.select_many(self, keys, max_num, begin, end)

    # -- lifecycle -----------------------------------------------------------------------------

    #: The header as of opening or the last flush when nothing was written since (every
    #: write moves the count, or for a repair, leaves this None): flushing is then a no-op,
    #: so flushing a store of thousands of untouched files maps and syncs none of them.
    _synced: tuple[int, ...] | None = None

    def flush(self) -> None:
        """Write the whole header and force the map to disk (``IndexFile.flush``)."""
        self._check_open()
        if self._writable:
            if self._synced is not None and self._synced == _as_tuple(self._h):
                return
            m = self._m
            write_header(m, self._h)
            m.mm.flush()
            self._synced = _as_tuple(self._h)

    def close(self) -> None:
        """Flush (when writable) and unmap; closing twice is harmless."""
        if self._closed:
            return
        m = self._mapped
        if m is not None:
            if m.writable:
                _sync_header(m, self._h)
            m.close()
        self._closed = True
        _maps.forget(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("rw" if self._writable else "ro")
        return (
            f"IndexFile({str(self.path)!r}, {self.geometry.hash_slot_num} slots x "
            f"{self.geometry.index_num}, {self.entry_count} entries, {state})"
        )


def _sync_header(m: MappedIndex, state: HeaderState) -> None:
    """Write the in-memory header into the map unless it already holds exactly that."""
    if m.header.size and m.header[0].item() != _as_tuple(state):
        write_header(m, state)


def _as_tuple(h: HeaderState) -> tuple[int, ...]:
    """``astuple(h)`` without its deep copy (it costs more than a put)."""
    return (
        h.begin_timestamp,
        h.end_timestamp,
        h.begin_phy_offset,
        h.end_phy_offset,
        h.hash_slot_count,
        h.index_count,
    )
