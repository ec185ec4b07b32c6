"""The manifest of each dataset kind, typed: what a dataset holds and where it came from.

A manifest is JSON (``_rmqarrow.json`` of the older layout, or the record a Delta dataset's
pin commit carries, :mod:`rmqarrow.converters.delta.run`).  Readers inside the library read
it through these frozen dataclasses rather than through string keys:

* :class:`DatasetManifest`: an index files dataset (``"rmqarrow-dataset"``; the keys are
  described in :mod:`rmqarrow.converters.parquet.manifest`);
* :class:`TieredManifest`: a tiered store's dataset (``"rmqarrow-tiered-dataset"``);
* :class:`RocksDBManifest`: a RocksDB message index's dataset
  (``"rmqarrow-rocksdb-dataset"``);
* :class:`DeltaInfo`: the pinned run a Delta dataset's manifest was read at (its
  ``delta`` key), and :class:`RunPin`: the record a run's pin commit carries.

``from_dict`` checks every key it knows (a key missing or of another type is a
:class:`~rmqarrow.errors.DatasetError` naming the key, the dataset, what was expected and
what was found); ``to_dict`` gives back the same JSON object, keys in the order read and
keys it does not know kept, so a manifest read and written again is byte-identical.  A
record built with :func:`dataclasses.replace` keeps that order; a key it sets that the
original lacked comes after the others (and a key read and set to None is written as null,
not dropped).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

from rmqarrow.errors import DatasetError
from rmqarrow.format.detect import ROCKSDB_DATASET_FORMAT, TIERED_DATASET_FORMAT

__all__ = [
    "INDEX_DATASET_FORMAT",
    "MANIFEST_CLASSES",
    "AnyManifest",
    "DatasetManifest",
    "DeltaInfo",
    "IndexSource",
    "IndexSourceFile",
    "KindManifest",
    "PartRecord",
    "PartsListing",
    "RocksDBManifest",
    "RocksDBSource",
    "RunPin",
    "TableRows",
    "TieredManifest",
    "TieredSource",
    "TieredSourceFile",
    "as_manifest",
    "manifest_of",
]

#: The ``format`` of an index files dataset's manifest.
INDEX_DATASET_FORMAT = "rmqarrow-dataset"

#: What a reader of a damaged manifest can do about it.
_REMEDY = "re-export the dataset (the manifest is damaged, or another tool's)"

#: The fields every record has besides its keys: the order read and the keys not known.
_BOOKKEEPING = frozenset({"key_order", "extra"})


def _expected(tp: Any) -> str:
    """How an error names the type ``tp`` a key must have."""
    if tp is Any:
        return "any value"
    if isinstance(tp, type) and issubclass(tp, _Record):
        return "an object"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_expected(a) for a in args)
    if origin is tuple:
        return "a list"
    if origin in (Mapping, dict):
        return "an object"
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    return names.get(tp, "null" if tp is type(None) else str(tp))


def _found(value: object) -> str:
    """How an error names the value found."""
    if value is None:
        return "null"
    kind = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} ({text[:60]}{'...' if len(text) > 60 else ''})"


def _wrong(where: str, key: str, tp: Any, value: object) -> DatasetError:
    return DatasetError(
        f"{where}: malformed manifest: key {key!r}: expected {_expected(tp)}, found "
        f"{_found(value)}; {_REMEDY}"
    )


def _check(value: object, tp: Any, where: str, key: str) -> Any:
    """``value`` as the field of type ``tp`` holds it (lists as tuples, objects as their
    records); :class:`DatasetError` when it is not one."""
    if tp is Any:
        return value
    if isinstance(tp, type) and issubclass(tp, _Record):
        return tp.from_dict(value, where, key)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:  # no field needs more than "X or null"
            raise TypeError(f"unsupported manifest field type {tp}")
        if isinstance(options[0], type) and not issubclass(options[0], _Record):
            if not _is(value, options[0]):
                raise _wrong(where, key, tp, value)
            return value
        return _check(value, options[0], where, key)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _wrong(where, key, tp, value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_check(v, args[0], where, f"{key}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise DatasetError(
                f"{where}: malformed manifest: key {key!r}: expected a list of {len(args)}, found "
                f"{_found(value)}; {_REMEDY}"
            )
        return tuple(
            _check(v, a, where, f"{key}[{i}]")
            for i, (v, a) in enumerate(zip(value, args, strict=True))
        )
    if origin in (Mapping, dict):
        if not isinstance(value, dict):
            raise _wrong(where, key, tp, value)
        return {str(k): _check(v, args[1], where, f"{key}.{k}") for k, v in value.items()}
    if not _is(value, tp):
        raise _wrong(where, key, tp, value)
    return value


def _is(value: object, tp: type) -> bool:
    """Whether ``value`` is of the JSON type ``tp`` (an integer is a number; a boolean
    is no integer)."""
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def _plain(value: object) -> Any:
    """``value`` as JSON holds it: records as objects, tuples as lists."""
    if isinstance(value, _Record):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


#: Each record class's keys (:func:`_keys_of`), worked out once.
_KEYS: dict[type, dict[str, Any]] = {}


def _keys_of(cls: type[_Record]) -> dict[str, Any]:
    """The JSON keys a record class knows, in declaration order, with their types."""
    known = _KEYS.get(cls)
    if known is None:
        hints = typing.get_type_hints(cls)
        known = {f.name: hints[f.name] for f in fields(cls) if f.name not in _BOOKKEEPING}
        _KEYS[cls] = known
    return known


def _optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (types.UnionType, typing.Union) and type(None) in (
        typing.get_args(tp)
    )


@dataclass(frozen=True, kw_only=True)
class _Record:
    """A JSON object read into typed fields: optional keys absent are None, keys not known
    kept in :attr:`extra`, the order read kept in :attr:`key_order` (so :meth:`to_dict`
    writes the object back as it was)."""

    #: the keys in the order the JSON object had them (empty: built here, declaration order)
    key_order: tuple[str, ...] = field(default=(), repr=False, compare=False)
    #: the keys this record does not know, as read
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)

    #: what an error calls a record of this kind when it is the whole manifest
    _what: ClassVar[str] = "manifest"

    @classmethod
    def from_dict(cls, data: object, where: object = "", key: str = "") -> Self:
        """The record of the JSON object ``data``, every known key checked.  ``where``: the
        dataset (or manifest file) an error names; ``key``: where ``data`` sits in the
        manifest (empty: it is the manifest)."""
        place = str(where) or "manifest"
        if not isinstance(data, dict):
            if key:
                raise _wrong(place, key, cls, data)
            raise DatasetError(
                f"{place}: malformed {cls._what}: expected an object, found {_found(data)}; "
                f"{_REMEDY}"
            )
        known = _keys_of(cls)
        values: dict[str, Any] = {}
        for name, tp in known.items():
            path = f"{key}.{name}" if key else name
            if name in data:
                values[name] = _check(data[name], tp, place, path)
            elif not _optional(tp):
                raise DatasetError(
                    f"{place}: malformed manifest: key {path!r} is missing (expected "
                    f"{_expected(tp)}); {_REMEDY}"
                )
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, key_order=tuple(data), extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this record: the keys in the order read, then those set since
        (declaration order), then those not known; an optional key absent stays absent."""
        known = _keys_of(type(self))
        out: dict[str, Any] = {}
        for k in self.key_order:
            if k in known:
                out[k] = _plain(getattr(self, k))
            elif k in self.extra:
                out[k] = _plain(self.extra[k])
        for k in known:
            if k not in out and getattr(self, k) is not None:
                out[k] = _plain(getattr(self, k))
        for k, v in self.extra.items():
            if k not in out:
                out[k] = _plain(v)
        return out


