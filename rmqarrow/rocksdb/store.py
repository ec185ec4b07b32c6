"""RocketMQ's RocksDB message index (RIP-82) opened by :func:`rmqarrow.open`: the database
(read-only, the broker's directory untouched) or an exported dataset of it."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from rmqarrow._memory import duckdb_settings
from rmqarrow._progress import Progress, ProgressCallback
from rmqarrow._vocab import Format, Kind, Verb
from rmqarrow.converters.parquet.kind_read import kind_files, kind_manifest
from rmqarrow.engines import answer_with_engine
from rmqarrow.errors import DatasetError, EngineUnavailableError, UsageError
from rmqarrow.format.detect import ROCKSDB_DATASET_FORMAT, Target
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.times import as_epoch_ms, format_time
from rmqarrow.rocksdb import (
    BOOKKEEPING_KEYS,
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_MAX_QUERY_DAYS,
    QueryOffsetResult,
    RocksDBCheck,
    RocksDBIndex,
    RocksDBQuery,
    check_rocksdb,
    read_queries,
)
from rmqarrow.rocksdb.parquet import export_rocksdb, rocksdb_source_tables
from rmqarrow.store._base import (
    DEFAULT_MAX_NUM,
    OpenOptions,
    Store,
    check_dataset_of,
    check_max_num,
    refuse_commitlog,
    required_engines,
    verify_engines,
)
from rmqarrow.store._dataset import DatasetCheck, ManifestInfo, iso_versions
from rmqarrow.store._kind import PinnedDataset
from rmqarrow.store._results import LookupRequest, RocksDBLookup, RocksDBManifest, refuse
from rmqarrow.store._sql import SqlSession, check_sql_engine, duckdb_session, spark_session

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyspark.sql import SparkSession

    from rmqarrow.rocksdb.arrow import RocksDBTables

__all__ = [
    "RocksDBDatasetCheck",
    "RocksDBDatasetInfo",
    "RocksDBDatasetStore",
    "RocksDBInfo",
    "RocksDBStats",
    "RocksDBStore",
    "RocksDBVerify",
    "as_rocksdb_queries",
]

_TABLES = ("rocksdb_records", "rocksdb_bookkeeping")


def as_rocksdb_queries(queries: Sequence[Any]) -> list[RocksDBQuery]:
    """:class:`RocksDBQuery` s, or tuples ``(topic, key, max_num, begin, end[, index_type[,
    last_key]])``; a ``begin`` or ``end`` in epoch seconds is refused naming the query, by
    the rule the other stores' queries follow (store times are epoch milliseconds)."""
    out = []
    for i, q in enumerate(queries):
        if isinstance(q, RocksDBQuery):
            out.append(q)
        elif isinstance(q, tuple | list) and 5 <= len(q) <= 7:
            out.append(RocksDBQuery(*q))
        else:
            raise UsageError(
                f"a RocksDB-index query is a RocksDBQuery or (topic, key, max_num, "
                f"begin, end[, index_type[, last_key]]), got {q!r}"
            )
        as_epoch_ms(f"query {i}: begin", out[-1].begin)
        as_epoch_ms(f"query {i}: end", out[-1].end)
    return out


def _result_rows(qs: list[RocksDBQuery], answers: Sequence[QueryOffsetResult | None]) -> pa.Table:
    rows: dict[str, list[Any]] = {
        "query": [],
        "topic": [],
        "key": [],
        "result": [],
        "phy_offset": [],
    }
    for i, (q, a) in enumerate(zip(qs, answers, strict=True)):
        offsets: list[int | None] = (
            [None]
            if a is None or a.phy_offsets is None or not a.phy_offsets
            else list(a.phy_offsets)
        )
        for o in offsets:
            rows["query"].append(i)
            rows["topic"].append(q.topic)
            rows["key"].append(q.key)
            rows["result"].append(
                "null" if a is None else "null list" if a.phy_offsets is None else "ok"
            )
            rows["phy_offset"].append(o)
    return pa.table(
        rows,
        schema=pa.schema(
            [
                ("query", pa.int64()),
                ("topic", pa.string()),
                ("key", pa.string()),
                ("result", pa.string()),
                ("phy_offset", pa.int64()),
            ]
        ),
    )


