"""Native index files opened by :func:`rmqarrow.open`: one file, a directory, a broker root."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from rmqarrow._paths import is_uri
from rmqarrow._progress import ProgressCallback
from rmqarrow._vocab import Format, Kind, Verb
from rmqarrow.commitlog import mode_for, resolve
from rmqarrow.converters.arrow.scan import store_scanner
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import follow_store, sync_store
from rmqarrow.converters.parquet.manifest import one_snapshot, read_manifest
from rmqarrow.engines import answer_with_engine
from rmqarrow.errors import (
    CorruptIndexError,
    EngineUnavailableError,
    GeometryError,
    InvalidValueError,
    UsageError,
)
from rmqarrow.format.detect import Target, require_commitlog, require_index_store
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import Geometry, GeometryHint, as_hint
from rmqarrow.format.queries import Query, note_spaced_keys
from rmqarrow.format.times import format_time
from rmqarrow.index.health import (
    FileHealth,
    StoreHealth,
    confirms_geometry,
    expired_during_run,
    file_health,
    store_health,
)
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService, open_healthy
from rmqarrow.store._base import (
    DEFAULT_MAX_NUM,
    OpenOptions,
    check_dataset_of,
    check_max_num,
    required_engines,
    verify_engines,
)
from rmqarrow.store._dataset import DatasetStore
from rmqarrow.store._queries import OffsetQueries, as_queries, topic_and_key
from rmqarrow.store._results import IndexManifest, LookupRequest, ResolvedHits
from rmqarrow.store._sql import SqlSession, sql_session
from rmqarrow.store._stats import StatsReport, StatsSource, index_stats
from rmqarrow.verify import verify
from rmqarrow.verify.explain import explain_query
from rmqarrow.verify.fsck import check_store

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyspark.sql import SparkSession

    from rmqarrow.commitlog.resolution import ResolveResult
    from rmqarrow.converters.parquet.incremental import SyncResult
    from rmqarrow.verify import VerifyReport
    from rmqarrow.verify.fsck import ChainReport

__all__ = ["IndexStore", "StoreCheck", "StoreInfo", "refuse_unknown_geometry"]

_log = logging.getLogger("rmqarrow.store")


def _warn_skipped(fh: FileHealth) -> None:
    """The one warning naming a damaged file a lookup leaves out (the CLI prints it)."""
    _log.warning("skipped damaged file %s", fh.describe())


def refuse_unknown_geometry(health: StoreHealth) -> None:
    """When no file fits the geometry and all share one size, the counts are what is wrong:
    say so in one line instead of calling every file damaged."""
    files = health.files
    if not files or health.healthy or any(f.status != "wrong geometry" for f in files):
        return
    sizes = {f.size for f in files}
    if len(sizes) != 1:
        return
    size, g = sizes.pop(), health.geometry
    fitted = Geometry.for_size_default_ratio(size)
    hint = (
        f"hash_slot_num={fitted.hash_slot_num} index_num={fitted.index_num} fits"
        if fitted
        else "pass the hash_slot_num= and index_num= they were written with"
    )
    raise GeometryError(
        f"{health.store}: expected {g.file_size} bytes per file for {g}, found {size} bytes "
        f"in all {len(files)} files; {hint}"
    )


@dataclass(frozen=True)
class StoreCheck:
    """The result of :meth:`IndexStore.check`: each file's health and chain report."""

    store: Path
    health: StoreHealth
    chains: dict[str, ChainReport]
    commitlog: Path | None

    @property
    def ok(self) -> bool:
        return self.health.ok

    def to_dict(self) -> dict[str, Any]:
        g = self.health.geometry
        return {
            "store": str(self.store),
            "ok": self.ok,
            "geometry": {
                "hash_slot_num": g.hash_slot_num,
                "index_num": g.index_num,
                "file_size": g.file_size,
                "note": self.health.note,
            },
            "commitlog": None if self.commitlog is None else str(self.commitlog),
            "files": [
                {
                    **fh.to_dict(),
                    "chains": self._chains(fh.name),
                }
                for fh in self.health.files
            ],
        }

    #: what only a check against the CommitLog counts: null, not 0, when none was read
    LOG_COUNTS = ("dangling", "unverified", "expired")

    def _chains(self, name: str) -> dict[str, Any] | None:
        if name not in self.chains:
            return None
        doc = self.chains[name].to_dict()
        if self.commitlog is None:
            doc.update(dict.fromkeys(self.LOG_COUNTS))
        return doc

    def _repr_html_(self) -> str:
        """In a notebook: the banner of ``stats --html`` over one row per file."""
        from rmqarrow.converters.stats.html import render_check_html

        return render_check_html(self.to_dict())


