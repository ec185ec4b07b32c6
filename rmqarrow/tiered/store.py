"""Tiered index files (RIP-65 ``IndexStoreFile``) opened by :func:`rmqarrow.open`: one local
or uploaded file, or a folder of them (:class:`TieredStore`), and a dataset exported of them
(:class:`TieredDatasetStore`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import pyarrow.dataset as pads

from rmqarrow._memory import duckdb_settings
from rmqarrow._progress import ProgressCallback
from rmqarrow._vocab import Format, Kind, Verb
from rmqarrow.engines import answer_with_engine
from rmqarrow.errors import TieredReadError, UnsupportedOperationError, UsageError
from rmqarrow.format.detect import TIERED_DATASET_FORMAT
from rmqarrow.format.layout import GeometryHint
from rmqarrow.format.queries import Query
from rmqarrow.format.times import format_time
from rmqarrow.store._base import (
    OpenOptions,
    check_dataset_of,
    refuse_commitlog,
    required_engines,
    verify_engines,
)
from rmqarrow.store._dataset import ManifestInfo, _sql_engine, iso_versions
from rmqarrow.store._kind import PinnedDataset
from rmqarrow.store._queries import ItemQueries, read_tiered_query_file, split_tiered_key
from rmqarrow.store._results import (
    ImportedTieredFiles,
    LookupRequest,
    TieredLookup,
    TieredManifest,
    refuse,
)
from rmqarrow.store._sql import SqlSession, check_sql_engine, duckdb_session, spark_session
from rmqarrow.tiered import (
    END_MAGIC,
    CompactedIndexFile,
    TieredAnswer,
    TieredCheck,
    TieredIndexFile,
    TieredIndexStore,
    TieredQuery,
    as_tiered_queries,
    check_tiered,
    form_differences,
    open_tiered,
)
from rmqarrow.tiered.arrow.tables import tiered_tables
from rmqarrow.tiered.layout.binary import COMPACT_ITEM_SIZE, items_position
from rmqarrow.tiered.parquet.export import export_tiered
from rmqarrow.tiered.parquet.importer import (
    import_tiered,
    read_tiered_dataset,
    read_tiered_manifest,
)
from rmqarrow.tiered.verify import TieredVerifyReport, verify_tiered

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyspark.sql import SparkSession

    from rmqarrow.format.detect import Target
    from rmqarrow.tiered.arrow.tables import TieredTables

__all__ = [
    "TieredDatasetInfo",
    "TieredDatasetStore",
    "TieredInfo",
    "TieredStore",
    "read_tiered_queries",
    "tiered_file_info",
]

#: Local files up to this size get the "once uploaded" note (it compacts them in memory).
_NOTE_LIMIT = 256 << 20


def tiered_file_info(f: TieredIndexFile | CompactedIndexFile, note: str | None) -> dict[str, Any]:
    """Header fields, form and fill of one tiered file."""
    common = {
        "file": str(f.path),
        "hash_slot_num": f.hash_slot_num,
        "begin_timestamp": f.begin_timestamp,
        "begin_time": format_time(f.begin_timestamp),
        "end_timestamp": f.end_timestamp,
        "end_time": format_time(f.end_timestamp),
    }
    if isinstance(f, TieredIndexFile):
        return {
            **common,
            "form": "unsealed (local)",
            "index_num": f.index_num,
            "magic": "END" if f.magic == END_MAGIC else "BEGIN",
            "hash_slot_count": f.hash_slot_count,
            "item_count": f.item_count,
            "capacity": f.index_num - 1,
            "fill_ratio": round(f.item_count / max(f.index_num - 1, 1), 6),
            "full": f.item_count == f.index_num - 1,
            "geometry_note": note,
        }
    items = max(f.size - items_position(f.hash_slot_num), 0) // COMPACT_ITEM_SIZE
    return {
        **common,
        "form": "compacted (uploaded)",
        "file_size": f.size,
        "items": items,
        "geometry_note": note,
    }


@dataclass(frozen=True)
class TieredInfo:
    """The result of :meth:`TieredStore.info`: one dict per file (:func:`tiered_file_info`)
    as RocketMQ queries them, newest first."""

    path: Path
    files: list[dict[str, Any]]
    #: the path opened is one tiered file (not a folder of them)
    one_file: bool

    @property
    def note(self) -> str | None:
        """One file's geometry note (how its geometry was told), else None."""
        return self.files[0].get("geometry_note") if self.one_file else None

    def to_dict(self) -> dict[str, Any]:
        """One file's fields, or ``{"files": [...]}`` for a folder."""
        if self.one_file:
            return dict(self.files[0])
        return {"files": [dict(f) for f in self.files]}