def _rocksdb_queries(r: LookupRequest) -> tuple[list[RocksDBQuery], bool]:
    """A lookup's queries for the RocksDB index, and whether they came from a file (its
    own query file: every field on each line)."""
    if r.queries is not None:
        return read_queries(r.queries), True
    assert r.key is not None  # the request holds one or the other
    if r.topic is None:
        topic, sep, key = r.key.partition("#")
        if not sep:
            raise UsageError(
                "the RocksDB index is asked for a topic and a key: pass topic= with key= "
                "(or key='TOPIC#KEY')"
            )
    else:
        topic, key = r.topic, r.key
    query = RocksDBQuery(topic, key, r.max_num, r.begin, r.end, r.index_type, r.last_key)
    return [query], False


class _RocksDBSurface(Store):
    """What the database and its dataset share: queries with RocketMQ's answers."""

    format = Format.ROCKSDB
    tables = _TABLES

    def __init__(
        self,
        target: Target,
        *,
        max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
        max_query_days: int = DEFAULT_MAX_QUERY_DAYS,
    ) -> None:
        super().__init__(target)
        self.max_msgs_num_batch = max_msgs_num_batch
        self.max_query_days = max_query_days

    def _default_engine(self) -> str:
        return "native"

    def _source(self) -> Path:
        return self.path

    def answers(
        self,
        queries: Sequence[Any],
        *,
        engine: str | None = None,
        master: str | None = None,
        now: int | None = None,
    ) -> list[QueryOffsetResult | None]:
        """RocketMQ's ``queryOffset`` answer per query (None where it returns null)."""
        self._check_open()
        name = engine or self._default_engine()
        if name == "native" and self._default_engine() != "native":
            raise UsageError(
                "a dataset holds no RocksDB database for the native engine: use "
                "engine='duckdb' or 'spark'"
            )
        return answer_with_engine(
            name,
            self._source(),
            as_rocksdb_queries(queries),
            fmt="rocksdb",
            master=master,
            max_msgs_num_batch=self.max_msgs_num_batch,
            max_query_days=self.max_query_days,
            now=now,
        )

    def query_offset(
        self,
        topic: str,
        key: str,
        max_num: int,
        begin: int,
        end: int,
        index_type: str | None = None,
        last_key: str | None = None,
        *,
        engine: str | None = None,
    ) -> QueryOffsetResult | None:
        """``IndexRocksDBStore.queryOffset``, whole: None for RocketMQ's null.  ``begin``
        and ``end`` are epoch milliseconds: one in epoch seconds is refused with
        :class:`~rmqarrow.errors.InvalidValueError`, as by the other stores."""
        begin, end = as_epoch_ms("begin", begin), as_epoch_ms("end", end)
        q = RocksDBQuery(topic, key, max_num, begin, end, index_type, last_key)
        return self.answers([q], engine=engine)[0]

    def query(
        self,
        topic: str,
        key: str,
        *,
        begin: int = 0,
        end: int = JAVA_LONG_MAX,
        max_num: int = DEFAULT_MAX_NUM,
        engine: str | None = None,
        index_type: str | None = None,
        last_key: str | None = None,
    ) -> list[int]:
        """The offsets RocketMQ returns, in its order (empty where it returns null or a null
        list: :meth:`query_offset` tells them apart)."""
        a = self.query_offset(
            topic, key, check_max_num(max_num), begin, end, index_type, last_key, engine=engine
        )
        return [] if a is None or a.phy_offsets is None else list(a.phy_offsets)

    def query_many(
        self, queries: Sequence[Any], *, engine: str | None = None, master: str | None = None
    ) -> pa.Table:
        """One row per offset (one row with a null offset for an empty or null answer)."""
        qs = as_rocksdb_queries(queries)
        return _result_rows(qs, self.answers(qs, engine=engine, master=master))

    def _lookup(self, request: LookupRequest) -> RocksDBLookup:
        r = request
        if r.exact:
            refuse("exact", "is for the tiered index")
        if r.resolve is not None:
            refuse(
                "resolve",
                "is for IndexFiles; RocksDB answers hold exact topic and key matches "
                "already (byte prefixes: see explain=)",
            )
        if r.explain and (r.engine or self._default_engine()) != "native":
            refuse("explain", "traces the native walk over the database; drop engine=")
        queries, batch = _rocksdb_queries(r)
        answers = self.answers(queries, engine=r.engine, master=r.master)
        explained = self._explained(queries[0]) if r.explain else []
        return RocksDBLookup(queries, answers, batch, r.explain, explained, self.max_query_days)

    def _explained(self, q: RocksDBQuery) -> list[str]:
        """Why the native walk answered ``q`` as it did (the database only)."""
        refuse("explain", "traces the native walk over the database")

    def sample_queries(self, n: int = 200, *, seed: int = 0) -> list[RocksDBQuery]:
        """``n`` queries drawn from the records (seeded): every type, the hour of the record
        or a window of several hours, untyped ones (the K -> U fallback), paged ones, and a
        miss per ten."""
        t = self._tables().records
        rows = t.select(["hour", "topic", "type", "key", "uniq_key", "offset"]).to_pylist()
        rows = [r for r in rows if r["type"] is not None and r["hour"] and r["hour"] > 0]
        rng = random.Random(seed)
        out: list[RocksDBQuery] = []
        hour, days = 3_600_000, max(self.max_query_days, 1)
        for i in range(n):
            if not rows:
                break
            r = rng.choice(rows)
            key = r["uniq_key"] if r["type"] == "U" else r["key"]
            begin = r["hour"] - hour * rng.randrange(0, 4)
            end = min(begin + hour * rng.randrange(1, 24 * days), begin + days * 86_400_000)
            kind = i % 10
            if kind == 9:
                out.append(RocksDBQuery(r["topic"], f"{key}-miss", 16, begin, end, r["type"]))
            elif kind == 8:
                out.append(RocksDBQuery(r["topic"], key, 16, begin, end, None))
            elif kind == 7 and r["type"] != "U":
                last = f"{r['hour']}@{r['topic']}@{r['type']}@{key}@{r['uniq_key']}@{r['offset']}"
                out.append(RocksDBQuery(r["topic"], key, 4, begin, end, r["type"], last))
            else:
                out.append(
                    RocksDBQuery(r["topic"], key, rng.choice((1, 4, 64)), begin, end, r["type"])
                )
        return out

    def read_queries(self, path: str | os.PathLike[str], *, escaped: bool = False) -> list[Any]:
        """The queries of a TSV file ``topic, key, index_type, max_num, begin, end,
        last_key`` (:func:`rmqarrow.rocksdb.read_queries`; its own escapes, whatever
        ``escaped``)."""
        return list(read_queries(path))

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
    ) -> RocksDBVerify:
        """The same queries through every engine, each answer compared with the
        reference's (native on the database, the first engine on a dataset): ``queries``
        (:class:`RocksDBQuery` s or tuples), or ``sample`` drawn from the records with
        ``seed``.  ``engines`` None: every engine that runs (Spark is skipped when it
        cannot start, e.g. no pyspark or no Java); an engine named must run.
        ``dataset``: the SQL engines read that export instead."""
        self._check_open()
        if keys is not None:
            raise UsageError(
                "keys= are the IndexFiles' sampling source; a RocksDB index's queries are "
                "sampled from its records: give queries= to choose them"
            )
        if not chain_check:
            raise UsageError(
                "chain_check=False skips the IndexFiles' chain scan; a RocksDB index has no "
                "hash chains: drop it (check() reads its records)"
            )
        if as_of is not None:
            raise UsageError(
                f"as_of={as_of}: a RocksDB index's dataset= is compared at its latest "
                "version; open an older one with rmqarrow.open(dataset, as_of=...) and query it"
            )
        check_dataset_of(dataset, Kind.ROCKSDB_DATASET, "a RocksDB index")
        chosen, explicit = verify_engines(engines)
        required = required_engines(chosen, explicit)
        qs = (
            as_rocksdb_queries(queries)
            if queries is not None
            else self.sample_queries(sample, seed=seed)
        )
        names = [e for e in chosen if not (e == "native" and self._default_engine() != "native")]
        if not names:
            raise UsageError("no engine to compare: a dataset is read by duckdb and spark")
        reference = names[0]
        result = RocksDBVerify(reference, len(qs))
        answers: dict[str, list[QueryOffsetResult | None]] = {}
        for name in names:
            source = Path(dataset) if dataset is not None and name != "native" else self._source()
            try:
                answers[name] = answer_with_engine(
                    name,
                    source,
                    qs,
                    fmt="rocksdb",
                    master=master,
                    max_msgs_num_batch=self.max_msgs_num_batch,
                    max_query_days=self.max_query_days,
                )
            except EngineUnavailableError as exc:
                if name in required:
                    raise
                result.skipped[name] = str(exc)
        ref = answers[reference]
        for name, got in answers.items():
            result.agree[name] = sum(a == b for a, b in zip(ref, got, strict=True))
            for i, (a, b) in enumerate(zip(ref, got, strict=True)):
                if a != b:
                    result.mismatches.append(
                        {
                            "engine": name,
                            "query": i,
                            "topic": qs[i].topic,
                            "key": qs[i].key,
                            "expected": _describe(a),
                            "got": _describe(b),
                        }
                    )
        return result

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
    ) -> RocksDBStats:
        """Key-less questions in SQL (DuckDB): per hour, per topic, tags, hot keys, and
        what was indexed in ``between``, one table each by name.  No ``commitlog`` (the
        records hold topic, keys and tags already), no other engine, no ``with_check``
        (``check()`` is the RocksDB index's own)."""
        from rmqarrow.rocksdb.duckdb import rocksdb_stats

        self._check_open()
        if commitlog is not None:
            raise UsageError(
                "a CommitLog adds the IndexFile's messages view; the RocksDB index's "
                "records already hold topic, keys and tags"
            )
        if engine != "duckdb" or master is not None:
            raise UsageError(f"the RocksDB index's figures are DuckDB's, got engine {engine!r}")
        if with_check:
            raise UsageError(
                "with_check=True draws the IndexFile figures' page with check()'s verdict; a "
                "RocksDB index's stats print as tables: drop it, and check() this index for "
                "its verdict"
            )
        con = self.to_duckdb()
        try:
            return RocksDBStats(rocksdb_stats(con, top=top, between=between, limit=limit))
        finally:
            con.close()

    def sql(
        self,
        engine: str = "duckdb",
        *,
        commitlog: str | os.PathLike[str] | None = None,
        master: str | None = None,
    ) -> SqlSession:
        """Statements over ``rocksdb_records`` and ``rocksdb_bookkeeping``; no
        ``commitlog`` (the records hold topic, keys and tags already)."""
        self._check_open()
        if commitlog:
            refuse(
                "commitlog",
                "adds the IndexFile's messages view; the RocksDB index's records already "
                "hold topic, keys and tags",
            )
        if check_sql_engine(engine) == "spark":
            from rmqarrow.converters.spark import get_spark

            return spark_session(self.to_spark(get_spark(master)))
        con = self.to_duckdb()
        return duckdb_session(con, con.close)

    def _tables(self) -> RocksDBTables:
        self._check_open()
        return rocksdb_source_tables(self._source())

    def scan(
        self, table: str, *, columns: list[str] | None = None, filter: pads.Expression | None = None
    ) -> pa.RecordBatchReader:
        self._check_table(table, columns)
        t = self._tables()
        data = t.records if table == "rocksdb_records" else t.bookkeeping
        return pads.dataset(data).scanner(columns=columns, filter=filter).to_reader()

    def to_duckdb(self, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
        """Views ``rocksdb_records`` and ``rocksdb_bookkeeping`` on ``con`` (or new)."""
        import duckdb

        from rmqarrow.rocksdb.duckdb import register_rocksdb

        connection = con if con is not None else duckdb.connect(config=duckdb_settings())
        register_rocksdb(connection, self._tables())
        return connection

    def to_spark(self, spark: SparkSession | None = None) -> SparkSession:
        """The same tables as Spark temporary views."""
        from rmqarrow.converters.spark.session import get_spark
        from rmqarrow.rocksdb.spark import register_rocksdb

        self._check_open()
        session = spark if spark is not None else get_spark()
        register_rocksdb(session, self._source())
        return session


@dataclass
class RocksDBVerify:
    """Every engine's answers compared with the reference (native on a database, the first
    engine on a dataset): per engine the queries that agree, and the mismatches."""

    reference: str
    queries: int
    agree: dict[str, int] = field(default_factory=dict)
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "queries": self.queries,
            "ok": self.ok,
            "agree": dict(self.agree),
            "mismatches": list(self.mismatches),
            "skipped": dict(self.skipped),
        }