@dataclass(frozen=True)
class StoreInfo:
    """The result of :meth:`IndexStore.info`: one dict per file, and the health behind it."""

    store: Path
    health: StoreHealth
    files: list[dict[str, Any]]
    #: the path opened is one index file (not a directory of them)
    one_file: bool = False

    @property
    def ok(self) -> bool:
        return self.health.ok

    def to_dict(self) -> list[dict[str, Any]]:
        return list(self.files)

    def _repr_html_(self) -> str:
        """In a notebook: the check's banner (sizes and headers, plus chains unless
        ``info(chains=False)``) over one row per file, as ``stats --html`` shows it."""
        from rmqarrow.converters.stats.html import render_check_html

        check = StoreCheck(self.store, self.health, {}, None).to_dict()
        return render_check_html(check, self.files)


def _file_info(path: Path, given: Geometry) -> dict[str, Any]:
    geometry, note = as_hint(given).resolve(path.stat().st_size)
    if note is not None and confirms_geometry(path, geometry):
        note = None  # the file's own contents confirm the fitted geometry
    with IndexFile.open(path, geometry=geometry) as f:
        return {
            "file": str(path),
            "name": f.name,
            "status": "ok",
            "hash_slot_num": geometry.hash_slot_num,
            "index_num": geometry.index_num,
            "file_size": geometry.file_size,
            "begin_timestamp": f.begin_timestamp,
            "begin_time": format_time(f.begin_timestamp),
            "end_timestamp": f.end_timestamp,
            "end_time": format_time(f.end_timestamp),
            "begin_phy_offset": f.begin_phy_offset,
            "end_phy_offset": f.end_phy_offset,
            "hash_slot_count": f.hash_slot_count,
            "index_count": f.index_count,
            "entries": f.entry_count,
            "fill_ratio": round(f.entry_count / max(f.capacity, 1), 6),
            "slot_fill_ratio": round(f.hash_slot_count / geometry.hash_slot_num, 6),
            "write_full": f.is_write_full(),
            "geometry_note": note,
        }


