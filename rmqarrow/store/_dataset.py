"""Exported Parquet datasets opened by :func:`rmqarrow.open` (of index files or tiered ones).

A dataset has no native files to walk, so lookups run in SQL (DuckDB unless Spark is asked
for) and answer exactly as the native lookup over the exported files.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import pyarrow.dataset as pads

from rmqarrow._progress import ProgressCallback
from rmqarrow._vocab import Format, Verb
from rmqarrow.converters.manifests import AnyManifest, DatasetManifest
from rmqarrow.converters.parquet.dataset import open_dataset
from rmqarrow.converters.parquet.importer import import_dataset
from rmqarrow.converters.parquet.manifest import (
    MANIFEST_NAME,
    check_parts,
    dataset_manifest,
    dataset_versions,
    snapshot_point,
    source_drift,
)
from rmqarrow.converters.parquet.parts import table_parts
from rmqarrow.engines import answer_with_engine
from rmqarrow.errors import DatasetError, UnsupportedOperationError, UsageError
from rmqarrow.format.detect import require_commitlog
from rmqarrow.format.layout import GeometryHint
from rmqarrow.format.queries import note_spaced_keys
from rmqarrow.format.times import format_time
from rmqarrow.store._base import OpenOptions, refuse_commitlog
from rmqarrow.store._kind import PinnedDataset
from rmqarrow.store._queries import OffsetQueries, as_queries
from rmqarrow.store._results import (
    ImportedIndexFiles,
    LookupRequest,
    refuse,
)
from rmqarrow.store._sql import SqlSession, sql_session
from rmqarrow.store._stats import StatsReport, StatsSource, index_stats

if TYPE_CHECKING:
    from datetime import datetime

    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyspark.sql import SparkSession

    from rmqarrow.converters.parquet.manifest import SourceDrift
    from rmqarrow.format.detect import Target

__all__ = [
    "DatasetCheck",
    "DatasetInfo",
    "DatasetStore",
]


@dataclass(frozen=True)
class DatasetCheck:
    """The result of :meth:`DatasetStore.check`: the parts against the manifest."""

    dataset: Path
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": str(self.dataset), "ok": self.ok, "problems": list(self.problems)}


@dataclass(frozen=True)
class DatasetInfo:
    """The result of :meth:`DatasetStore.info`: what an exported dataset holds, where it
    came from and whether that source has moved on since."""

    dataset: Path
    #: ``"manifest"`` (``_rmqarrow.json``) or ``"delta"`` (Delta tables, one run pinned)
    layout: str
    #: incremental runs that updated the dataset (0: the export only)
    run: int
    #: Delta layout: the pin table's version read, and each table's pinned version
    delta_version: int | None
    table_versions: dict[str, int]
    #: table -> {"rows": n, "parts": k} (``messages`` too when the dataset holds it)
    tables: dict[str, dict[str, int]]
    #: the store exported (dir or file), and each of its files as recorded, oldest first:
    #: {"file_name", "entries", "size", "deleted_in_store"}
    source: str
    source_files: list[dict[str, Any]]
    #: the commit log the messages table was read from (None: no messages)
    commitlog: str | None
    writer: str | None
    created_at: str | None
    #: the last incremental run's switch, ISO 8601 UTC (None: none ran)
    updated_at: str | None
    #: the source store now against what the dataset recorded
    drift: SourceDrift
    #: the manifest the figures come from (the pinned run's record for Delta)
    manifest: dict[str, Any] = field(repr=False)
    #: Delta layout: every version a reader can ask for (``as_of``), oldest first:
    #: {"version", "time" (ISO 8601 UTC), "app", "run", "readable"} (False: vacuumed)
    versions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        """True when the source store has files or entries the dataset lacks, or lost or
        changed files, or is gone."""
        return self.drift.stale

    @property
    def source_entries(self) -> int:
        """Entries of the source files as recorded at export (or the last run)."""
        return sum(int(f["entries"]) for f in self.source_files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": str(self.dataset),
            "layout": self.layout,
            "run": self.run,
            "delta_version": self.delta_version,
            "table_versions": dict(self.table_versions),
            "tables": {t: dict(v) for t, v in self.tables.items()},
            "source": self.source,
            "source_files": [dict(f) for f in self.source_files],
            "source_entries": self.source_entries,
            "commitlog": self.commitlog,
            "writer": self.writer,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "stale": self.stale,
            "drift": self.drift.to_dict(),
            "versions": [dict(v) for v in self.versions],
        }


@dataclass(frozen=True)
class ManifestInfo:
    """The ``info`` of a dataset shown as its manifest (a Delta dataset's: its pinned
    run's record, with ``delta``, the versions it pins, and ``versions``, those ``as_of``
    takes); each kind's subclass is its own result type."""

    dataset: Path
    manifest: dict[str, Any]

    @property
    def versions(self) -> list[dict[str, Any]]:
        """The versions a reader can open ``as_of`` (none in the manifest layout)."""
        return list(self.manifest.get("versions") or [])

    def to_dict(self) -> dict[str, Any]:
        return dict(self.manifest)