@dataclass(frozen=True, kw_only=True)
class TableRows(_Record):
    """One table's entry of ``tables``: its rows (and, for ``messages``, the commit log
    they were read from and where the next run reads on)."""

    rows: int
    commitlog: str | None = None
    #: ``messages`` of an incremental dataset: the CommitLog offset its next run reads from
    next_offset: int | None = None


@dataclass(frozen=True, kw_only=True)
class PartRecord(_Record):
    """One data part of ``parts``: its path relative to the dataset ("/"-separated), rows
    and size; the footer's and whole file's sha256 when the writer recorded them (a Delta
    table's parts record none unless the run kept its digests)."""

    path: str
    rows: int
    size: int
    footer_sha256: str | None = None
    sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeltaInfo(_Record):
    """The ``delta`` key of a Delta dataset's manifest: the pin table's version read and
    each table's version it pins."""

    version: int
    versions: Mapping[str, int]


@dataclass(frozen=True, kw_only=True)
class RunPin(_Record):
    """The record a run's pin commit carries (its ``commitInfo``): each table's version,
    the application transaction (id, version) and the run's manifest but its parts
    (``source``; free form here, read by each kind's manifest class)."""

    _what: ClassVar[str] = "run pin"

    versions: Mapping[str, int]
    app: tuple[str, int] | None = None
    source: Mapping[str, Any] | None = None

    @classmethod
    def of_commit(cls, entry: object, where: object = "") -> RunPin | None:
        """The pin a commit's rmqarrow entry holds, or None when it holds none (a
        vacuum's commit, a restore's: no ``versions``)."""
        if not (isinstance(entry, dict) and isinstance(entry.get("versions"), dict)):
            return None
        return cls.from_dict(entry, where)