class IndexStore(OffsetQueries):
    """RocketMQ ``IndexFile`` s, read-only: lookups skip damaged files (logged) unless
    ``strict``, as ``rmqarrow query`` does."""

    verbs = frozenset(
        {
            Verb.QUERY,
            Verb.QUERY_MANY,
            Verb.SCAN,
            Verb.TO_DUCKDB,
            Verb.TO_SPARK,
            Verb.SQL,
            Verb.EXPORT,
            Verb.SYNC,
            Verb.FOLLOW,
            Verb.CHECK,
            Verb.INFO,
            Verb.STATS,
            Verb.VERIFY,
        }
    )

    format = Format.INDEX
    tables = ("files", "slots", "entries")

    @classmethod
    def opened(cls, target: Target, options: OpenOptions) -> Self:
        """The IndexFiles ``target`` holds (a broker root needs a non-empty ``index/``),
        damaged ones refused with ``strict``."""
        return cls(
            require_index_store(target.path),
            options.geometry,
            strict=options.strict,
        )

    def __init__(
        self,
        target: Target,
        geometry: GeometryHint = GeometryHint.NONE,
        *,
        strict: bool = False,
    ) -> None:
        super().__init__(target, geometry)
        self.strict = strict
        self._service: IndexService | None = None
        #: lookups under way (they run at once); close() waits until there are none
        self._readers = 0
        self._idle = threading.Condition()
        #: files left out while lookups were walking them: closed once none is
        self._retired: list[IndexFile] = []

    @property
    def index_path(self) -> Path:
        """The index file or directory read (a broker root's ``index/``)."""
        return self.target.index_path

    @property
    def commitlog_dir(self) -> Path | None:
        """A broker root's ``commitlog/``, when it has one."""
        return self.target.commitlog_dir

    # -- the native service ---------------------------------------------------------------

    @property
    def service(self) -> IndexService:
        """The read-only, loaded service over the healthy files (opened on first use)."""
        self._check_open()
        if self._service is None:
            service, note = open_healthy(self.index_path, self.geometry_hint, strict=self.strict)
            if note:
                _log.info("%s", note)
            if not service.files:
                refuse_unknown_geometry(
                    StoreHealth(self.index_path, service.geometry, None, service.skipped)
                )
            for fh in service.skipped:
                _warn_skipped(fh)
            if not service.files:
                service.close()
                raise UsageError(
                    f"{self.index_path}: no readable index files"
                    + (" (every file is damaged)" if service.skipped else "")
                )
            self._service = service
        return self._service

    def _current_service(self) -> IndexService:
        """:attr:`service`, less the files that changed under it since they were loaded:
        one cut short (a crash, a truncation) is skipped and named as at open (a lookup
        into its missing pages would answer nothing, or crash the process), one deleted
        (a broker's expiry) is left out with a note, as the broker no longer answers
        from it."""
        service = self.service
        g = service.geometry
        for f in list(service.files):
            try:
                size = f.path.stat().st_size
            except FileNotFoundError:
                size = None
            if size == g.file_size:
                continue
            service.files.remove(f)
            self._retired.append(f)  # another lookup may be walking it: closed when idle
            try:
                fh = None if size is None else file_health(f.path, g)
            except FileNotFoundError:  # cut short, then expired before the scan
                fh = None
            if fh is None:
                expired_during_run(f.path)
                continue
            service.skipped.append(fh)
            _warn_skipped(fh)
        return service

    @contextmanager
    def _reading(self) -> Iterator[tuple[IndexService, list[IndexFile]]]:
        """The service and its files as of now, for one lookup: lookups run at once, and
        close() waits for every one under way (an answer is whole, or the lookup raises
        the closed-store error, never an empty answer from closed files)."""
        with self._idle:
            self._check_open()
            service = self._current_service()
            files = list(service.files)
            self._readers += 1
        try:
            yield service, files
        finally:
            with self._idle:
                self._readers -= 1
                if not self._readers:
                    for f in self._retired:
                        f.close()
                    self._retired.clear()
                    self._idle.notify_all()

    @property
    def geometry(self) -> Geometry:
        """The geometry every file is read with (given, or fitted from the healthy files)."""
        return self.health().geometry

    def health(self) -> StoreHealth:
        """Each file's size and header status (no chain walk)."""
        self._check_open()
        return store_health(self.index_path, self.geometry_hint)

    def sql_geometry(self, engine: str) -> Geometry:
        """The fitted geometry for an engine that reads every file, refusing damaged ones."""
        health = self.health()
        refuse_unknown_geometry(health)
        if health.damaged:
            raise UsageError(
                f"{self.index_path}: {len(health.damaged)} damaged file(s) "
                f"({', '.join(f'{f.name}: {f.status}' for f in health.damaged)}); the "
                f"{engine} engine reads every file: use engine=native (the native lookup), "
                "which skips them"
            )
        return health.geometry

    # -- queries --------------------------------------------------------------------------

    def answers(
        self, queries: Sequence[Any], *, engine: str | None = None, master: str | None = None
    ) -> list[list[int]]:
        """The answer of each query (:class:`~rmqarrow.Query` or ``(key, max_num[, begin,
        end])``) as a list of offsets, through ``engine`` (native by default)."""
        qs = as_queries(queries)
        name = engine or "native"
        if name == "native":
            with self._reading() as (service, files):
                answers = service.answers(qs, files=files)
        else:
            answers = answer_with_engine(
                name, self.index_path, qs, master=master, geometry=self.sql_geometry(name)
            )
        note_spaced_keys(qs, answers)
        return answers

    def explain(
        self,
        topic: str,
        key: str,
        *,
        begin: int = 0,
        end: int = JAVA_LONG_MAX,
        max_num: int = DEFAULT_MAX_NUM,
        commitlog: str | os.PathLike[str] | None = None,
    ) -> list[str]:
        """Per file, why the native lookup of ``topic#key`` returned what it did."""

        q = Query(f"{topic}#{key}", check_max_num(max_num), begin, end)
        return self.explain_queries([q], commitlog=commitlog)

    def explain_queries(
        self, queries: Sequence[Any], *, commitlog: str | os.PathLike[str] | None = None
    ) -> list[str]:
        """:meth:`explain` for many queries, one block of lines each."""

        log = None if commitlog is None else require_commitlog(commitlog)
        lines: list[str] = []
        with self._reading() as (service, files):
            for q in as_queries(queries):
                lines += explain_query(files, q, skipped=service.skipped, commitlog=log)
        return lines

    def resolve(
        self,
        topic: str,
        key: str,
        offsets: Sequence[int],
        *,
        commitlog: str | os.PathLike[str] | None = None,
        index_type: str | None = None,
    ) -> ResolveResult:
        """Read each hit back from the CommitLog (a broker root's own by default) and keep
        the messages whose topic and KEYS/UNIQ_KEY (``index_type="T"``: whose TAGS) really
        match: the hash false positives RocketMQ's lookup returns are dropped.  Each offset
        is read once."""

        mode = mode_for(index_type)
        log = commitlog if commitlog is not None else self.commitlog_dir
        if log is None:
            raise UsageError(f"{self.path}: no CommitLog to resolve against; give commitlog")
        offsets = list(dict.fromkeys(offsets))
        return resolve(require_commitlog(log), topic, key, offsets, mode=mode)

    def _explained(self, queries: list[Query], request: LookupRequest) -> list[str]:
        return self.explain_queries(queries, commitlog=request.resolve)

    def _resolved(self, request: LookupRequest, q: Query, offsets: list[int]) -> ResolvedHits:
        # the key as given (for index_type T, the tags), not the index key looked up
        assert request.key is not None  # resolve= goes with key=
        topic, key, _ = topic_and_key(request.topic, request.key)
        # a key repeated in KEYS is indexed once per occurrence: each message is read once
        distinct = list(dict.fromkeys(offsets))
        result = self.resolve(
            topic, key, distinct, commitlog=request.resolve, index_type=request.index_type
        )
        return ResolvedHits(q, len(offsets), len(distinct), result)

    def _import_instead(self) -> str:
        return f"{super()._import_instead()} (it already is index files: query it directly)"

    # -- bulk -----------------------------------------------------------------------------

    def scan(
        self,
        table: str,
        *,
        columns: list[str] | None = None,
        filter: pads.Expression | None = None,
    ) -> pa.RecordBatchReader:
        """``files``, ``slots`` or ``entries`` of every healthy file, oldest first."""

        self._check_table(table, columns)
        g = self.health().geometry
        scanner = store_scanner(
            self.index_path,
            table,
            columns=columns,
            filter=filter,
            geometry=g,
        )
        return scanner.to_reader()

    def to_duckdb(self, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
        """Views ``files``, ``slots``, ``entries`` (and ``messages`` for a broker root with a
        CommitLog) with the ``index_lookup`` macros, on ``con`` or a new connection."""
        from rmqarrow.converters.duckdb.sql import connect

        g = self.sql_geometry("duckdb")
        log = None if self.commitlog_dir is None else str(self.commitlog_dir)
        return connect(self.index_path, geometry=g, commitlog=log, con=con)

    def sql(
        self,
        engine: str = "duckdb",
        *,
        commitlog: str | os.PathLike[str] | None = None,
        master: str | None = None,
    ) -> SqlSession:
        """Statements over ``files``, ``slots``, ``entries`` (each reads what it needs from
        the files, a batch at a time) and ``messages`` from ``commitlog``, or from a broker
        store root's own CommitLog; damaged files are refused, SQL reads every one."""
        self._check_open()
        log = commitlog
        if log is None and self.kind == Kind.BROKER_ROOT and self.commitlog_dir is not None:
            log = self.commitlog_dir
            logging.getLogger("rmqarrow").info("using its CommitLog too: %s", log)
        damaged = self.health().damaged
        if damaged:
            raise UsageError(
                f"{self.index_path}: {len(damaged)} damaged index file(s) ("
                + ", ".join(f"{f.name}: {f.status}" for f in damaged[:5])
                + "); SQL reads every file: see `rmqarrow check`, or look keys up with "
                "`rmqarrow query`, which skips damaged files"
            )
        g = self.sql_geometry("SQL")
        log_dir = None if log is None else str(require_commitlog(log))
        return sql_session(
            engine, str(self.index_path), master, geometry=as_hint(g), commitlog=log_dir
        )

    def to_spark(self, spark: SparkSession | None = None) -> SparkSession:
        """The same views in Spark (``local[*]`` unless a session is active or given)."""
        from rmqarrow.converters.spark.session import get_spark
        from rmqarrow.converters.spark.tables import register_tables

        g = self.sql_geometry("spark")
        session = spark if spark is not None else get_spark()
        register_tables(session, self.index_path, geometry=g)
        return session

    def export(
        self,
        dest: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        engine: str = "local",
        master: str | None = None,
        commitlog: str | os.PathLike[str] | None = None,
        progress: ProgressCallback | None = None,
        wait: bool | float = False,
        **options: Any,
    ) -> IndexManifest:
        """The healthy files as a dataset at ``dest`` (damaged files are left out and
        logged, or refused when the store was opened ``strict``); returns the manifest.
        Its tables are Delta tables, the export one pinned run
        (:mod:`rmqarrow.converters.delta`).

        ``commitlog`` also writes the ``messages`` table; ``engine="spark"`` exports on
        Spark (``master``), one task per file.  Another process writing ``dest`` refuses
        the export in one line naming it, or is waited for with ``wait`` (True, or seconds).
        """
        self._check_open()
        if options:
            raise UsageError(f"unknown export options {sorted(options)}")
        log = None if commitlog is None else require_commitlog(commitlog)
        health = self.health()
        damaged = health.damaged
        if damaged and self.strict:
            raise CorruptIndexError(
                f"{len(damaged)} damaged index file(s), refused (strict=True): "
                + "; ".join(f.describe() for f in damaged)
            )
        for fh in damaged:
            _log.warning(
                "damaged file %s; %s",
                fh.describe(),
                "left out" if fh.skipped_by_readers else "exported as RocketMQ reads it",
            )
        if not health.healthy:
            raise UsageError(f"{self.index_path}: no healthy index files to export")
        g = health.geometry
        if engine == "spark" and is_uri(dest):
            raise UsageError(
                "the spark exporter writes to local disk: export to object storage with "
                "the local engine"
            )
        if engine == "spark":
            try:
                from rmqarrow.converters.spark.export import export_store as spark_export
            except ModuleNotFoundError as exc:
                raise EngineUnavailableError(
                    f"the spark engine needs {exc.name} (pip install 'rmqarrow[spark]' and Java 17)"
                ) from None
            if damaged:
                raise UsageError(
                    f"{self.index_path}: damaged files; the spark exporter "
                    "reads every file: export with the local engine"
                )
            spark_export(
                self.index_path,
                dest,
                overwrite=overwrite,
                master=master,
                geometry=g,
                commitlog=log,
                wait=wait,
            )
            return IndexManifest(read_manifest(dest))
        if engine != "local":
            raise UsageError(f"unknown export engine {engine!r}; choose from local, spark")
        if master is not None:
            raise UsageError("master needs engine='spark'")

        names = [f.name for f in damaged if f.skipped_by_readers]
        try:
            return IndexManifest(
                export_store(
                    self.index_path,
                    dest,
                    overwrite=overwrite,
                    geometry=g,
                    progress=progress,
                    commitlog=log,
                    skip=names,
                    wait=wait,
                )
            )
        except CorruptIndexError as exc:
            if not any(name in str(exc) for name in names):
                raise
            raise CorruptIndexError(
                f"{self.index_path}: the exporter stopped at a damaged file "
                f"({', '.join(names)}) instead of leaving it out; copy the healthy files into "
                "a new directory outside the store and export that (see `rmqarrow check`)"
            ) from None

    def sync(
        self,
        dest: str | os.PathLike[str],
        *,
        commitlog: str | os.PathLike[str] | None = None,
        prune_deleted: bool = False,
        reexport_changed: bool = False,
        wait: bool | float = False,
        duckdb_file: str | os.PathLike[str] | None = None,
    ) -> SyncResult:
        """Bring the dataset at ``dest`` up to this store at the cost of what changed
        (an incremental export; a missing ``dest`` is exported whole): new files and the
        new entries of grown files are appended as new parts, a grown file's slot heads
        and ``files`` row replaced, in one commit of the dataset's Delta tables.  Files the broker
        deleted are kept (marked ``deleted_in_store``) or, with ``prune_deleted``,
        removed; a file that went backwards (shorter, or replaced) is refused
        (:class:`~rmqarrow.errors.StoreChangedError`) or, with ``reexport_changed``,
        exported whole again.  ``commitlog`` also appends the ``messages`` table from
        where the last run stopped.  A dataset of the older manifest layout is refused
        (convert it first: :func:`rmqarrow.converters.parquet.to_delta.convert_to_delta`).
        ``duckdb_file``: the DuckDB
        database file over ``dest`` (:func:`rmqarrow.converters.duckdb.save_database`) is
        written again when the run changed the dataset (or it is missing), so it stays
        current; a file rmqarrow did not write is refused before the run.  Returns what
        changed (:class:`rmqarrow.converters.parquet.incremental.SyncResult`)."""

        self._check_open()
        _check_duckdb_file(duckdb_file, dest)
        result = sync_store(
            self.index_path,
            dest,
            **self._sync_options(commitlog, prune_deleted, reexport_changed, wait),
        )
        _refresh_duckdb_file(dest, duckdb_file, result)
        return result

    def follow(
        self,
        dest: str | os.PathLike[str],
        *,
        interval: float = 5.0,
        stop: threading.Event | None = None,
        commitlog: str | os.PathLike[str] | None = None,
        prune_deleted: bool = False,
        reexport_changed: bool = False,
        wait: bool | float = False,
        duckdb_file: str | os.PathLike[str] | None = None,
    ) -> Iterator[SyncResult]:
        """:meth:`sync` every ``interval`` seconds until ``stop`` is set, each round's
        result yielded; a round always completes, so the dataset is consistent whenever
        the loop ends (set ``stop`` from a signal handler to end it between rounds).
        ``duckdb_file``: refreshed after each round that changed the dataset, as
        :meth:`sync` does."""

        self._check_open()
        if not interval > 0:
            raise UsageError(f"interval must be > 0 seconds, got {interval}")
        _check_duckdb_file(duckdb_file, dest)
        rounds = follow_store(
            self.index_path,
            dest,
            interval=interval,
            stop=stop,
            **self._sync_options(commitlog, prune_deleted, reexport_changed, wait),
        )
        if duckdb_file is None:
            return rounds
        return _refreshing(rounds, dest, duckdb_file)

    def _sync_options(
        self,
        commitlog: str | os.PathLike[str] | None,
        prune_deleted: bool,
        reexport_changed: bool,
        wait: bool | float,
    ) -> dict[str, Any]:
        health = self.health()
        damaged = health.damaged
        if damaged and self.strict:
            raise CorruptIndexError(
                f"{len(damaged)} damaged index file(s), refused (strict=True): "
                + "; ".join(f.describe() for f in damaged)
            )
        for fh in damaged:
            _log.warning(
                "damaged file %s; %s",
                fh.describe(),
                "left out" if fh.skipped_by_readers else "exported as RocketMQ reads it",
            )
        g = health.geometry
        return {
            "hash_slot_num": g.hash_slot_num,
            "index_num": g.index_num,
            "commitlog": None if commitlog is None else require_commitlog(commitlog),
            "prune_deleted": prune_deleted,
            "reexport_changed": reexport_changed,
            "skip": [f.name for f in damaged if f.skipped_by_readers],
            "wait": wait,
        }

    def check(
        self, *, commitlog: str | os.PathLike[str] | None = None, chains: bool = True
    ) -> StoreCheck:
        """fsck: every file's size, header and (unless ``chains=False``) chains; with
        ``commitlog`` (a broker root's own by default), entries pointing at no message."""
        self._check_open()
        log = commitlog
        if log is None and self.kind == "broker_root" and self.commitlog_dir is not None:
            log = self.commitlog_dir
            _log.info("checking entries against the CommitLog in %s", log)
        return self._check(None if log is None else require_commitlog(log), chains)

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
        """The index-health figures (:class:`rmqarrow.converters.stats.IndexStats`):
        ``top`` hot keys and duplicates, and with ``between=(t1, t2)`` (ms) what was
        indexed then, ``limit`` entries of it.  With ``commitlog`` (a broker root's own by
        default, whose failure to read is then a warning) the index is checked against
        the log, by DuckDB or ``engine="spark"`` (``master``).  A store above
        :data:`~rmqarrow.store._stats.STATS_EXPORT_ABOVE` entries is read through a
        temporary export, in memory flat in its size.  ``with_check``: the report also
        carries :meth:`check`'s verdict on the files (no CommitLog)."""
        self._check_open()
        health = self.health()
        if health.damaged:
            raise UsageError(
                f"{self.index_path}: {len(health.damaged)} damaged index file(s) ("
                + ", ".join(f"{f.name}: {f.status}" for f in health.damaged[:5])
                + "); the figures read every file: check the store, or look keys up "
                "by query, which skips damaged files"
            )
        log, implicit = commitlog, False
        if log is None and self.kind == "broker_root" and self.commitlog_dir is not None:
            log, implicit = self.commitlog_dir, True
            _log.info("using its CommitLog too: %s", log)
        source = StatsSource(
            self.index_path,
            as_hint(self.sql_geometry("SQL")),
            entries=sum(max(f.header.get("index_count", 1) - 1, 0) for f in health.files),
            commitlog=None if log is None else require_commitlog(log),
            commitlog_implicit=implicit,
        )

        def export(dest: Path, progress: ProgressCallback | None) -> object:
            return self.export(dest, progress=progress)

        return index_stats(
            source,
            export=export,
            check=(lambda: self._check(None, True).to_dict()) if with_check else None,
            top=top,
            between=between,
            limit=limit,
            engine=engine,
            master=master,
            progress=progress,
        )

    def verify(
        self,
        *,
        dataset: str | os.PathLike[str] | None = None,
        as_of: object = None,
        engines: Sequence[str] | None = None,
        queries: Sequence[Query] | None = None,
        keys: Sequence[str] | None = None,
        sample: int = 200,
        seed: int = 0,
        master: str | None = None,
        chain_check: bool = True,
    ) -> VerifyReport:
        """Every engine checked against the native lookup on the same queries (``queries``,
        or ``sample`` drawn with ``seed``, from ``keys`` when given); with ``dataset`` (its
        version ``as_of``) the SQL engines answer from that export of this store.

        ``engines`` None: native, DuckDB and Spark where it runs (an engine asked for by
        name must run).  Damaged files are skipped by the native lookup and logged
        (refused when the store was opened ``strict``); the SQL engines read every file,
        so without a dataset they are left out, or refused when asked for by name."""

        self._check_open()
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
            raise InvalidValueError(f"sample must be an int >= 1, got {sample!r}")
        if queries is not None and keys is not None:
            raise UsageError(
                "keys= are sampled from; queries= are the queries themselves: give one"
            )
        chosen, explicit = verify_engines(engines)
        target = check_dataset_of(dataset, Kind.DATASET, "index files")
        if dataset is not None and target is None:
            raise UsageError(
                f"dataset={dataset}: on object storage; open it with rmqarrow.open and verify "
                "against a local copy of it (the command line makes one)"
            )
        if dataset is None and as_of is not None:
            raise UsageError(f"as_of={as_of} reads an older version of a dataset: give dataset=")
        health = self.health()
        if health.damaged:
            if self.strict:
                raise CorruptIndexError(
                    f"{len(health.damaged)} damaged index file(s), refused (strict=True): "
                    + "; ".join(f.describe() for f in health.damaged)
                )
            for fh in health.damaged:
                _log.warning("skipped damaged file %s", fh.describe())
            sql = [e for e in chosen if e != "native"]
            if sql and dataset is None:
                if explicit:
                    raise UsageError(
                        f"{self.index_path}: damaged files; {', '.join(sql)} would read every "
                        "file: verify against an export of the healthy files (dataset=), or "
                        "refuse damaged files (strict=True)"
                    )
                _log.info(
                    "leaving out %s: they read every file of the store, damaged ones too; "
                    "compare them on an export of it (dataset=)",
                    ", ".join(sql),
                )
                chosen = ["native"]
        if dataset is None:
            reading: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        elif as_of is None:
            reading = one_snapshot(dataset)  # one run for every engine, however many reads
        else:
            assert target is not None
            reading = DatasetStore(target, as_of=as_of)
        with reading:
            return verify(
                self.index_path,
                dataset=dataset,
                engines=chosen,
                queries=queries,
                keys=keys,
                sample=sample,
                seed=seed,
                master=master,
                geometry=self.geometry_hint,
                required=required_engines(chosen, explicit),
                chain_check=chain_check,
            )

    def _check(self, log_dir: Path | None, chains: bool) -> StoreCheck:

        if not chains:
            return StoreCheck(self.index_path, self.health(), {}, None)
        health, reports = check_store(self.index_path, self.geometry_hint, commitlog=log_dir)
        return StoreCheck(self.index_path, health, reports, log_dir)

    def info(self, *, chains: bool = True) -> StoreInfo:
        """One dict per file with its status (``ok``, ``truncated``, ``damaged chains``...),
        header fields and fill; the geometry is refused in one line when no file fits it."""
        self._check_open()
        health = self._check(None, chains).health
        refuse_unknown_geometry(health)
        g = health.geometry
        infos = []
        for fh in health.files:
            if fh.ok or fh.status == "damaged chains":
                info = _file_info(fh.path, g)
                info["status"], info["detail"] = fh.status, fh.detail
            else:
                info = {
                    "file": str(fh.path),
                    "name": fh.name,
                    "status": fh.status,
                    "detail": fh.detail,
                    "file_size": fh.size,
                    **fh.header,
                    "entries": None,
                    "geometry_note": None,
                }
                for k in ("begin_timestamp", "end_timestamp"):
                    if k in fh.header:
                        info[k.replace("timestamp", "time")] = format_time(fh.header[k])
            info["skipped_by_readers"] = fh.skipped_by_readers
            infos.append(info)
        return StoreInfo(self.index_path, health, infos, one_file=self.kind == Kind.INDEX_FILE)

    def close(self) -> None:
        with self._idle:
            super().close()  # no new lookup starts
            while self._readers:
                self._idle.wait()
            for f in self._retired:
                f.close()
            self._retired.clear()
            if self._service is not None:
                self._service.close()
                self._service = None


def _check_duckdb_file(
    duckdb_file: str | os.PathLike[str] | None, dest: str | os.PathLike[str]
) -> None:
    """Refuse, before any run, a database file that rmqarrow may not replace, or one over
    a dataset on object storage (its views would name the parts of one local copy)."""
    if duckdb_file is not None and is_uri(dest):
        raise UsageError(
            f"{dest}: a DuckDB file is kept current over a local dataset only; drop the "
            "DuckDB file, or query the dataset with `rmqarrow sql` (it reads object storage)"
        )
    if duckdb_file is not None:
        from rmqarrow.converters.duckdb.dbfile import check_target

        check_target(Path(duckdb_file).absolute(), overwrite=False)


def _refresh_duckdb_file(
    dest: str | os.PathLike[str], duckdb_file: str | os.PathLike[str] | None, result: SyncResult
) -> None:
    if duckdb_file is None or not (result.changed or not Path(duckdb_file).exists()):
        return
    from rmqarrow.converters.duckdb.dbfile import save_database

    saved = save_database(dest, duckdb_file)
    _log.info("refreshed the DuckDB file %s (%d Parquet parts)", saved.path, saved.parts)


def _refreshing(
    rounds: Iterator[SyncResult], dest: str | os.PathLike[str], duckdb_file: str | os.PathLike[str]
) -> Iterator[SyncResult]:
    """Follow rounds, refreshing the DuckDB file after each that changed the dataset.  A
    refresh that fails (a client holds the file open for writing) is a warning, tried
    again after the next round: the dataset is what matters, the file follows it."""
    from rmqarrow.converters.duckdb.dbfile import save_database

    pending = False
    for result in rounds:
        if pending or result.changed or not Path(duckdb_file).exists():
            try:
                saved = save_database(dest, duckdb_file)
            except Exception as exc:  # any failure: the next round retries
                pending = True
                _log.warning(
                    "the DuckDB file %s was not refreshed (%s); trying again after the next round",
                    duckdb_file,
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                )
            else:
                pending = False
                _log.info(
                    "refreshed the DuckDB file %s (%d Parquet parts)", saved.path, saved.parts
                )
        yield result
