"""A run across a dataset's Delta tables, and the one consistent snapshot readers open.

Delta commits one table at a time; a run (an export, an incremental round, a prune)
changes several.  The run commits its data tables first, each on the version the run
read (:func:`rmqarrow.converters.delta.commit.commit_table`), and finishes with one commit
to the *pin table* (``files`` for an index dataset) whose ``commitInfo`` records, under
:data:`META_KEY`, the version of every table the run leaves (``versions``), the run's
application transaction and the caller's source tracking.  That commit is the run's
commit point:

* :func:`open_snapshot` reads the pin table (its latest version, or one ``as_of`` a
  version or time), then each table at the pinned version: a reader never mixes two
  runs, whatever a writer commits meanwhile;
* a run killed before its pin commit leaves data-table versions past the pin, read by
  no pinned reader; the next run (:func:`converge`) restores those tables to the pinned
  versions first, so it builds on what the pin says;
* a concurrent run that commits first makes this run's next commit fail
  (:class:`CommitConflictError`): one run's pin wins, the other's commits are orphans
  the next run restores; nothing the winner committed is lost.

:func:`already_committed` is the guard for re-runs: a run that carries an application
transaction (app id, version) the pin table already holds commits nothing (Delta records
these transactions but delta-rs does not refuse a repeated one; the check is here).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as pads
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError
from pyarrow import fs as pafs
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA
from rmqarrow.converters.delta.commit import commit_table, live_files, table_version
from rmqarrow.converters.delta.layout import META_KEY, PIN_TABLE
from rmqarrow.converters.manifests import RunPin
from rmqarrow.converters.schema import ROCKSDB_SCHEMAS, SCHEMAS, TIERED_SCHEMAS

from rmqarrow._crash import crash_point
from rmqarrow._paths import DatasetLocation, ObjectLocation, dataset_location
from rmqarrow.errors import (
    CommitConflictError,
    DatasetError,
    InvalidValueError,
    StoreNotFoundError,
)

if TYPE_CHECKING:
    import pyarrow.dataset as pads

__all__ = [
    "META_KEY",
    "PIN_TABLE",
    "PinVersion",
    "Snapshot",
    "TableChange",
    "already_committed",
    "commit_run",
    "converge",
    "missing_files",
    "open_snapshot",
    "pin_history",
    "table_schema",
    "vacuum",
]

#: How far back past non-run commits (a vacuum's, another tool's) a pin is looked for.
_PIN_LOOKBACK = 64


def table_schema(table: str) -> pa.Schema:
    """The published schema of ``table`` (every rmqarrow table, messages included)."""
    if table == "messages":
        return MESSAGES_SCHEMA
    for schemas in (SCHEMAS, TIERED_SCHEMAS, ROCKSDB_SCHEMAS):
        if table in schemas:
            return schemas[table]
    raise InvalidValueError(f"unknown table {table!r}; no published schema has that name")


@dataclass(frozen=True)
class TableChange:
    """What a run does to one table: parts to add (files already in the table folder)
    and parts to remove (paths relative to it)."""

    add: Sequence[str | os.PathLike[str] | ObjectLocation] = ()
    remove: Sequence[str] = ()


@dataclass(frozen=True)
class Snapshot:
    """One run's tables: each at the version the run's pin names."""

    root: DatasetLocation
    #: the pin table's version read (the run's version, as ``--as-of`` names it)
    version: int
    #: every table's pinned version
    versions: Mapping[str, int]
    #: the pin's ``commitInfo`` entry (versions, app transaction, the run's record)
    pin: RunPin = field(default_factory=lambda: RunPin(versions={}))

    def delta_table(self, table: str) -> DeltaTable:
        """``table`` at its pinned version."""
        if table not in self.versions:
            raise DatasetError(
                f"{self.root}: no table {table!r} in this snapshot; it has "
                f"{', '.join(sorted(self.versions))}"
            )
        try:
            return DeltaTable(str(self.root / table), version=self.versions[table])
        except (DeltaError, OSError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DatasetError(
                f"{self.root / table}: cannot read version {self.versions[table]} of the "
                f"table the run pins ({reason}); the dataset is damaged: export it again"
            ) from None

    def files(self, table: str) -> list[str]:
        """The data files of ``table`` (absolute paths), sorted: the list any engine that
        reads Parquet reads to get exactly the table (DuckDB ``read_parquet([...])``,
        Spark without Delta's connector, pyarrow)."""
        return sorted(self.delta_table(table).file_uris())

    def dataset(self, table: str) -> pads.Dataset:
        """``table`` as a pyarrow Dataset over :meth:`files`, in its published schema
        (not Delta's type mapping: readers get the exact Arrow types of the export)."""
        return pads.dataset(self.files(table), schema=table_schema(table), format="parquet")


def _commit_info(table_dir: DatasetLocation, version: int) -> dict[str, Any]:
    """The ``commitInfo`` of one version, read from its log entry.  (delta-rs's
    ``history()`` always starts from the latest commit and numbers the entries from the
    loaded version, so it cannot name the commit of a version loaded in the past.)"""
    path = table_dir / "_delta_log" / f"{version:020d}.json"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read the commit: {exc.strerror or exc}") from None
    for line in lines:
        try:
            action = json.loads(line) if line.strip() else {}
        except (ValueError, RecursionError):
            raise DatasetError(f"{path}: not a Delta log entry (damaged)") from None
        if "commitInfo" in action:
            info = action["commitInfo"]
            return info if isinstance(info, dict) else {}
    return {}


def _pin_of(table_dir: DatasetLocation, version: int) -> RunPin | None:
    """The newest run pin at or below ``version`` (commits without one, such as a
    vacuum's, change no file list and are looked past), or None when there is none."""
    for v in range(version, max(version - _PIN_LOOKBACK, -1), -1):
        pin = RunPin.of_commit(_commit_info(table_dir, v).get(META_KEY), _log_entry(table_dir, v))
        if pin is not None:
            return pin
    return None


def _log_entry(table_dir: DatasetLocation, version: int) -> str:
    """The log entry of ``version``, as an error about its pin names it."""
    return str(table_dir / "_delta_log" / f"{version:020d}.json")


def open_snapshot(
    dataset: str | os.PathLike[str] | ObjectLocation,
    *,
    as_of: int | datetime | None = None,
    pin_table: str = PIN_TABLE,
) -> Snapshot:
    """The snapshot of ``dataset`` its last run pinned (``as_of``: the run that was
    current at that pin-table version or time)."""
    root = dataset_location(dataset).absolute()
    uri = str(root / pin_table)
    if not root.is_dir():
        raise StoreNotFoundError(f"{root}: no such dataset directory")
    if not DeltaTable.is_deltatable(uri):
        raise DatasetError(
            f"{root}: no Delta table {pin_table}/; not a dataset in the Delta layout"
        )
    try:
        table = DeltaTable(uri)
    except (DeltaError, OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DatasetError(
            f"{uri}: cannot read the table that pins the dataset's runs ({reason}); the "
            "dataset is damaged: export it again"
        ) from None
    latest = table.version()
    if isinstance(as_of, int) and not 0 <= as_of <= latest:
        raise InvalidValueError(
            f"{root}: no version {as_of}; the dataset has versions 0 to {latest}"
        )
    try:
        if as_of is not None:
            table.load_as_version(as_of)
    except (DeltaError, OSError, ValueError) as exc:
        raise DatasetError(f"{root}: cannot load {pin_table} as of {as_of}: {exc}") from None
    version = table.version()
    if isinstance(as_of, datetime):
        # delta-rs answers a time before the first commit with version 0: refused here
        made = int(_commit_info(root / pin_table, version).get("timestamp", 0))
        if as_of.timestamp() * 1000 < made:
            first = datetime.fromtimestamp(made / 1000, as_of.tzinfo).isoformat()
            raise InvalidValueError(
                f"{root}: nothing was exported as of {as_of.isoformat()}; the oldest version "
                f"kept ({version}) is from {first}"
            )
    pin = _pin_of(root / pin_table, version)
    if pin is None:
        raise DatasetError(
            f"{uri}: version {version} and the {_PIN_LOOKBACK} before it name no run; "
            "not committed by rmqarrow"
        )
    versions = dict(pin.versions)
    versions[pin_table] = version
    return Snapshot(root, version, versions, pin)


@dataclass(frozen=True)
class PinVersion:
    """One run's pin commit: a version a reader can ask for (``as_of``)."""

    #: the pin table's version
    version: int
    #: when it was committed (epoch milliseconds)
    timestamp: int
    #: the run's application transaction: app id and its version (the run number of an
    #: incremental run)
    app: tuple[str, int] | None


def pin_history(
    dataset: str | os.PathLike[str] | ObjectLocation, *, pin_table: str = PIN_TABLE
) -> list[PinVersion]:
    """Every run pinned in ``dataset`` (local, or on object storage), oldest first, as far
    back as the pin table's log goes (versions without a pin, a restore's or a vacuum's,
    are no run and left out)."""
    root = dataset_location(dataset).absolute()
    latest = open_snapshot(root, pin_table=pin_table).versions[pin_table]
    out = []
    for version in range(latest + 1):
        if not (root / pin_table / "_delta_log" / f"{version:020d}.json").is_file():
            continue  # cleaned up after a checkpoint: that version cannot be read
        info = _commit_info(root / pin_table, version)
        pin = RunPin.of_commit(info.get(META_KEY), _log_entry(root / pin_table, version))
        if pin is None:
            continue
        out.append(PinVersion(version, int(info.get("timestamp", 0)), pin.app))
    return out


def _gone(path: str) -> bool:
    """Whether a data file a snapshot lists is gone (local, or on object storage)."""
    where = dataset_location(path.removeprefix("file://"))
    if isinstance(where, ObjectLocation):
        fs, inner = where.filesystem()
        return bool(fs.get_file_info(inner).type == pafs.FileType.NotFound)
    return not where.is_file()


def missing_files(snapshot: Snapshot) -> list[str]:
    """The data files ``snapshot`` lists that are gone (a vacuum deleted them): a
    snapshot with any cannot be read."""
    return [
        path for table in sorted(snapshot.versions) for path in snapshot.files(table) if _gone(path)
    ]


def already_committed(
    dataset: str | os.PathLike[str] | ObjectLocation,
    app_id: str,
    version: int,
    *,
    pin_table: str = PIN_TABLE,
) -> bool:
    """Whether the run ``(app_id, version)`` (or a later one of that app) has landed: its
    pin commit carries the application transaction, so a re-run can commit nothing."""
    uri = str(dataset_location(dataset) / pin_table)
    if not DeltaTable.is_deltatable(uri):
        return False
    done = DeltaTable(uri).transaction_version(app_id)
    return done is not None and done >= version


def converge(
    dataset: str | os.PathLike[str] | ObjectLocation, *, pin_table: str = PIN_TABLE
) -> list[str]:
    """Bring every table back to what the last pin says (a run killed, or beaten by
    another, before its pin commit leaves versions past it); returns the tables changed.

    A pinned table whose latest files differ from its pinned version's is restored to
    that version; a table no pin names yet (created by a killed run) is emptied.  Run it
    holding the dataset's writer lock: it undoes whatever is not pinned, a concurrent
    run's commits in progress included."""
    root = dataset_location(dataset).absolute()
    pinned: Mapping[str, int] = {}
    snap = None
    if DeltaTable.is_deltatable(str(root / pin_table)):
        snap = open_snapshot(root, pin_table=pin_table)
        pinned = snap.versions
    changed = []
    props = CommitProperties(
        custom_metadata={META_KEY: {"restored_to_pin": None if snap is None else snap.version}},
        max_commit_retries=0,
    )
    children: list[DatasetLocation] = list(root.iterdir()) if root.is_dir() else []
    for child in sorted(children, key=str):
        table = child.name
        hidden = table.startswith(("_", "."))  # the manifest, staging, locks
        if table == pin_table or hidden or not child.is_dir():
            continue
        if not DeltaTable.is_deltatable(str(child)):
            continue
        latest = DeltaTable(str(child))
        if table in pinned:
            if latest.version() == pinned[table]:
                continue
            assert snap is not None
            if live_files(latest) == live_files(snap.delta_table(table)):
                continue  # a vacuum's or a no-op commit: the same files
            try:
                latest.restore(pinned[table], commit_properties=props)
            except CommitFailedError:
                raise CommitConflictError(
                    f"{child}: another writer committed while version {pinned[table]} was "
                    "being restored (the pinned one); nothing restored: run again"
                ) from None
        else:
            orphans = sorted(live_files(latest))
            if not orphans:
                continue
            commit_table(child, table_schema(table), remove=orphans, base_version=latest.version())
        changed.append(table)
    return changed


def _base_version(root: DatasetLocation, table: str, pinned: int | None) -> int | None:
    """The version a run commits ``table`` on: the latest, once :func:`converge` made its
    files the pinned version's (a restore is a version of its own).  Files that differ
    mean another writer committed since: refused rather than pinned with its rows."""
    latest = table_version(root / table)
    if latest is None or latest == pinned:
        return latest
    want = set() if pinned is None else set(live_files(DeltaTable(str(root / table), pinned)))
    if set(live_files(DeltaTable(str(root / table), latest))) != want:
        raise CommitConflictError(
            f"{root / table}: version {latest} holds files the pin does not (another writer "
            "is committing); nothing of this run landed: run again"
        )
    return latest


def commit_run(
    dataset: str | os.PathLike[str] | ObjectLocation,
    changes: Mapping[str, TableChange],
    *,
    app: tuple[str, int],
    source: Mapping[str, Any] | None = None,
    pin_table: str = PIN_TABLE,
    expect_pin: int | None = None,
) -> Snapshot | None:
    """Commit one run's ``changes`` (table -> :class:`TableChange`) to ``dataset`` and pin
    them; returns the new snapshot, or None when ``app`` was already committed.

    The data tables are committed in name order, each on its pinned version, then the
    pin table (always, even with no change of its own), whose ``commitInfo`` carries
    the pin: ``{"versions": {...}, "app": [id, version], "source": source}``.  A table
    not yet there is created.  Orphans of an earlier run are restored first
    (:func:`converge`).  :class:`CommitConflictError` when another writer committed
    meanwhile: this run's pin did not land, the next run restores what it committed.
    ``expect_pin``: the pin version the changes were made against; a run pinned since
    (its changes are not in them) is a :class:`CommitConflictError` too, before any commit.
    """
    root = dataset_location(dataset).absolute()
    if already_committed(root, app[0], app[1], pin_table=pin_table):
        return None
    converge(root, pin_table=pin_table)
    crash_point("delta:converged")
    pinned: dict[str, int] = {}
    base_pin: int | None = None
    if DeltaTable.is_deltatable(str(root / pin_table)):
        snap = open_snapshot(root, pin_table=pin_table)
        pinned = {t: v for t, v in snap.versions.items() if t != pin_table}
        base_pin = snap.version
    if expect_pin is not None and base_pin != expect_pin:
        raise CommitConflictError(
            f"{root}: another writer pinned version {base_pin} after this run read version "
            f"{expect_pin}; nothing of this run landed: run it again"
        )
    versions = dict(pinned)
    for table in sorted(changes):
        if table == pin_table:
            continue
        change = changes[table]
        base = _base_version(root, table, pinned.get(table))
        versions[table] = commit_table(
            root / table,
            table_schema(table),
            add=change.add,
            remove=change.remove,
            base_version=base,
            app=app,
        )
        crash_point("delta:table")
    own = changes.get(pin_table, TableChange())
    pin = RunPin(versions=versions, app=(app[0], app[1]), source=dict(source or {}))
    version = commit_table(
        root / pin_table,
        table_schema(pin_table),
        add=own.add,
        remove=own.remove,
        base_version=base_pin,
        metadata={META_KEY: pin.to_dict()},
        app=app,
    )
    crash_point("delta:pinned")
    return Snapshot(root, version, {**versions, pin_table: version}, pin)


def _kept_pins(root: DatasetLocation, pin_table: str, horizon_ms: int) -> dict[str, set[int]]:
    """The data-table versions pinned by every run still readable after ``horizon_ms``
    (the latest, and each one superseded after the horizon), table by table."""
    latest = DeltaTable(str(root / pin_table)).version()
    kept: dict[str, set[int]] = {}
    superseded_at: int | None = None  # when the version above replaced this one
    for version in range(latest, -1, -1):
        if superseded_at is not None and superseded_at < horizon_ms:
            break
        info = _commit_info(root / pin_table, version)
        pin = RunPin.of_commit(info.get(META_KEY), _log_entry(root / pin_table, version))
        if pin is not None:
            for table, v in pin.versions.items():
                kept.setdefault(table, set()).add(v)
        superseded_at = int(info.get("timestamp", 0))
    return kept


def vacuum(
    dataset: str | os.PathLike[str] | ObjectLocation,
    retention_hours: int,
    *,
    dry_run: bool = False,
    pin_table: str = PIN_TABLE,
) -> dict[str, list[str]]:
    """Delete the files no run within ``retention_hours`` reads; returns them, by table.

    Runs :func:`converge` first (not with ``dry_run``, which changes nothing: the parts a
    converge would undo are then not listed), so a run killed or beaten before its pin is
    undone and its parts become removed files like any other.  Each data table keeps the versions
    the pins of those runs name (a run removes data files moments before its pin
    commit, so a table's own retention alone could cut a snapshot the pin still
    offers); parts never committed (a killed run's) go once older than the retention,
    younger ones may be a running writer's.  Hold the dataset's writer lock.
    """
    if retention_hours < 0:
        raise InvalidValueError(f"retention_hours must be 0 or more, got {retention_hours}")
    root = dataset_location(dataset).absolute()
    snap = open_snapshot(root, pin_table=pin_table)
    if not dry_run:
        converge(root, pin_table=pin_table)
    horizon = int(time.time() * 1000) - retention_hours * 3_600_000
    kept = _kept_pins(root, pin_table, horizon)
    deleted = {}
    for table in sorted(snap.versions):
        files = DeltaTable(str(root / table)).vacuum(
            retention_hours,
            dry_run=dry_run,
            enforce_retention_duration=False,
            full=True,
            keep_versions=None if table == pin_table else sorted(kept.get(table, set())),
        )
        deleted[table] = sorted(files)
    return deleted
