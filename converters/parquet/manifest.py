"""The dataset manifest: what a dataset holds and where it came from.

A dataset of Delta tables keeps it as the record of the run its ``files`` commit pins (all
but ``parts``, which the tables hold: :func:`delta_manifest` puts them back); a dataset of
the older layout, which rmqarrow no longer writes, as ``_rmqarrow.json``.  It lets
``import`` check a dataset's completeness and ``verify`` tell whether a dataset is stale
against its store (a source file added, removed, resized or modified since).
Keys (all required unless marked optional)::

    format          "rmqarrow-dataset"
    layout_version  1 (see rmqarrow.converters.parquet.export)
    schema_version  rmqarrow.converters.schema.SCHEMA_VERSION
    writer          free text, e.g. "rmqarrow 0.1.0 (local)"
    created_at      ISO 8601 UTC
    source          {"path": absolute store dir or file,
                     "files": [{"file_name", "size", "mtime_ns", "hash_slot_num",
                                "index_num", "index_count", "header_sha256" (optional:
                                sha256 of the file's 40 header bytes), "begin_timestamp",
                                "begin_phy_offset" (optional: the header's identity, fixed
                                once a file has entries), "deleted_in_store" (optional:
                                true when an incremental export kept a file the broker
                                has deleted), "parts" (optional: the data parts holding
                                this file's slots and entries)}, ...] oldest first}
    tables          {"files": {"rows": n}, "slots": {"rows": n}, "entries": {"rows": n}}
                    and optionally "messages": {"rows": n, "commitlog": absolute path}
                    when the dataset holds messages/ (rmqarrow.converters.arrow.messages; not part
                    of
                    the index, so import and verify ignore it)
    entries_order   optional: sort columns of each entries part, e.g. ["slot", "position"]
    parquet         optional: writer settings (free form)
    parts           optional (older datasets lack it; checked whenever present): every data
                    part of the dataset, [{"path": "entries/part-00000.parquet" (relative,
                    "/"-separated), "rows": n, "size": bytes, "footer_sha256": hex of the
                    Parquet footer, "sha256": hex of the whole file}, ...]; readers refuse
                    a dataset whose parts differ (extra, missing, changed)
                    (:func:`check_parts`)
    run             optional: how many incremental runs updated the dataset (0 or absent:
                    none); see rmqarrow.converters.parquet.incremental
    superseded      optional, the older layout only: parts its last run replaced, not yet
                    deleted (a reader of this manifest never counts them)
    updated_at      optional: when the last incremental run switched it (Unix seconds)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.delta.layout import LOG_DIR, PIN_TABLE, is_delta_dataset
from rmqarrow.converters.manifests import (
    AnyManifest,
    DatasetManifest,
    IndexSourceFile,
    PartsListing,
)
from rmqarrow.converters.parquet.parts import table_parts, typed_manifest
from rmqarrow.converters.parquet.snapshot import (
    TRUST_ENV,
    dataset_versions,
    delta_manifest,
    pinned_manifest,
    pinned_snapshot,
    trusted,
)
from rmqarrow.converters.schema import SCHEMA_VERSION

from rmqarrow._paths import DatasetLocation, ObjectLocation, dataset_location
from rmqarrow.errors import DatasetError, InvalidValueError, UsageError
from rmqarrow.format.detect import MANIFEST_NAME
from rmqarrow.format.layout import HEADER_DTYPE, HEADER_SIZE, Geometry
from rmqarrow.format.naming import list_index_files
from rmqarrow.format.times import as_epoch_ms

__all__ = [
    "FORMAT",
    "LAYOUT_VERSION",
    "MANIFEST_NAME",
    "TRUST_ENV",
    "AsOf",
    "SourceDrift",
    "as_dataset_manifest",
    "check_parts",
    "checked_manifest",
    "dataset_manifest",
    "dataset_versions",
    "delta_manifest",
    "load_manifest_json",
    "new_manifest",
    "one_snapshot",
    "part_record",
    "part_records",
    "pinned_manifest",
    "pinned_snapshot",
    "read_manifest",
    "snapshot_point",
    "source_drift",
    "source_file_info",
    "stale_reasons",
    "trusted",
]

FORMAT = "rmqarrow-dataset"
LAYOUT_VERSION = 1


def source_file_info(path: Path, geometry: Geometry, index_count: int) -> dict[str, Any]:
    """The manifest's record of one native file read with ``geometry``."""
    st = path.stat()
    identity = _header_identity(path)
    return {
        **identity,
        "file_name": path.name,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "hash_slot_num": geometry.hash_slot_num,
        "index_num": geometry.index_num,
        "index_count": index_count,
        "header_sha256": _header_digest(path),
    }


