"""One Delta table's commit of parts rmqarrow wrote: create, append, or replace.

Every commit is made on the version the caller planned against and on no other: delta-rs
would otherwise rebase a commit over one a concurrent writer landed in between (it does
for blind appends), and a run's tables would then hold another run's rows that the run's
pin does not account for.  With ``max_commit_retries=0`` the commit lands as exactly
``base_version + 1`` or fails, and the failure is :class:`CommitConflictError`.

delta-rs checks neither that a removed path is in the table (it commits the remove
anyway) nor that an added one is not (the new add silently takes its place); both would
corrupt a table without an error, so they are refused here, before anything is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema, Transaction
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions
from rmqarrow.converters.delta.actions import add_action, parquet_source

from rmqarrow._paths import DatasetLocation, ObjectLocation, dataset_location
from rmqarrow.errors import CommitConflictError, DatasetError, InvalidValueError

__all__ = ["commit_table", "live_files", "table_version"]


def table_version(table_dir: str | os.PathLike[str] | ObjectLocation) -> int | None:
    """The latest version of the Delta table in ``table_dir`` (None: no table there)."""
    uri = str(table_dir)
    if not DeltaTable.is_deltatable(uri):
        return None
    return DeltaTable(uri).version()


def live_files(table: DeltaTable) -> dict[str, int]:
    """The files of ``table``'s loaded version: relative path -> size in bytes."""
    actions = pa.table(table.get_add_actions())
    return dict(
        zip(
            actions.column("path").to_pylist(),
            actions.column("size_bytes").to_pylist(),
            strict=True,
        )
    )


def _same_columns(part: DatasetLocation, schema: pa.Schema) -> None:
    """Refuse a part whose columns are not the table's (names and types, in order)."""
    try:
        got = pq.read_schema(parquet_source(part))
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{part}: not a readable Parquet file: {exc}") from None
    want = [(f.name, f.type) for f in schema]
    if [(f.name, f.type) for f in got] != want:
        raise DatasetError(
            f"{part}: columns {', '.join(f'{f.name}:{f.type}' for f in got)}; the table "
            f"holds {', '.join(f'{n}:{t}' for n, t in want)}"
        )


def commit_table(
    table_dir: str | os.PathLike[str] | ObjectLocation,
    schema: pa.Schema,
    *,
    add: Sequence[str | os.PathLike[str] | ObjectLocation] = (),
    remove: Sequence[str] = (),
    base_version: int | None,
    metadata: Mapping[str, Any] | None = None,
    app: tuple[str, int] | None = None,
) -> int:
    """Commit ``add`` (Parquet files already in ``table_dir``) and ``remove`` (paths
    relative to it) to the Delta table there in one commit; returns the version it landed
    as.

    ``base_version`` None creates the table (refused when one is there); otherwise the
    commit is made on that version and lands as ``base_version + 1`` or raises
    :class:`CommitConflictError` (another writer landed a version since).  ``metadata``
    goes into the commit's ``commitInfo``; ``app`` (application id, version) records a
    Delta application transaction with it.  Nothing is deleted from disk: a removed
    file stays readable by the versions that hold it until a vacuum.
    """
    root = dataset_location(table_dir)
    uri = str(root)
    if base_version is not None and base_version < 0:
        raise InvalidValueError(
            f"base_version must be a table version (0 or more), got {base_version}"
        )
    props = CommitProperties(
        custom_metadata=dict(metadata) if metadata else None,
        max_commit_retries=0,
        app_transactions=[Transaction(app[0], app[1])] if app else None,
    )
    parts = [p if isinstance(p, ObjectLocation) else Path(p) for p in add]
    for p in parts:
        _same_columns(p, schema)
    adds = [add_action(root, p) for p in parts]
    if len({a.path for a in adds}) != len(adds):
        raise DatasetError(f"{root}: the same part is added twice in one commit")
    if base_version is None:
        if remove:
            raise DatasetError(f"{root}: a new table has nothing to remove")
        return _create(root, schema, adds, props)
    try:
        table = DeltaTable(uri, version=base_version)
    except (DeltaError, OSError) as exc:
        raise DatasetError(f"{root}: cannot load version {base_version}: {exc}") from None
    live = live_files(table)
    unknown = sorted(set(remove) - set(live))
    if unknown:
        raise DatasetError(
            f"{root}: {unknown[0]} is not in version {base_version} of the table "
            f"({len(unknown)} such); nothing committed"
        )
    again = sorted({a.path for a in adds} & set(live))
    if again:
        raise DatasetError(
            f"{root}: {again[0]} is already in version {base_version} of the table; a part "
            "is written once under a new name, never committed twice"
        )
    now = int(time.time() * 1000)
    actions: list[AddAction | RemoveAction] = [RemoveAction(r, True, now, live[r]) for r in remove]
    actions += adds
    try:
        table.create_write_transaction(actions, "append", schema, commit_properties=props)
    except CommitFailedError as exc:
        raise CommitConflictError(
            f"{root}: another writer committed after version {base_version}, which this "
            f"commit was planned on ({str(exc).splitlines()[0]}); nothing of this commit "
            "landed: run again"
        ) from None
    return base_version + 1


def _create(
    root: DatasetLocation, schema: pa.Schema, adds: list[AddAction], props: CommitProperties
) -> int:
    """Version 0 of a new table holding ``adds``."""
    if DeltaTable.is_deltatable(str(root)):
        raise CommitConflictError(
            f"{root}: a Delta table is already there (another writer created it); "
            "run again to append to it"
        )
    try:
        create_table_with_add_actions(
            str(root),
            Schema.from_arrow(schema),
            adds,
            mode="error",
            name=root.name,
            commit_properties=props,
        )
    except (CommitFailedError, DeltaError) as exc:
        if DeltaTable.is_deltatable(str(root)):
            raise CommitConflictError(
                f"{root}: another writer created the table first ({str(exc).splitlines()[0]}); "
                "run again to append to it"
            ) from None
        raise DatasetError(f"{root}: cannot create the table: {exc}") from None
    return 0