@dataclass(frozen=True, kw_only=True)
class _Manifest(_Record):
    """What every dataset kind's manifest holds."""

    #: the format each kind's manifest declares
    FORMAT: ClassVar[str] = ""

    format: str
    layout_version: int
    schema_version: str
    writer: str
    created_at: str
    tables: Mapping[str, TableRows]
    parts: tuple[PartRecord, ...] | None = None
    run: int | None = None
    updated_at: float | None = None
    updated_by: str | None = None
    delta: DeltaInfo | None = None

    def rows(self, table: str, where: object = "") -> int:
        """The rows ``tables`` records for ``table``; :class:`DatasetError` when it records
        none."""
        entry = self.tables.get(table)
        if entry is None:
            raise DatasetError(
                f"{where or 'manifest'}: malformed manifest: key 'tables.{table}' is missing "
                f"(expected an object); {_REMEDY}"
            )
        return entry.rows

    @property
    def run_count(self) -> int:
        """How many runs updated the dataset since export (0: none)."""
        return self.run or 0

    @property
    def delta_version(self) -> int | None:
        """The pin table's version the manifest was read at (None: no Delta dataset)."""
        return None if self.delta is None else self.delta.version


@dataclass(frozen=True, kw_only=True)
class IndexSourceFile(_Record):
    """One index file of an index dataset's ``source.files``."""

    file_name: str
    size: int
    mtime_ns: int
    hash_slot_num: int
    index_num: int
    #: the header's ``indexCount``: entries + 1
    index_count: int
    #: sha256 of the file's header bytes
    header_sha256: str | None = None
    #: the header's identity, fixed once the file has entries
    begin_timestamp: int | None = None
    begin_phy_offset: int | None = None
    #: true when an incremental export kept a file the broker has deleted
    deleted_in_store: bool | None = None
    #: the data parts holding this file's slots and entries
    parts: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class IndexSource(_Record):
    """An index dataset's ``source``: the store (or file) exported, and its files."""

    path: str
    files: tuple[IndexSourceFile, ...]