@dataclass(frozen=True)
class RocksDBStats:
    """The result of a RocksDB index's ``stats()``: its figures as tables, by name (per
    hour, per topic, tags, hot keys, and what was indexed in the window asked for)."""

    tables: dict[str, pa.Table]

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {name: t.to_pylist() for name, t in self.tables.items()}


@dataclass(frozen=True)
class RocksDBInfo:
    """The result of :meth:`RocksDBStore.info`: families, bookkeeping, the first and last
    hour bucket, RocksDB's own record estimate (no scan) and the files."""

    path: str
    format: str
    column_families: list[str]
    estimated_records: int | None
    first_hour: int | None
    first_hour_time: str | None
    last_hour: int | None
    last_hour_time: str | None
    last_offset_py: int | None
    last_store_timestamp: int | None
    last_store_time: str | None
    files: int
    bytes: int
    max_msgs_num_batch: int
    max_query_days: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RocksDBDatasetInfo(ManifestInfo):
    """The result of :meth:`RocksDBDatasetStore.info`: the RocksDB dataset's manifest."""


@dataclass(frozen=True)
class RocksDBDatasetCheck(DatasetCheck):
    """The result of :meth:`RocksDBDatasetStore.check`: each table's rows against the
    manifest."""


def _describe(a: QueryOffsetResult | None) -> str:
    if a is None:
        return "null"
    if a.phy_offsets is None:
        return "null list"
    return ",".join(str(o) for o in a.phy_offsets) or "empty"