def iso_versions(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Versions (:func:`rmqarrow.converters.parquet.manifest.dataset_versions`) with their
    times (epoch ms) as ``info`` prints every time."""
    return [{**v, "time": _iso_time(v["time"] / 1000)} for v in versions]


def _iso_time(value: Any) -> str | None:
    """A manifest's time (ISO 8601 text, or Unix seconds) as ``info`` prints every time
    (ISO 8601 UTC, milliseconds); another writer's odd value as it is written."""

    if value is None:
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return format_time(int(value * 1000))
        moment = dt.datetime.fromisoformat(str(value))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        return format_time(int(moment.timestamp() * 1000))
    except (ValueError, OverflowError, OSError):
        return str(value)


def _dataset_info(root: Path, manifest: DatasetManifest) -> DatasetInfo:
    """The figures of :class:`DatasetInfo` from one manifest (one snapshot)."""

    tables: dict[str, dict[str, int]] = {}
    rank = {t: i for i, t in enumerate(DatasetStore.tables)}
    recorded = sorted(manifest.tables.items(), key=lambda kv: rank.get(kv[0], len(rank)))
    for table, record in recorded:
        if manifest.parts is not None:
            parts = sum(1 for r in manifest.parts if r.path.split("/", 1)[0] == table)
        else:  # a manifest written before parts were recorded: the parts readers read
            parts = len(table_parts(root, table, manifest)) if (root / table).is_dir() else 0
        tables[table] = {"rows": record.rows, "parts": parts}
    delta = manifest.delta
    files = [
        {
            "file_name": f.file_name,
            "entries": max(f.index_count - 1, 0),
            "size": f.size,
            "deleted_in_store": bool(f.deleted_in_store),
        }
        for f in manifest.source.files
    ]
    messages = manifest.tables.get("messages")
    return DatasetInfo(
        dataset=root,
        layout="manifest" if delta is None else "delta",
        run=manifest.run_count,
        delta_version=None if delta is None else delta.version,
        table_versions={} if delta is None else dict(delta.versions),
        tables=tables,
        source=manifest.source.path,
        source_files=files,
        commitlog=None if messages is None else messages.commitlog,
        writer=manifest.writer,
        created_at=_iso_time(manifest.created_at),
        updated_at=_iso_time(manifest.updated_at),
        drift=source_drift(root, manifest=manifest),
        manifest=manifest.to_dict(),
        versions=iso_versions([] if delta is None else dataset_versions(root)),
    )


def _sql_engine(engine: str | None) -> str:
    name = engine or "duckdb"
    if name == "native":
        raise UsageError(
            "a dataset holds no index files for the native engine: use engine="
            "'duckdb' or 'spark', or import_files() and open the files"
        )
    return name


class DatasetStore(PinnedDataset, OffsetQueries):
    """An exported dataset of ``IndexFile`` s (``files``, ``slots``, ``entries``)."""

    verbs = frozenset(
        {
            Verb.QUERY,
            Verb.QUERY_MANY,
            Verb.SCAN,
            Verb.TO_DUCKDB,
            Verb.TO_SPARK,
            Verb.SQL,
            Verb.IMPORT_FILES,
            Verb.CHECK,
            Verb.INFO,
            Verb.STATS,
            Verb.VERSIONS,
            Verb.CONVERT_TO_DELTA,
            Verb.VACUUM,
        }
    )

    format = Format.INDEX
    tables = ("files", "slots", "entries", "messages")
    instead: ClassVar[dict[Verb, str]] = {
        Verb.VERIFY: "verify needs the native store as the reference: verify the store it "
        "was exported from, with this dataset as dataset=",
    }

    @classmethod
    def opened(cls, target: Target, options: OpenOptions) -> Self:
        """The dataset at ``target``, pinned ``as_of`` when given (it states its own
        geometry)."""
        return cls(target, as_of=options.as_of)

    def __init__(
        self,
        target: Target,
        geometry: GeometryHint = GeometryHint.NONE,
        *,
        as_of: object = None,
    ) -> None:
        super().__init__(target, geometry)
        self._pin(as_of)

    def _read_snapshot(self, as_of: object) -> DatasetManifest:

        return dataset_manifest(self.path, as_of=snapshot_point(as_of))

    def answers(
        self, queries: Sequence[Any], *, engine: str | None = None, master: str | None = None
    ) -> list[list[int]]:

        self._check_open()
        qs = as_queries(queries)
        with self._reading():
            answers = answer_with_engine(_sql_engine(engine), self.path, qs, master=master)
        note_spaced_keys(qs, answers)
        return answers

    def _check_lookup(self, request: LookupRequest) -> None:
        if request.engine == "native":
            raise UnsupportedOperationError(f"{self.path}: {self.description}")
        if request.resolve is not None:
            refuse("resolve", "reads hits back from the CommitLog of a store")

    def scan(
        self,
        table: str,
        *,
        columns: list[str] | None = None,
        filter: pads.Expression | None = None,
    ) -> pa.RecordBatchReader:

        self._check_open()
        self._check_table(table, columns)
        with self._reading():
            found = open_dataset(self.path, table)
        return found.scanner(columns=columns, filter=filter).to_reader()

    def to_duckdb(self, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
        from rmqarrow.converters.duckdb.sql import connect

        self._check_open()
        with self._reading():
            return connect(self.path, con=con)

    def to_spark(self, spark: SparkSession | None = None) -> SparkSession:
        from rmqarrow.converters.spark.session import get_spark
        from rmqarrow.converters.spark.tables import register_tables

        self._check_open()
        session = spark if spark is not None else get_spark()
        with self._reading():
            register_tables(session, self.path)
        return session

    def sql(
        self,
        engine: str = "duckdb",
        *,
        commitlog: str | os.PathLike[str] | None = None,
        master: str | None = None,
    ) -> SqlSession:
        """Statements over the dataset's tables (views over its Parquet parts, the
        ``messages`` of ``commitlog`` or of the export)."""
        self._check_open()
        log_dir = None if commitlog is None else str(require_commitlog(commitlog))
        return sql_session(
            engine,
            str(self.path),
            master,
            geometry=self.geometry_hint,
            commitlog=log_dir,
        )

    def parts(self, table: str, *, as_of: int | datetime | str | None = None) -> list[Path]:
        """The Parquet files that are ``table`` (absolute paths, sorted): for any reader
        without Delta support (``spark.read.parquet(*parts)``, ``read_parquet([...])``),
        which must never read the table's folder (it keeps replaced parts and a killed
        run's).  On a dataset of Delta tables, those of the pinned run (``as_of``: the run
        current at that version or time of ``files``); a dataset in the manifest layout
        keeps no versions and refuses ``as_of``.  Without ``as_of``, the version this store
        was opened at, else the latest."""

        self._check_open()
        self._check_table(table, None)
        manifest: AnyManifest
        if as_of is not None:
            manifest = dataset_manifest(self.path, as_of=snapshot_point(as_of))
        else:
            manifest = self._manifest or dataset_manifest(self.path)
        return table_parts(self.path, table, manifest)

    def import_files(
        self,
        out_dir: str | os.PathLike[str],
        *,
        trust: bool = False,
        progress: ProgressCallback | None = None,
        wait: bool | float = False,
        force: bool = False,
        **options: Any,
    ) -> ImportedIndexFiles:
        """Byte-identical index files under ``out_dir`` (never replacing one); a store a
        RocketMQ broker is running on is refused (``force``: see :func:`rmqarrow.build`)."""

        self._check_open()
        if options:
            raise UsageError(f"unknown import options {sorted(options)}")
        with self._reading():
            return ImportedIndexFiles(
                import_dataset(
                    self.path, out_dir, progress=progress, trust=trust, wait=wait, force=force
                )
            )

    def check(
        self, *, commitlog: str | os.PathLike[str] | None = None, full: bool = False
    ) -> DatasetCheck:
        """The parts against the manifest (names, sizes, footers; ``full``: checksums)."""

        self._check_open()
        refuse_commitlog(commitlog, "an exported dataset")
        try:
            with self._reading():
                check_parts(self.path, dataset_manifest(self.path), full=full)
        except DatasetError as exc:
            return DatasetCheck(self.path, [str(exc)])
        return DatasetCheck(self.path)

    def stats(
        self,
        *,
        top: int = 10,
        between: tuple[int, int] | None = None,
        limit: int = 20,
        commitlog: str | os.PathLike[str] | None = None,
        engine: str = "duckdb",
        master: str | None = None,
        progress: ProgressCallback | None = None,
        with_check: bool = False,
    ) -> StatsReport:
        """The index-health figures, as :meth:`rmqarrow.store.IndexStore.stats` computes
        them, over the dataset in bounded passes (its ``messages`` table, when exported
        with it, or ``commitlog``, for the check against the log); ``with_check``: the
        report also carries :meth:`check`'s verdict."""
        self._check_open()
        source = StatsSource(
            self.path,
            self.geometry_hint,
            commitlog=None if commitlog is None else require_commitlog(commitlog),
        )

        with self._reading():
            return index_stats(
                source,
                export=None,
                check=(lambda: self.check().to_dict()) if with_check else None,
                top=top,
                between=between,
                limit=limit,
                engine=engine,
                master=master,
                progress=progress,
            )

    def info(self, *, chains: bool = True) -> DatasetInfo:
        """What the dataset holds (layout, run and Delta versions, rows and parts per
        table), its source as recorded, and whether that store now has files or entries
        the dataset lacks (headers only; ``.manifest`` is the record itself)."""

        self._check_open()
        with self._reading():
            manifest = dataset_manifest(self.path)
        try:
            return _dataset_info(self.path.absolute(), manifest)
        except (KeyError, TypeError, ValueError) as exc:  # another writer's odd record
            raise DatasetError(
                f"{self.path / MANIFEST_NAME}: malformed manifest ({exc!r} missing or wrong); "
                "re-export the dataset"
            ) from None