def _header_identity(path: Path) -> dict[str, int]:
    """The header fields that never change once a file has entries: a file whose
    identity differs from the recorded one was replaced, not appended to."""
    raw = _header_bytes(path)
    if len(raw) < HEADER_SIZE:
        return {}
    h = np.frombuffer(raw, dtype=HEADER_DTYPE, count=1)[0]
    return {
        "begin_timestamp": int(h["begin_timestamp"]),
        "begin_phy_offset": int(h["begin_phy_offset"]),
    }


def _header_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(HEADER_SIZE)


def _header_digest(path: Path) -> str:
    """sha256 of an index file's header: RocketMQ rewrites it on every put (count, end
    time, end offset), so it tells a file written since export from a copy of it, which
    the modification time cannot (``cp`` without ``-p`` gives every copy a new one)."""
    return hashlib.sha256(_header_bytes(path)).hexdigest()


def new_manifest(
    source: str | os.PathLike[str],
    files: list[dict[str, Any]],
    rows: dict[str, int],
    *,
    writer: str,
    extra: dict[str, Any] | None = None,
    messages: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A manifest for a dataset of ``source`` (a store dir or one file); ``messages``: the
    ``tables`` entry of the messages table, when the dataset holds one."""
    tables: dict[str, Any] = {t: {"rows": int(rows[t])} for t in ("files", "slots", "entries")}
    if messages is not None:
        tables["messages"] = messages
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "layout_version": LAYOUT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "writer": writer,
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "source": {"path": str(Path(source).absolute()), "files": files},
        "tables": tables,
    }
    manifest.update(extra or {})
    return manifest


_TABLE_DIRS = ("files", "slots", "entries", "messages")
_FOOTER_MAX = 1 << 26  # a footer larger than 64 MiB is no rmqarrow dataset's


def _footer_digest(path: Path, size: int) -> str:
    """sha256 of the Parquet footer (metadata and its length): cheap, and any change of
    rows, row groups or statistics changes it."""
    with open(path, "rb") as fh:
        if size < 12:
            raise DatasetError(f"{path}: {size} bytes; not a Parquet file (truncated?)")
        fh.seek(size - 8)
        tail = fh.read(8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != b"PAR1" or length > min(size - 12, _FOOTER_MAX):
            raise DatasetError(f"{path}: no Parquet footer; not a Parquet file (truncated?)")
        fh.seek(size - 8 - length)
        return hashlib.sha256(fh.read(length) + tail).hexdigest()


def _data_parts(
    dataset_dir: Path, manifest: AnyManifest | PartsListing | None = None
) -> list[Path]:
    """Every data part (absolute paths), listed by ``manifest`` when given."""
    out: list[Path] = []
    for table in _TABLE_DIRS:
        if (dataset_dir / table).is_dir():
            out += table_parts(dataset_dir, table, manifest)
    return out


def part_record(dataset_dir: Path, part: Path) -> dict[str, Any]:
    """The ``parts`` record of one data part (path, rows, size, footer and whole-file
    sha256).  A writer computes it as soon as the part is closed, while its bytes are
    still in the page cache (and on the writer's thread, beside the others)."""
    size = part.stat().st_size
    with open(part, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    return {
        "path": part.relative_to(dataset_dir).as_posix(),
        "rows": pq.ParquetFile(part).metadata.num_rows,
        "size": size,
        "footer_sha256": _footer_digest(part, size),
        "sha256": digest,
    }


def part_records(
    dataset_dir: Path, known: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The ``parts`` list of a manifest for the data parts now in ``dataset_dir``; parts
    whose record is in ``known`` (by path) are not read again."""
    known = known or {}
    records = []
    base = dataset_dir.absolute()
    for p in _data_parts(dataset_dir):
        rel = p.relative_to(base).as_posix()
        records.append(known[rel] if rel in known else part_record(dataset_dir, p))
    return records


def _whole_digests(parts: dict[str, Path]) -> dict[str, str | OSError]:
    """sha256 of each part (or the error reading it), two parts at a time: hashlib
    releases the GIL, so a large dataset hashes on both cores."""

    def digest(p: Path) -> str | OSError:
        try:
            with open(p, "rb") as fh:
                return hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError as exc:
            return exc

    with ThreadPoolExecutor(min(2, max(len(parts), 1))) as pool:
        return dict(zip(parts, pool.map(digest, parts.values()), strict=True))


def check_parts(
    dataset_dir: str | os.PathLike[str],
    manifest: AnyManifest | PartsListing | dict[str, Any] | None = None,
    *,
    full: bool = False,
) -> None:
    """Refuse (:class:`DatasetError`, one line) a dataset whose data parts are not the ones
    its manifest lists: a part added, missing, resized or with another footer (with
    ``full``, another whole-file checksum).  A manifest without ``parts`` (written before
    they were recorded), or no manifest at all (another writer's dataset, read by the
    engines as the layout allows), is not checked; ``import`` requires the manifest.
    Parts an incremental run wrote but has not committed (or, in the older layout,
    replaced and not yet deleted) are no part of the dataset and not counted
    (:func:`rmqarrow.converters.parquet.parts.not_committed`)."""
    root = Path(dataset_dir).absolute()
    typed: AnyManifest | PartsListing | None
    if manifest is None:
        if not (root / MANIFEST_NAME).exists() and not is_delta_dataset(root):
            return  # another writer's dataset: no manifest to check against
        typed = dataset_manifest(root)
    else:
        typed = typed_manifest(root, manifest)
    if typed is None or typed.parts is None:
        return
    want = {r.path: r for r in typed.parts}
    # the parts as this manifest sees them: one snapshot, whatever a writer switches
    have = {p.relative_to(root).as_posix(): p for p in _data_parts(root, typed)}
    if typed.delta is not None:
        # a Delta run lists its parts: those on disk beside them (replaced by later runs,
        # a killed run's) are no part of it, and one it lists may be gone
        have = {rel: p for rel, p in have.items() if p.exists()}
    hint = f"; re-export it, or set {TRUST_ENV}=1 to read it anyway"
    extra = sorted(set(have) - set(want))
    if extra:
        raise DatasetError(
            f"{root}: part {extra[0]} is not in the manifest ({len(extra)} extra part(s): "
            f"copied or left over?){hint}"
        )
    missing = sorted(set(want) - set(have))
    if missing:
        raise DatasetError(
            f"{root}: part {missing[0]} listed in the manifest is missing "
            f"({len(missing)} missing){hint}"
        )
    recorded = {rel: p for rel, p in have.items() if want[rel].sha256 is not None}
    digests = _whole_digests(recorded) if full else {}
    for rel, p in have.items():
        rec = want[rel]
        try:
            size = p.stat().st_size
            if size != rec.size:
                raise DatasetError(
                    f"{p}: {size} bytes, the manifest says {rec.size}: changed since export{hint}"
                )
            if rec.footer_sha256 is None:
                # a Delta table's part: its add action records the rows, not the footer
                _same_rows(p, rec.rows, hint)
            elif _footer_digest(p, size) != rec.footer_sha256:
                raise DatasetError(
                    f"{p}: Parquet footer differs from the manifest's: changed since export{hint}"
                )
            if full and rec.sha256 is not None:
                digest = digests[rel]
                if isinstance(digest, OSError):
                    raise digest
                if digest != rec.sha256:
                    raise DatasetError(
                        f"{p}: checksum differs from the manifest's: changed since export{hint}"
                    )
        except OSError as exc:
            raise DatasetError(f"{p}: unreadable: {exc.strerror or exc}") from None


def _same_rows(part: Path, rows: int, hint: str) -> None:
    """Refuse a part whose footer counts other rows than its record."""
    try:
        have = pq.ParquetFile(part).metadata.num_rows
    except pa.ArrowException as exc:
        raise DatasetError(f"{part}: not a readable Parquet file: {exc}{hint}") from None
    if have != rows:
        raise DatasetError(
            f"{part}: {have} rows, the dataset's table says {rows}: changed since export{hint}"
        )


def load_manifest_json(dataset_dir: str | os.PathLike[str]) -> Any:
    """The parsed ``_rmqarrow.json`` of ``dataset_dir``, whatever format it declares;
    :class:`DatasetError` (one line) when it is missing, unreadable or not JSON."""
    path = Path(dataset_dir) / MANIFEST_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: missing; not an rmqarrow dataset (or incomplete)") from None
    except PermissionError:
        raise DatasetError(f"{path}: permission denied; cannot read the manifest") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise DatasetError(f"{path}: unreadable manifest: {str(exc)[:200]}") from None


#: What ``as_of`` takes: a version (an int), a time (a ``datetime``, a ``date``), or text
#: of either (:func:`snapshot_point`).
AsOf = int | str | _dt.datetime | _dt.date

#: An integer ``as_of`` below this is a version; at or above it, epoch milliseconds (a
#: dataset never reaches 10^8 versions; the epoch-seconds band between 10^8 and 10^11 is
#: refused by the time parser, naming the milliseconds to pass).
_VERSION_LIMIT = 10**8


def snapshot_point(as_of: object) -> int | _dt.datetime:
    """A version (int) or an aware time from what a reader gave as ``as_of``: an int
    (or its digits) is a version unless it is large enough to be epoch milliseconds;
    anything else is a time as every time option takes it
    (:func:`rmqarrow.format.times.as_epoch_ms`: ISO 8601, local zone when none given)."""
    value: object = as_of
    if isinstance(as_of, str) and as_of.strip().replace("_", "").isdigit():
        value = int(as_of.strip().replace("_", ""))
    elif isinstance(as_of, str) and not as_of.strip().lstrip("-").isdigit():
        try:
            _dt.datetime.fromisoformat(as_of.strip().replace("z", "Z"))
        except ValueError:
            raise UsageError(
                f"as_of {as_of!r}: expected a version (a number, as `rmqarrow info DATASET` "
                "lists them) or a time: ISO 8601 (2026-01-15T10:20:30, with +08:00 or Z for "
                "a zone; local zone when none) or epoch milliseconds"
            ) from None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _VERSION_LIMIT:
        return value
    ms = as_epoch_ms("as_of", value)
    if ms < 0:
        raise InvalidValueError(f"as_of {as_of}: a version is 0 or more")
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC)


@contextmanager
def one_snapshot(dataset_dir: str | os.PathLike[str]) -> Iterator[dict[str, Any] | None]:
    """Within this block, every reader of ``dataset_dir`` lists its tables by one manifest,
    read here once (or the one a caller pinned already), which the block yields (None for
    a folder of Parquet parts without one).  Every reader that lists several tables runs
    inside one: listed one manifest read at a time, a run committed between two listings
    (an incremental run, a follow round) would pair one run's ``files`` with another
    run's ``entries``."""
    pinned = pinned_manifest(dataset_dir)
    if pinned is not None:
        yield pinned
        return
    try:
        manifest = read_manifest(dataset_dir)
    except DatasetError:
        # none, or not one rmqarrow reads: each reader then reports (or, trusting the
        # dataset, lists the folders) as it does on its own
        yield None
        return
    with pinned_snapshot(dataset_dir, manifest):
        yield manifest


def read_manifest(
    dataset_dir: str | os.PathLike[str] | ObjectLocation, *, as_of: int | _dt.datetime | None = None
) -> dict[str, Any]:
    """The manifest of a dataset as JSON holds it (:func:`dataset_manifest`, the typed
    record, as a dict); :class:`DatasetError` when missing, unreadable or foreign."""
    return dataset_manifest(dataset_dir, as_of=as_of).to_dict()


def dataset_manifest(
    dataset_dir: str | os.PathLike[str] | ObjectLocation, *, as_of: int | _dt.datetime | None = None
) -> DatasetManifest:
    """The manifest of a dataset, every key checked; :class:`DatasetError` when missing,
    unreadable, foreign or malformed (naming the key, what it should be and what it is).

    A dataset in the Delta layout has no manifest file: its manifest is the one its
    pinned run recorded (:func:`delta_manifest`; ``as_of`` a version or time of it).
    ``as_of`` on a dataset in the manifest layout is refused: it keeps no versions."""
    where = dataset_location(dataset_dir)
    path: DatasetLocation = where / MANIFEST_NAME
    pinned = pinned_manifest(where) if as_of is None else None
    if pinned is not None:
        return checked_manifest(pinned, path)
    if is_delta_dataset(where):
        path = where / PIN_TABLE / LOG_DIR
        manifest: Any = delta_manifest(where, as_of)
    elif isinstance(where, ObjectLocation):
        raise DatasetError(
            f"{where}: no dataset here (no Delta table {PIN_TABLE}/); export one with "
            "`rmqarrow export STORE URI`"
        )
    elif as_of is not None:
        raise InvalidValueError(
            f"{dataset_dir}: a dataset in the manifest layout keeps no versions (as of "
            f"{as_of}); convert it to Delta tables to keep them"
        )
    else:
        manifest = load_manifest_json(where)
    return checked_manifest(manifest, path)


def checked_manifest(raw: object, path: object) -> DatasetManifest:
    """The index dataset manifest ``raw`` (parsed JSON), checked: its format, schema and
    layout versions, every key it has, the rows of the three index tables.  ``path``:
    where it was read, as an error names it."""
    fmt = raw.get("format") if isinstance(raw, dict) else None
    if fmt != FORMAT:
        raise DatasetError(f"{path}: format is not {FORMAT!r}")
    manifest = DatasetManifest.from_dict(raw, str(path))
    if manifest.schema_version != SCHEMA_VERSION:
        raise DatasetError(
            f"{path}: schema_version {manifest.schema_version!r}, expected {SCHEMA_VERSION!r}"
        )
    if manifest.layout_version != LAYOUT_VERSION:
        raise DatasetError(
            f"{path}: layout_version {manifest.layout_version!r}, expected {LAYOUT_VERSION}"
        )
    for t in ("files", "slots", "entries"):
        manifest.rows(t, str(path))
    return manifest


def as_dataset_manifest(
    manifest: DatasetManifest | dict[str, Any], where: object = ""
) -> DatasetManifest:
    """``manifest`` typed: a caller outside the library may still hand over the dict
    :func:`read_manifest` gives."""
    return manifest if isinstance(manifest, DatasetManifest) else checked_manifest(manifest, where)


@dataclass(frozen=True)
class SourceDrift:
    """How a dataset's source store differs now from what the dataset recorded of it
    (:func:`source_drift`): read-only, from the store's file names, sizes and headers."""

    #: the store (dir or file) compared
    path: str
    #: False when it no longer exists on this machine (every other figure then empty)
    found: bool
    #: index files in the store the dataset does not hold
    files_added: list[str] = field(default_factory=list)
    #: files the dataset holds the store no longer has (an incremental export's files
    #: kept on purpose, ``deleted_in_store``, are not counted)
    files_gone: list[str] = field(default_factory=list)
    #: files of both whose size or header differs
    files_changed: list[str] = field(default_factory=list)
    #: entries the store's headers count now (None: not found)
    store_entries: int | None = None
    #: entries the store holds the dataset lacks: those of added files, those written to
    #: a file since export, all of a file replaced since (same name, another identity)
    entries_missing: int | None = None
    #: one line per difference, as ``verify`` prints them (:func:`stale_reasons`)
    reasons: list[str] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        """True when the store has changed since export (or is gone)."""
        return bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "stale": self.stale}


def source_drift(
    dataset_dir: str | os.PathLike[str],
    store: str | os.PathLike[str] | None = None,
    manifest: DatasetManifest | dict[str, Any] | None = None,
) -> SourceDrift:
    """How the dataset's store differs now from what the dataset recorded at export.

    ``store`` defaults to the manifest's source path; ``manifest``: the one the caller
    read (else it is read here).  Compares the set of file names and each file's size
    and header with what the manifest recorded: the content, never the modification
    time, so a byte-identical copy of the store is up to date.  (A manifest written
    before headers were recorded is compared by the header's ``indexCount``.)  Only
    headers are read.
    """
    typed = (
        dataset_manifest(dataset_dir)
        if manifest is None
        else as_dataset_manifest(manifest, Path(dataset_dir) / MANIFEST_NAME)
    )
    src = Path(store) if store is not None else Path(typed.source.path)
    recorded = {
        f.file_name: f for f in typed.source.files if not f.deleted_in_store
    }  # kept on purpose: not stale
    if src.is_file():
        current = {src.name: src}
    elif src.is_dir():
        current = {p.name: p for p in list_index_files(src)}
    else:
        return SourceDrift(str(src), False, reasons=[f"{src}: source no longer exists"])
    added = sorted(set(current) - set(recorded))
    gone = sorted(set(recorded) - set(current))
    reasons = [f"{n}: in the store, not in the dataset" for n in added]
    reasons += [f"{n}: in the dataset, gone from the store" for n in gone]
    changed: list[str] = []
    store_entries = missing = 0
    for name in sorted(current):
        raw = _header_bytes(current[name])
        entries = _header_entries(raw)
        store_entries += entries
        rec = recorded.get(name)
        if rec is None:
            missing += entries
            continue
        size = current[name].stat().st_size
        why = None
        if size != rec.size:
            why = f"size {size}, dataset has {rec.size}"
        else:
            change = _header_change(raw, rec)
            why = None if change is None else f"modified since export ({change})"
        if why is None:
            continue
        changed.append(name)
        reasons.append(f"{name}: {why}")
        identity = _recorded_identity(rec)
        if not identity or _header_identity(current[name]) == identity:
            missing += max(entries - max(rec.index_count - 1, 0), 0)
        else:  # another file under the same name: none of its entries are the dataset's
            missing += entries
    return SourceDrift(str(src), True, added, gone, changed, store_entries, missing, reasons)


def stale_reasons(
    dataset_dir: str | os.PathLike[str], store: str | os.PathLike[str] | None = None
) -> list[str]:
    """Why a dataset no longer matches its store (empty list: up to date); the
    :attr:`SourceDrift.reasons` of :func:`source_drift`."""
    return source_drift(dataset_dir, store).reasons


def _recorded_identity(rec: IndexSourceFile) -> dict[str, int]:
    """The header identity a file record holds (empty when it predates identities)."""
    identity = {"begin_timestamp": rec.begin_timestamp, "begin_phy_offset": rec.begin_phy_offset}
    return {k: v for k, v in identity.items() if v is not None}


def _header_entries(raw: bytes) -> int:
    """Entries an index file's header counts (``indexCount`` - 1; 0 for a short one)."""
    if len(raw) < HEADER_SIZE:
        return 0
    return max(int(np.frombuffer(raw, dtype=HEADER_DTYPE, count=1)["index_count"][0]) - 1, 0)


def _header_change(raw: bytes, rec: IndexSourceFile) -> str | None:
    """What differs between a file's header bytes now and at export (None: nothing)."""
    if len(raw) < HEADER_SIZE:
        return f"{len(raw)} header bytes"
    count = _header_entries(raw) + 1
    if rec.header_sha256 is None:
        same = count == max(rec.index_count, 1)
    else:
        same = hashlib.sha256(raw).hexdigest() == rec.header_sha256
    if same:
        return None
    return f"header differs: indexCount {count}, dataset has {rec.index_count}"
