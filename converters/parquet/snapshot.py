"""The snapshot of a dataset a reader reads by: the one pinned for this thread, or a
Delta dataset's pinned run with its tables' parts.

Below :mod:`~rmqarrow.converters.parquet.parts` (which lists a table's parts by it) and
:mod:`~rmqarrow.converters.parquet.manifest` (which reads and checks manifests, and
re-exports these names); both read a dataset's snapshot here.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import pyarrow as pa
from rmqarrow.converters.delta.layout import is_delta_dataset, pin_table_of
from rmqarrow.converters.manifests import DeltaInfo

from rmqarrow._paths import DatasetLocation, ObjectLocation, dataset_location
from rmqarrow.errors import InvalidValueError

__all__ = [
    "TRUST_ENV",
    "dataset_versions",
    "delta_manifest",
    "pinned_manifest",
    "pinned_snapshot",
    "trusted",
]

#: Set to 1 to skip :func:`check_parts` in DuckDB, Spark, ``sql`` and ``query`` (the
#: command line's ``--trust-dataset`` where a command has it).
TRUST_ENV = "RMQARROW_TRUST_DATASET"


def trusted() -> bool:
    """True when the environment asks to skip :func:`check_parts` (``TRUST_ENV``)."""
    return os.environ.get(TRUST_ENV, "") not in ("", "0")


#: The snapshot a reader pinned (:func:`pinned_snapshot`): (dataset folder, manifest).
_PINNED: ContextVar[tuple[str, dict[str, Any]] | None] = ContextVar(
    "rmqarrow_pinned_snapshot", default=None
)


def _key(dataset_dir: str | os.PathLike[str] | ObjectLocation) -> str:
    where = dataset_location(dataset_dir)
    return str(where) if isinstance(where, ObjectLocation) else os.path.abspath(where)


@contextmanager
def pinned_snapshot(
    dataset_dir: str | os.PathLike[str] | ObjectLocation, manifest: dict[str, Any]
) -> Iterator[None]:
    """Within this block (this thread), every reader of ``dataset_dir`` that reads its
    latest manifest (:func:`read_manifest` without ``as_of``, and so the parts lists of
    :func:`rmqarrow.converters.parquet.parts.table_parts`, DuckDB's views, Spark's tables,
    scans, import, verify and stats) reads ``manifest`` instead: the snapshot a
    :class:`~rmqarrow.store.DatasetStore` opened ``as_of`` a version pins, read once."""
    token = _PINNED.set((_key(dataset_dir), manifest))
    try:
        yield
    finally:
        _PINNED.reset(token)


def pinned_manifest(dataset_dir: str | os.PathLike[str] | ObjectLocation) -> dict[str, Any] | None:
    """The manifest :func:`pinned_snapshot` pins for ``dataset_dir`` here, or None."""
    pinned = _PINNED.get()
    return pinned[1] if pinned is not None and pinned[0] == _key(dataset_dir) else None


def dataset_versions(
    dataset_dir: str | os.PathLike[str] | ObjectLocation,
) -> list[dict[str, Any]]:
    """The versions of a dataset of Delta tables a reader can ask for, oldest first:
    ``{"version", "time" (epoch ms), "app", "run", "readable"}``; ``readable`` is False
    for those a vacuum deleted files of (found by bisection: a vacuum keeps the newest
    runs).  A dataset in the manifest layout has none: []."""
    # the Delta engine loads on first use: deltalake's library must not map for native stores
    from rmqarrow.converters.delta.run import missing_files, open_snapshot, pin_history

    if not is_delta_dataset(dataset_dir):
        return []

    pin_table = pin_table_of(dataset_dir)
    pins = pin_history(dataset_dir, pin_table=pin_table)
    lo, hi = 0, len(pins) - 1  # the latest is readable (its files are never vacuumed)
    while lo < hi:
        mid = (lo + hi) // 2
        if missing_files(open_snapshot(dataset_dir, as_of=pins[mid].version, pin_table=pin_table)):
            lo = mid + 1
        else:
            hi = mid
    return [
        {
            "version": p.version,
            "time": p.timestamp,
            "app": None if p.app is None else p.app[0],
            "run": None if p.app is None else p.app[1],
            "readable": i >= lo,
        }
        for i, p in enumerate(pins)
    ]


def _vacuumed(root: DatasetLocation, version: int, missing: list[str]) -> InvalidValueError:
    readable = [v["version"] for v in dataset_versions(root) if v["readable"]]
    kept = (
        (f"{readable[0]}" if len(readable) == 1 else f"{readable[0]} to {readable[-1]}")
        if readable
        else "none"
    )
    return InvalidValueError(
        f"{root}: version {version} was vacuumed ({len(missing)} of its files are deleted, "
        f"e.g. {missing[0]}); the versions that can be read: {kept}"
    )


def delta_manifest(
    dataset_dir: str | os.PathLike[str] | ObjectLocation,
    as_of: int | _dt.datetime | None = None,
    pin_table: str | None = None,
) -> dict[str, Any]:
    """The manifest of a dataset in the Delta layout: the pinned run's record (the pin's
    ``source``: what a manifest holds but its parts) with ``parts`` read from the tables
    at the pinned versions (path, rows, size; the checksums Delta does not record come
    from the record's ``digests``, when the run recorded them) and ``delta``, the pin
    table's version and every table's.  One snapshot: a reader that lists the
    parts of each table by it (:func:`rmqarrow.converters.parquet.parts.table_parts`)
    never mixes two runs, whatever a writer commits meanwhile.  ``pin_table``: the
    dataset kind's pin table (None: the one there, :func:`~rmqarrow.converters.delta.
    layout.pin_table_of`)."""
    # the Delta engine loads on first use: deltalake's library must not map for native stores
    from rmqarrow.converters.delta.run import missing_files, open_snapshot

    pin = pin_table_of(dataset_dir) if pin_table is None else pin_table
    snap = open_snapshot(dataset_dir, as_of=as_of, pin_table=pin)
    if as_of is not None and snap.version != open_snapshot(dataset_dir, pin_table=pin).version:
        missing = missing_files(snap)
        if missing:
            # the dataset as the user named it (a URI stays one: never a local path)
            raise _vacuumed(dataset_location(dataset_dir).absolute(), snap.version, missing)
    manifest: dict[str, Any] = dict(snap.pin.source or {})
    digests = manifest.pop("digests", None)
    digests = digests if isinstance(digests, dict) else {}
    parts = []
    for table in sorted(snap.versions):
        actions = pa.table(snap.delta_table(table).get_add_actions(flatten=True))
        for path, size, rows in zip(
            actions.column("path").to_pylist(),
            actions.column("size_bytes").to_pylist(),
            actions.column("num_records").to_pylist(),
            strict=True,
        ):
            rel = f"{table}/{path}"
            sums = digests.get(rel)
            parts.append(
                {
                    "path": rel,
                    "rows": rows,
                    "size": size,
                    **(sums if isinstance(sums, dict) else {}),
                }
            )
    delta = DeltaInfo(version=snap.version, versions=dict(snap.versions))
    return {
        **manifest,
        "parts": sorted(parts, key=lambda r: str(r["path"])),
        "delta": delta.to_dict(),
    }