def read_tiered_queries(path: str | os.PathLike[str], *, escaped: bool = False) -> list[Any]:
    """The queries of a TSV file ``key<TAB>max_num<TAB>begin<TAB>end`` with full keys
    ``topic#key``, as ``(topic, key, max_count, begin, end)``."""
    return _as_tiered_queries(read_tiered_query_file(path, escaped=escaped))


def _as_tiered_queries(queries: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Queries as ``(topic, key, max_count, begin, end)``: those tuples themselves, or
    :class:`~rmqarrow.format.queries.Query` s with full keys ``topic#key``."""
    return [
        (*split_tiered_key(q.key), q.max_num, q.begin, q.end) if isinstance(q, Query) else tuple(q)
        for q in queries
    ]


class _TieredTablesInSql(ItemQueries):
    """What both sources of tiered files answer with the same three tables in memory:
    DuckDB and Spark tables, and SQL statements over them."""

    format = Format.TIERED
    tables = ("tiered_files", "tiered_slots", "tiered_items")

    def _arrow_tables(self) -> dict[str, pa.Table]:
        """``tiered_files``, ``tiered_slots``, ``tiered_items``, read now."""
        raise NotImplementedError

    def scan(
        self,
        table: str,
        *,
        columns: list[str] | None = None,
        filter: pads.Expression | None = None,
    ) -> pa.RecordBatchReader:
        self._check_table(table, columns)
        tables = self._arrow_tables()
        return pads.dataset(tables[table]).scanner(columns=columns, filter=filter).to_reader()

    def to_duckdb(self, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
        """Tables ``tiered_files``, ``tiered_slots``, ``tiered_items`` on ``con`` (or new)."""
        import duckdb

        tables = self._arrow_tables()
        connection = con if con is not None else duckdb.connect(config=duckdb_settings())
        for name, table in tables.items():
            connection.register(name, table)  # a view over the Arrow table
        return connection

    def to_spark(self, spark: SparkSession | None = None) -> SparkSession:
        """The same tables as Spark temporary views."""
        from rmqarrow.converters.spark.session import get_spark

        tables = self._arrow_tables()
        session = spark if spark is not None else get_spark()
        for name, table in tables.items():
            session.createDataFrame(table).createOrReplaceTempView(name)
        return session

    def sql(
        self,
        engine: str = "duckdb",
        *,
        commitlog: str | os.PathLike[str] | None = None,
        master: str | None = None,
    ) -> SqlSession:
        """Statements over ``tiered_files``, ``tiered_slots`` and ``tiered_items``; no
        ``commitlog`` (tiered items point into the tiered store's own commit log)."""
        self._check_open()
        if commitlog:
            refuse(
                "commitlog",
                "adds the IndexFile's messages view; tiered items point into the tiered "
                "store's own commit log",
            )
        if check_sql_engine(engine) == "spark":
            from rmqarrow.converters.spark import get_spark

            return spark_session(self.to_spark(get_spark(master)))
        con = self.to_duckdb()
        return duckdb_session(con, con.close)


class TieredStore(_TieredTablesInSql):
    """Tiered index files, read-only; lookups follow RocketMQ's tiered ``queryAsync``."""

    verbs = frozenset(
        {
            Verb.QUERY,
            Verb.QUERY_MANY,
            Verb.SCAN,
            Verb.TO_DUCKDB,
            Verb.TO_SPARK,
            Verb.SQL,
            Verb.EXPORT,
            Verb.CHECK,
            Verb.INFO,
            Verb.VERIFY,
        }
    )

    def answers(
        self,
        queries: Sequence[Any],
        *,
        engine: str | None = None,
        exact: bool = False,
        master: str | None = None,
    ) -> list[TieredAnswer]:
        """Per :class:`~rmqarrow.tiered.TieredQuery` (or ``(topic, key, max_count, begin,
        end)``): the items, or RocketMQ's read error."""
        self._check_open()
        return answer_with_engine(
            engine or "native",
            self.path,
            as_tiered_queries(queries),
            fmt="tiered",
            exact=exact,
            master=master,
            geometry=self.geometry_hint,
        )

    def file_begin_timestamp(self) -> int | None:
        """The begin timestamp a single file's items are decoded with (None for a folder)."""
        self._check_open()
        if not self.path.is_file():
            return None
        opened, _ = open_tiered(self.path, self.geometry_hint)
        with opened:
            return None if isinstance(opened, TieredIndexStore) else opened.begin_timestamp

    def _with_notes(self, lookup: TieredLookup, request: LookupRequest) -> TieredLookup:
        """One answer of the native engine with RocketMQ's own answer next to an exact one,
        or what changes once the file is uploaded; one file's begin timestamp."""
        rocketmq = note = None
        if request.engine in (None, "native"):
            if request.exact:
                rocketmq = self.answers(lookup.queries, exact=False)[0]
            else:
                note = self.upload_note(lookup.queries[0])
        return replace(
            lookup, rocketmq=rocketmq, note=note, begin_timestamp=self.file_begin_timestamp()
        )

    def upload_note(self, query: TieredQuery | tuple[Any, ...]) -> str | None:
        """For one query on one local file: what RocketMQ answers once the file is uploaded
        (None when nothing changes, or for files over 256 MiB, which ``verify`` reports)."""
        self._check_open()
        if not self.path.is_file() or self.path.stat().st_size > _NOTE_LIMIT:
            return None
        opened, _ = open_tiered(self.path, self.geometry_hint)
        with opened:
            if not isinstance(opened, TieredIndexFile):
                return None
            diffs = form_differences(opened, as_tiered_queries([query]))
        if not diffs:
            return None
        d = diffs[0]
        after = (
            "fails (TieredStoreException)"
            if isinstance(d.compacted, TieredReadError)
            else f"answers {len(d.compacted)} items"
        )
        return (
            f"once this file is uploaded, RocketMQ {after} for this query instead of "
            f"{len(d.local)} ({d.reason()}); --exact gives every match"
        )

    def _tables(self) -> TieredTables:
        self._check_open()
        return tiered_tables(self.path, self.geometry_hint)

    def _arrow_tables(self) -> dict[str, pa.Table]:
        t = self._tables()
        return {"tiered_files": t.files, "tiered_slots": t.slots, "tiered_items": t.items}

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
    ) -> TieredManifest:
        """A tiered dataset at ``dest`` (local engine only, no ``commitlog``: tiered items
        point into the tiered commit log); returns its manifest.  ``progress`` is not
        called: the export is one pass over the files."""
        self._check_open()
        if engine != "local" or master is not None or commitlog or options:
            raise UsageError("tiered files export with the local engine only, without a CommitLog")
        return TieredManifest(
            export_tiered(
                self.path,
                dest,
                overwrite=overwrite,
                geometry=self.geometry_hint,
                wait=wait,
            )
        )

    def check(self, *, commitlog: str | os.PathLike[str] | None = None) -> TieredCheck:
        """Header, slots, chains and compacted ranges of every file (streamed)."""
        self._check_open()
        refuse_commitlog(commitlog, "a tiered file (its offsets are the tiered commit log's)")
        return check_tiered(self.path, self.geometry_hint)

    def info(self, *, chains: bool = True) -> TieredInfo:
        """One dict per file as RocketMQ queries them, newest first."""
        self._check_open()
        opened, note = open_tiered(self.path, self.geometry_hint)
        with opened:
            if isinstance(opened, TieredIndexStore):
                files = [tiered_file_info(f, None) for f in opened.files()]
            else:
                files = [tiered_file_info(opened, note)]
        return TieredInfo(self.path, files, one_file=self.path.is_file())

    def read_queries(self, path: str | os.PathLike[str], *, escaped: bool = False) -> list[Any]:
        """The queries of a TSV file ``key<TAB>max_num<TAB>begin<TAB>end`` with full keys
        ``topic#key``, as ``(topic, key, max_count, begin, end)``."""
        return read_tiered_queries(path, escaped=escaped)

    def verify(
        self,
        *,
        dataset: str | os.PathLike[str] | None = None,
        as_of: object = None,
        engines: Sequence[str] | None = None,
        queries: Sequence[Any] | None = None,
        keys: Sequence[str] | None = None,
        sample: int = 200,
        seed: int = 0,
        master: str | None = None,
        chain_check: bool = True,
        exact: bool = False,
    ) -> TieredVerifyReport:
        """DuckDB and Spark against the native tiered lookup on the same queries
        (``(topic, key, max_count, begin, end)`` or :class:`~rmqarrow.format.queries.Query`
        s with full keys, or ``sample`` drawn from the items with ``seed``); with
        ``dataset`` (an export of these files) the SQL engines read it.  ``exact``: every
        match, not RocketMQ's capped answer."""
        self._check_open()
        if keys is not None:
            raise UsageError(
                "keys= are the IndexFiles' sampling source; tiered queries are sampled from "
                "the files' items: give queries= to choose them"
            )
        if not chain_check:
            raise UsageError(
                "chain_check=False skips the IndexFiles' chain scan; tiered verify reads "
                "no such scan: drop it"
            )
        if as_of is not None:
            raise UsageError(
                f"as_of={as_of}: a tiered dataset= is compared at its latest version; "
                "open an older one with rmqarrow.open(dataset, as_of=...) and query it"
            )
        check_dataset_of(dataset, Kind.TIERED_DATASET, "tiered files")
        chosen, explicit = verify_engines(engines)
        return verify_tiered(
            self.path,
            engines=chosen,
            queries=None if queries is None else _as_tiered_queries(queries),
            sample=sample,
            seed=seed,
            dataset=dataset,
            exact=exact,
            master=master,
            geometry=self.geometry_hint,
            required=required_engines(chosen, explicit),
        )


@dataclass(frozen=True)
class TieredDatasetInfo(ManifestInfo):
    """The result of :meth:`TieredDatasetStore.info`: the tiered dataset's manifest."""


class TieredDatasetStore(PinnedDataset, _TieredTablesInSql):
    """An exported dataset of tiered files (``tiered_files``, ``tiered_slots``,
    ``tiered_items``); opened ``as_of`` a version, every verb reads that one."""

    verbs = frozenset(
        {
            Verb.QUERY,
            Verb.QUERY_MANY,
            Verb.SCAN,
            Verb.TO_DUCKDB,
            Verb.TO_SPARK,
            Verb.SQL,
            Verb.IMPORT_FILES,
            Verb.INFO,
            Verb.VERSIONS,
            Verb.CONVERT_TO_DELTA,
            Verb.VACUUM,
        }
    )

    dataset_format = TIERED_DATASET_FORMAT
    instead: ClassVar[dict[Verb, str]] = {
        Verb.VERIFY: "verify needs the native tiered files as the reference: verify the "
        "files it was exported from, with this dataset as dataset=",
        Verb.CHECK: "check the tiered files it was exported from (import_files() rebuilds them)",
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

    def read_queries(self, path: str | os.PathLike[str], *, escaped: bool = False) -> list[Any]:
        """The queries of a TSV file with full keys ``topic#key``, as the tiered files'
        (:meth:`TieredStore.read_queries`)."""
        return read_tiered_queries(path, escaped=escaped)

    def answers(
        self,
        queries: Sequence[Any],
        *,
        engine: str | None = None,
        exact: bool = False,
        master: str | None = None,
    ) -> list[TieredAnswer]:

        self._check_open()
        with self._reading():
            return answer_with_engine(
                _sql_engine(engine),
                self.path,
                as_tiered_queries(queries),
                fmt="tiered",
                exact=exact,
                master=master,
            )

    def _arrow_tables(self) -> dict[str, pa.Table]:
        self._check_open()
        with self._reading():  # the pinned run's parts
            return dict(zip(self.tables, read_tiered_dataset(self.path), strict=True))

    def _check_lookup(self, request: LookupRequest) -> None:
        if request.engine == "native":
            raise UnsupportedOperationError(
                "a dataset is for the duckdb and spark engines; the native engine reads "
                "index files: use engine=duckdb or spark, or rebuild the files with "
                "import_files()"
            )

    def import_files(
        self,
        out_dir: str | os.PathLike[str],
        *,
        trust: bool = False,
        progress: ProgressCallback | None = None,
        wait: bool | float = False,
        force: bool = False,
        **options: Any,
    ) -> ImportedTieredFiles:
        """Byte-identical tiered files under ``out_dir`` (``force``: see
        :meth:`DatasetStore.import_files`).  ``trust`` is refused (it skips the
        parts check of a dataset of index files); ``progress`` is not called."""

        self._check_open()
        if options:
            raise UsageError(f"unknown import options {sorted(options)}")
        if trust:
            refuse("trust", "is for a dataset of index files (it skips checking its parts)")
        with self._reading():
            return ImportedTieredFiles(import_tiered(self.path, out_dir, wait=wait, force=force))

    def info(self, *, chains: bool = True) -> TieredDatasetInfo:
        """The manifest (a Delta dataset's: its pinned run's record, with ``delta``, the
        versions it pins, and ``versions``, those ``as_of`` takes)."""

        self._check_open()
        with self._reading():
            manifest = read_tiered_manifest(self.path)
        if "delta" in manifest:
            manifest = {**manifest, "versions": iso_versions(self.versions())}
        return TieredDatasetInfo(self.path, manifest)