class RocksDBStore(_RocksDBSurface):
    """The database, read-only through a shadow (the broker's directory is never written,
    locked or renamed, also while the broker runs)."""

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
            Verb.STATS,
            Verb.VERIFY,
        }
    )

    @classmethod
    def opened(cls, target: Target, options: OpenOptions) -> Self:
        """The RocksDB index ``target`` holds (a RocksDB directory or a broker root's)."""
        return cls(target, **options.rocksdb)

    @property
    def db_path(self) -> Path:
        """The database directory (a broker root's ``rocksdbstore/``)."""
        return self.target.rocksdb_dir or self.path

    def _source(self) -> Path:
        return self.db_path

    def open_index(self) -> RocksDBIndex:
        """The database as a :class:`~rmqarrow.rocksdb.RocksDBIndex` (close it after)."""
        self._check_open()
        return RocksDBIndex.open(
            self.db_path,
            max_msgs_num_batch=self.max_msgs_num_batch,
            max_query_days=self.max_query_days,
        )

    def explain(self, q: RocksDBQuery, *, now: int | None = None) -> list[str]:
        """Why RocketMQ answers ``q`` as it does (window, cap, fallback, buckets)."""
        with self.open_index() as index:
            return index.explain(q, now=now)

    def _explained(self, q: RocksDBQuery) -> list[str]:
        return self.explain(q)

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
        batch_rows: int = 65_536,
        **options: Any,
    ) -> RocksDBManifest:
        """A RocksDB-index dataset at ``dest`` (the local engine, no ``commitlog``: the
        records hold topic, keys and tags already); returns its manifest.  ``progress``
        counts the records written, every ``batch_rows``."""
        self._check_open()
        if options:
            raise UsageError(f"unknown export options {sorted(options)}")
        if engine != "local" or master is not None or commitlog:
            raise UsageError("a RocksDB index exports with the local engine, without commitlog=")
        with Progress(None, "exporting records", "records", callback=progress) as counted:

            def written(records: int) -> None:
                counted.advance(records - counted.done)

            manifest = export_rocksdb(
                self.db_path,
                dest,
                overwrite=overwrite,
                wait=wait,
                batch_rows=batch_rows,
                progress=written if progress is not None else None,
            )
        return RocksDBManifest(manifest)

    def _sync_instead(self) -> str:
        if self.target.rocksdb_dir == self.target.path:
            return super()._sync_instead()
        if (self.target.path / "index").is_dir():
            return (
                "only IndexFiles are kept in step: open this store root for its IndexFiles "
                "(index/, the default) rather than its RocksDB index"
            )
        # a 5.x broker keeps rocksdbstore/ for its timers and transactions whatever its
        # index, and makes index/ at its first message: a follower started with the
        # broker finds this
        return (
            f"only IndexFiles are kept in step, and this broker root has no index/ yet (a "
            f"broker makes it at its first message, and keeps {self.db_path.name}/ for "
            "other data too): start the follower once index/ exists, or export the RocksDB "
            "index whole"
        )

    def check(self, *, commitlog: str | os.PathLike[str] | None = None) -> RocksDBCheck:
        """Keys that do not parse, values of the wrong size, bookkeeping behind the records,
        and (with the store root's CommitLog, or ``commitlog``) buckets outside its span."""
        self._check_open()
        cl = commitlog if commitlog is not None else self.target.commitlog_dir
        return check_rocksdb(self.db_path, commitlog=cl)

    def info(self, *, chains: bool = True) -> RocksDBInfo:
        """Families, bookkeeping, the first and last hour bucket, the estimated record
        count (RocksDB's own estimate: no scan) and the files."""
        with self.open_index() as index:
            first = next((k for k, _ in index.iter_pairs() if k not in BOOKKEEPING_KEYS), None)
            last = index.last_record_key()
            estimate = index.estimate_records()
            families = index.column_families()
            lop, lst = index.last_offset_py, index.last_store_timestamp
        first_hour = int.from_bytes(first[:8], "big", signed=True) if first else None
        last_hour = int.from_bytes(last[:8], "big", signed=True) if last else None
        files = sorted(self.db_path.iterdir())
        return RocksDBInfo(
            path=str(self.db_path),
            format="RocketMQ RocksDB message index (RIP-82)",
            column_families=families,
            estimated_records=estimate,
            first_hour=first_hour,
            first_hour_time=format_time(first_hour) if first_hour is not None else None,
            last_hour=last_hour,
            last_hour_time=format_time(last_hour) if last_hour is not None else None,
            last_offset_py=lop,
            last_store_timestamp=lst,
            last_store_time=format_time(lst) if lst else None,
            files=len(files),
            bytes=sum(f.stat().st_size for f in files if f.is_file()),
            max_msgs_num_batch=self.max_msgs_num_batch,
            max_query_days=self.max_query_days,
        )