@dataclass(frozen=True, kw_only=True)
class DatasetManifest(_Manifest):
    """The manifest of an index files dataset (``"rmqarrow-dataset"``)."""

    FORMAT: ClassVar[str] = INDEX_DATASET_FORMAT

    source: IndexSource
    entries_order: tuple[str, ...] | None = None
    parquet: Mapping[str, Any] | None = None
    superseded: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class TieredSourceFile(_Record):
    """One file of a tiered dataset's ``source.files``."""

    file_name: str
    relative_path: str
    form: str
    size: int


@dataclass(frozen=True, kw_only=True)
class TieredSource(_Record):
    """A tiered dataset's ``source``: the tiered store exported, and its files."""

    path: str
    files: tuple[TieredSourceFile, ...]


@dataclass(frozen=True, kw_only=True)
class TieredManifest(_Manifest):
    """The manifest of a tiered store's dataset (``"rmqarrow-tiered-dataset"``)."""

    FORMAT: ClassVar[str] = TIERED_DATASET_FORMAT

    source: TieredSource


@dataclass(frozen=True, kw_only=True)
class RocksDBSource(_Record):
    """A RocksDB dataset's ``source``: the index exported."""

    path: str


@dataclass(frozen=True, kw_only=True)
class RocksDBManifest(_Manifest):
    """The manifest of a RocksDB message index's dataset (``"rmqarrow-rocksdb-dataset"``)."""

    FORMAT: ClassVar[str] = ROCKSDB_DATASET_FORMAT

    source: RocksDBSource
    #: the index's bookkeeping records, name -> value
    bookkeeping: Mapping[str, Any] | None = None
    #: how long the export took
    seconds: float | None = None


@dataclass(frozen=True, kw_only=True)
class PartsListing(_Record):
    """What listing a table's parts needs of a Delta dataset's record that names no
    format rmqarrow writes (a run another tool, or a test, pinned): the parts, the run,
    the versions pinned."""

    _what: ClassVar[str] = "run record"

    parts: tuple[PartRecord, ...] | None = None
    run: int | None = None
    delta: DeltaInfo | None = None

    @property
    def run_count(self) -> int:
        """How many runs updated the dataset since export (0: none)."""
        return self.run or 0

    @property
    def delta_version(self) -> int | None:
        """The pin table's version the record was read at (None: no Delta dataset)."""
        return None if self.delta is None else self.delta.version


#: A tiered or RocksDB dataset's manifest.
KindManifest = TieredManifest | RocksDBManifest
#: Any dataset kind's manifest.
AnyManifest = DatasetManifest | TieredManifest | RocksDBManifest

#: Each kind's manifest class, by the format its manifest declares.
MANIFEST_CLASSES: dict[str, type[AnyManifest]] = {
    c.FORMAT: c for c in (DatasetManifest, TieredManifest, RocksDBManifest)
}


def as_manifest(manifest: AnyManifest | Mapping[str, Any], where: object = "") -> AnyManifest:
    """``manifest`` typed: the record itself, or the JSON object (a writer's, or one a
    caller holds as a dict) read by its format; :class:`DatasetError` when it declares
    none rmqarrow writes, or is malformed."""
    if isinstance(manifest, DatasetManifest | TieredManifest | RocksDBManifest):
        return manifest
    typed = manifest_of(dict(manifest), where)
    if typed is None:
        raise DatasetError(
            f"{where or 'manifest'}: format {manifest.get('format')!r} is not one of "
            f"{', '.join(map(repr, MANIFEST_CLASSES))}; {_REMEDY}"
        )
    return typed


def manifest_of(raw: object, where: object = "") -> AnyManifest | None:
    """The typed manifest of the JSON object ``raw`` by the format it declares (None: no
    format rmqarrow writes); :class:`DatasetError` when it declares one and is malformed."""
    fmt = raw.get("format") if isinstance(raw, dict) else None
    cls = MANIFEST_CLASSES.get(fmt) if isinstance(fmt, str) else None
    return None if cls is None else cls.from_dict(raw, where)