class RocksDBDatasetStore(PinnedDataset, _RocksDBSurface):
    """An exported dataset of a RocksDB index: lookups in SQL (DuckDB unless Spark); opened
    ``as_of`` a version, every verb reads that one."""

    verbs = frozenset(
        {
            Verb.QUERY,
            Verb.QUERY_MANY,
            Verb.SCAN,
            Verb.TO_DUCKDB,
            Verb.TO_SPARK,
            Verb.SQL,
            Verb.CHECK,
            Verb.INFO,
            Verb.STATS,
            Verb.VERIFY,
            Verb.VERSIONS,
            Verb.CONVERT_TO_DELTA,
            Verb.VACUUM,
        }
    )

    dataset_format = ROCKSDB_DATASET_FORMAT

    @classmethod
    def opened(cls, target: Target, options: OpenOptions) -> Self:
        """The exported RocksDB index at ``target``, pinned ``as_of`` when given."""
        return cls(target, **options.rocksdb, as_of=options.as_of)

    def __init__(
        self,
        target: Target,
        *,
        max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
        max_query_days: int = DEFAULT_MAX_QUERY_DAYS,
        as_of: object = None,
    ) -> None:
        super().__init__(
            target, max_msgs_num_batch=max_msgs_num_batch, max_query_days=max_query_days
        )
        self._pin(as_of)

    def _default_engine(self) -> str:
        return "duckdb"

    def _export_instead(self) -> str:
        return "it already is a dataset: copy it, or query it as it is"

    def _import_instead(self) -> str:
        return (
            "a RocksDB index's dataset is read as it is (query, sql); import takes a "
            "dataset made by export (`rmqarrow export`) of index files or tiered files"
        )

    def _tables(self) -> RocksDBTables:
        with self._reading():
            return super()._tables()

    def answers(
        self,
        queries: Sequence[Any],
        *,
        engine: str | None = None,
        master: str | None = None,
        now: int | None = None,
    ) -> list[QueryOffsetResult | None]:
        with self._reading():
            return super().answers(queries, engine=engine, master=master, now=now)

    def to_spark(self, spark: SparkSession | None = None) -> SparkSession:
        with self._reading():
            return super().to_spark(spark)

    def check(self, *, commitlog: str | os.PathLike[str] | None = None) -> RocksDBDatasetCheck:
        """Each table's rows against the manifest (the pinned run's, of a Delta dataset)."""
        self._check_open()
        refuse_commitlog(commitlog, "an exported dataset")
        with self._reading():
            manifest = kind_manifest(self.path, ROCKSDB_DATASET_FORMAT)
            problems = []
            for name in _TABLES:
                want = manifest.rows(name, self.path)
                try:
                    got = sum(
                        pq.ParquetFile(p).metadata.num_rows
                        for p in kind_files(self.path, name, manifest)
                    )
                except (OSError, ValueError, DatasetError) as exc:
                    problems.append(f"{name}: unreadable ({exc})")
                    continue
                if got != want:
                    problems.append(f"{name}: {got} rows, the manifest says {want}")

        return RocksDBDatasetCheck(self.path, problems)

    def info(self, *, chains: bool = True) -> RocksDBDatasetInfo:
        """The dataset's manifest (a Delta dataset's: its pinned run's record, with
        ``delta``, the versions it pins, and ``versions``, those ``as_of`` takes)."""
        self._check_open()
        with self._reading():
            manifest = kind_manifest(self.path, ROCKSDB_DATASET_FORMAT)

        record = manifest.to_dict()
        if manifest.delta is not None:
            record = {**record, "versions": iso_versions(self.versions())}
        return RocksDBDatasetInfo(self.path, record)
