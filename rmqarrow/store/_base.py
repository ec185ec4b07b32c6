"""The surface every opened store shares, and the one error for what a kind cannot do."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, Self

from rmqarrow._closing import Closing
from rmqarrow._paths import is_uri
from rmqarrow._progress import ProgressCallback
from rmqarrow._vocab import Engine, Format, Kind, Verb
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA
from rmqarrow.converters.schema import ROCKSDB_SCHEMAS, SCHEMAS, TIERED_SCHEMAS
from rmqarrow.errors import (
    ClosedIndexError,
    InvalidValueError,
    StoreNotFoundError,
    UnsupportedOperationError,
    UsageError,
)
from rmqarrow.format.detect import Target, describe, detect
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import GeometryHint
from rmqarrow.format.query_file import read_query_file
from rmqarrow.store._results import Lookup, LookupRequest
from rmqarrow.store._sql import SqlSession

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MAX_NUM",
    "OpenOptions",
    "Store",
    "check_max_num",
    "refuse_commitlog",
    "required_engines",
    "verify_engines",
]

_log = logging.getLogger("rmqarrow.store")

#: ``query``'s default cap, as the command line's ``--max-num``.
DEFAULT_MAX_NUM = 64


def check_max_num(max_num: object) -> int:
    """``max_num`` as a non-negative int (bools and floats are refused, not truncated)."""
    if isinstance(max_num, bool) or not isinstance(max_num, int) or max_num < 0:
        raise InvalidValueError(f"max_num must be an int >= 0, got {max_num!r}")
    return max_num


def verify_engines(engines: object) -> tuple[list[str], bool]:
    """The engines a ``verify`` runs and whether they were named: those given (a list of
    engine names, checked), or every engine."""
    names = [str(e) for e in Engine]
    if engines is None:
        return names, False
    if isinstance(engines, str) or not isinstance(engines, Sequence):
        raise UsageError(f"engines must be a list of {', '.join(names)}, got {engines!r}")
    unknown = [e for e in engines if e not in names]
    if unknown:
        raise UsageError(f"engines must be a list of {', '.join(names)}, got {list(engines)!r}")
    return [str(e) for e in engines], True


def required_engines(chosen: Sequence[str], named: bool) -> list[str]:
    """Which of the ``chosen`` engines must run: every one named; by default all but
    Spark, which is skipped where it cannot run (no pyspark, no Java)."""
    return list(chosen) if named else [e for e in chosen if e != Engine.SPARK]


def refuse_commitlog(commitlog: object, what: str) -> None:
    """A CommitLog given to the check of a kind whose entries it cannot check, refused."""
    if commitlog is not None:
        raise UsageError(
            f"commitlog={commitlog}: {what} is checked on its own; only RocketMQ's IndexFiles "
            "and RocksDB index are checked against a CommitLog"
        )


def check_dataset_of(dataset: str | os.PathLike[str] | None, kind: str, of: str) -> Target | None:
    """A ``dataset=`` to verify against, detected; refused unless it is the export of this
    store's format (``kind``, named ``of``): one of another format answers nothing, and
    its answers would read as mismatches or empty answers.  One on object storage is left
    to the reader (None)."""
    if dataset is None or is_uri(dataset):
        return None
    target = detect(dataset)
    if target.kind == kind:
        return target
    if target.kind == Kind.MISSING:
        raise StoreNotFoundError(
            f"dataset={dataset}: no such dataset; pass the dataset export() wrote from this store"
        )
    raise UsageError(
        f"dataset={dataset}: not an exported dataset of {of} (it is {target.detail}); "
        "pass the dataset export() wrote from this store, or export it first"
    )


def _table_columns(table: str) -> tuple[str, ...]:
    """The columns every kind's ``table`` has (the schemas its scans are written in), or
    nothing for a table no schema names."""
    if table == "messages":
        return tuple(MESSAGES_SCHEMA.names)
    schema = {**SCHEMAS, **TIERED_SCHEMAS, **ROCKSDB_SCHEMAS}.get(table)
    return () if schema is None else tuple(schema.names)


@dataclass(frozen=True)
class OpenOptions:
    """What :func:`rmqarrow.open` was given beyond the path; each kind of store takes
    the ones it uses (:meth:`Store.opened`)."""

    #: what was said of the geometry (the kinds whose format has one read it)
    geometry: GeometryHint = GeometryHint.NONE
    strict: bool = False
    as_of: object = None
    #: the RocksDB index's ``max_msgs_num_batch`` and ``max_query_days`` when given
    rocksdb: dict[str, int] = field(default_factory=dict)


class Store(Closing):
    """A path opened by :func:`rmqarrow.open`: the same methods for every kind.

    Subclasses implement what their kind can do; the rest raises
    :class:`~rmqarrow.errors.UnsupportedOperationError` naming the kind and what to use.
    """

    #: the index format this store holds
    format: Format = Format.INDEX
    #: the tables :meth:`scan` reads
    tables: tuple[str, ...] = ()
    #: what this kind answers (every other verb raises
    #: :class:`~rmqarrow.errors.UnsupportedOperationError`); declared by each kind, and
    #: held to the methods it implements by the test suite
    verbs: ClassVar[frozenset[Verb]] = frozenset()
    #: what to use instead of a verb this kind does not answer, where it says more than
    #: the surface's general advice (the refusal names the path and the kind either way)
    instead: ClassVar[dict[Verb, str]] = {}

    def __init__(self, target: Target, geometry: GeometryHint = GeometryHint.NONE) -> None:
        self.target = target
        #: the geometry given to :func:`rmqarrow.open` (what is not given is fitted)
        self.geometry_hint = geometry
        self._closed = False
        #: run once by :meth:`close` (a dataset on object storage: its local snapshot)
        self._cleanup: Callable[[], object] | None = None

    @classmethod
    def opened(cls, target: Target, options: OpenOptions) -> Self:
        """This kind of store over the detected ``target``, with the options it uses."""
        return cls(target, options.geometry)

    @property
    def path(self) -> Path:
        """The path as given."""
        return self.target.path

    @property
    def kind(self) -> str:
        """What the path is (:data:`rmqarrow.format.detect.KINDS`)."""
        return self.target.kind

    @property
    def description(self) -> str:
        """What the path is and which command takes it, in one phrase."""
        return describe(self.target)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            cleanup()

    def supports(self, verb: Verb | str) -> bool:
        """Whether this store answers ``verb`` (a :class:`~rmqarrow.Verb` or its name).

        A name that is no verb is refused rather than answered False: ``"vaccum"`` or
        the command's ``"import"`` would otherwise read as a verb this kind lacks."""
        if verb not in set(Verb):
            raise UsageError(
                f"verb={verb!s}: not a verb; choose from {', '.join(v.value for v in Verb)}"
            )
        return verb in self.verbs

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        return f"<{type(self).__name__} {self.kind} {str(self.path)!r}{state}>"

    # -- helpers for subclasses ---------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedIndexError(f"{self.path}: this store was closed; open it again")

    def _unsupported(self, what: str, instead: str) -> NoReturn:
        raise UnsupportedOperationError(
            f"{self.path}: {what} is not available for {self.target.detail or self.kind}; {instead}"
        )

    def _refuse(self, verb: Verb, instead: str) -> NoReturn:
        """``verb`` refused, with this kind's own advice when it declares one."""
        self._unsupported(verb.value, self.instead.get(verb, instead))

    def read_queries(self, path: str | os.PathLike[str], *, escaped: bool = False) -> list[Any]:
        """The queries of a TSV file (``-``: stdin) in the form this kind's lookups take
        (RocketMQ's IndexFiles: ``key[<TAB>max_num[<TAB>begin[<TAB>end]]]``, a header line
        allowed); ``escaped``: the keys are written escaped."""
        return read_query_file(path, escaped=escaped)

    def _check_table(self, table: str, columns: object = None) -> None:
        if columns is not None and (
            not isinstance(columns, list | tuple) or not all(isinstance(c, str) for c in columns)
        ):
            raise InvalidValueError(f"columns must be a list of column names, got {columns!r}")
        if table not in self.tables:
            raise InvalidValueError(
                f"unknown table {table!r} for {self.kind}; choose from {', '.join(self.tables)}"
            )
        known = _table_columns(table)
        unknown = [c for c in columns or () if known and c not in known]
        if unknown:
            # pyarrow would refuse it too, deep in the scan, with its whole schema dump
            raise InvalidValueError(
                f"unknown column{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(c) for c in unknown)} in table {table!r}; choose from "
                f"{', '.join(known)}"
            )

    # -- the surface ----------------------------------------------------------------------

    def query(
        self,
        topic: str,
        key: str,
        *,
        begin: int = 0,
        end: int = JAVA_LONG_MAX,
        max_num: int = DEFAULT_MAX_NUM,
        engine: str | None = None,
    ) -> list[Any]:
        """Look ``topic#key`` up with RocketMQ's semantics (offsets for the index format,
        items for the tiered one), newest first."""
        self._unsupported("query", "open the index files themselves")

    def query_many(self, queries: Sequence[Any], *, engine: str | None = None) -> pa.Table:
        """Many lookups at once, one row per hit in each query's answer order."""
        self._unsupported("query_many", "open the index files themselves")

    def lookup(
        self,
        key: str | None = None,
        *,
        topic: str | None = None,
        queries: str | os.PathLike[str] | None = None,
        escaped: bool = False,
        begin: int = 0,
        end: int = JAVA_LONG_MAX,
        max_num: int = DEFAULT_MAX_NUM,
        index_type: str | None = None,
        last_key: str | None = None,
        exact: bool = False,
        engine: str | None = None,
        master: str | None = None,
        explain: bool = False,
        resolve: str | os.PathLike[str] | None = None,
    ) -> Lookup:
        """One lookup (``key``, the full key TOPIC#KEY or with ``topic``) or a file of them
        (``queries``, in the format's query file; ``-`` reads stdin), answered as the
        format answers, with what was asked besides: ``explain`` (the native lookup's
        reasons), ``resolve`` (IndexFiles: the hits read back from this CommitLog),
        ``exact`` (tiered: every match), ``index_type`` and ``last_key`` (the RocksDB
        index's type and page).  The same parameters for every kind; one a kind cannot
        use is refused naming it.  Returns the format's result type: an
        :class:`~rmqarrow.store.OffsetLookup`, :class:`~rmqarrow.store.TieredLookup` or
        :class:`~rmqarrow.store.RocksDBLookup`.  ``begin``/``end`` are epoch ms."""
        request = LookupRequest(
            key=key,
            topic=topic,
            queries=queries,
            escaped=escaped,
            begin=begin,
            end=end,
            max_num=max_num,
            index_type=index_type,
            last_key=last_key,
            exact=exact,
            engine=engine,
            master=master,
            explain=explain,
            resolve=resolve,
        )
        self._check_open()
        return self._lookup(request)

    def _lookup(self, request: LookupRequest) -> Lookup:
        """:meth:`lookup` of this kind (every kind that answers ``query`` has one)."""
        self._unsupported("query", "open the index files themselves")

    def scan(
        self,
        table: str,
        *,
        columns: list[str] | None = None,
        filter: pads.Expression | None = None,
    ) -> pa.RecordBatchReader:
        """One table (see :attr:`tables`) streamed as Arrow, projection and filter applied."""
        self._unsupported("scan", "open the index files or an exported dataset")

    def to_duckdb(self, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with the tables registered as views (and lookup macros).

        On ``con`` (your own connection) they are temporary objects, and a connection
        already holding one of their names (yours, or a store registered before) is
        refused in one line naming the clash: nothing of yours is replaced.  Give each
        store a connection of its own."""
        self._unsupported("to_duckdb", "open the index files or an exported dataset")

    def to_spark(self, spark: SparkSession | None = None) -> SparkSession:
        """A SparkSession with the tables registered as temporary views."""
        self._unsupported("to_spark", "open the index files or an exported dataset")

    def sql(
        self,
        engine: str = "duckdb",
        *,
        commitlog: str | os.PathLike[str] | None = None,
        master: str | None = None,
    ) -> SqlSession:
        """A session running SQL statements over the tables (DuckDB with the format's
        lookup macros, or Spark on ``master``), as the command line's ``sql`` does:
        streamed a batch at a time; ``commitlog`` adds the ``messages`` view (IndexFiles;
        a broker store root's own CommitLog is added without it).  Close it after."""
        raise UnsupportedOperationError(f"{self.path}: {self.description}")

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
    ) -> dict[str, Any]:
        """Write the store as a Parquet dataset; returns the dataset's manifest (a dict of
        the format's type: :class:`~rmqarrow.store.IndexManifest`, ``TieredManifest``,
        ``RocksDBManifest``).  ``engine`` local or spark (``master``), ``commitlog``
        adds the messages table, ``wait`` for another writer of ``dest``; a kind refuses
        the ones it cannot use, naming them."""
        self._unsupported("export", self._export_instead())

    def _export_instead(self) -> str:
        return "it already is a dataset: copy it, or import it back into files with import_files()"

    def sync(self, *args: Any, **options: Any) -> Any:
        """An incremental export (RocketMQ's IndexFiles only: see ``IndexStore.sync``)."""
        self._unsupported("an incremental export (sync, --incremental)", self._sync_instead())

    def follow(self, *args: Any, **options: Any) -> Any:
        """Incremental exports in a loop (IndexFiles only: see ``IndexStore.follow``)."""
        self._unsupported("following (follow, --follow)", self._sync_instead())

    def _sync_instead(self) -> str:
        return (
            "only RocketMQ's IndexFiles (a broker's store/index, or its store root) are kept "
            "in step"
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
    ) -> list[Path]:
        """Rebuild the files of an exported dataset under ``out_dir`` (a list of the
        format's type: :class:`~rmqarrow.store.ImportedIndexFiles`,
        ``ImportedTieredFiles``); ``trust`` skips checking the parts, ``wait`` for
        another writer, ``force`` writes where a broker runs."""
        self._unsupported("import_files", self._import_instead())

    def _import_instead(self) -> str:
        return (
            "only an exported dataset is imported: import takes a dataset made by export "
            "(`rmqarrow export`) of index files or tiered files"
        )

    def check(self, *, commitlog: str | os.PathLike[str] | None = None) -> Any:
        """Every file checked (sizes, headers, chains); ``.ok`` and ``.to_dict()``.  With
        ``commitlog`` (the kinds whose entries point into one), also the entries pointing
        at no message."""
        self._refuse(Verb.CHECK, "check the index files it was exported from")

    def info(self, *, chains: bool = True) -> Any:
        """Per file: header fields, geometry, fill, status (``.to_dict()``); ``chains=False``
        skips the scan of IndexFiles' chains for damage (the other kinds' figures read no
        chains either way)."""
        self._refuse(Verb.INFO, "open the index files themselves")

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
    ) -> Any:
        """The figures of the index: ``top`` hottest keys, what was indexed ``between``
        two times (ms; ``limit`` rows of it), and (with ``commitlog``) the index against
        its log; each kind's result type renders them."""
        self._refuse(
            Verb.STATS,
            "the figures are an IndexFile's or a RocksDB index's; query or scan this one",
        )

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
    ) -> Any:
        """The same queries through every engine, each answer compared with the native
        lookup's: ``queries`` (as :meth:`read_queries` reads them), or ``sample`` drawn
        with ``seed`` (from ``keys``, full index keys, where the kind samples keys); with
        ``dataset`` (its version ``as_of``) the SQL engines answer from that export.

        ``engines`` None: native, DuckDB and Spark where it runs; an engine named must
        run.  ``chain_check=False`` skips the scan of IndexFiles for damaged chains."""
        self._refuse(Verb.VERIFY, "verify the index files or RocksDB index it came from")

    def versions(self) -> list[dict[str, Any]]:
        """The versions of an exported dataset a reader can open ``as_of``."""
        self._unsupported("versions", "only an exported dataset keeps versions")

    def convert_to_delta(self, *, wait: bool | float = False) -> bool:
        """Make an exported dataset's tables Delta tables in place."""
        self._unsupported(
            "convert_to_delta",
            "only an exported dataset is converted: this takes a dataset made by "
            "`rmqarrow export` (or export())",
        )

    def vacuum(
        self,
        retention_hours: int | None = None,
        *,
        dry_run: bool = False,
        wait: bool | float = False,
        force: bool = False,
    ) -> dict[str, list[str]]:
        """Delete the parts of an exported dataset that no recent version reads."""
        self._unsupported(
            "vacuum",
            "only an exported dataset of Delta tables is vacuumed: this takes a dataset "
            "made by `rmqarrow export` (or export())",
        )
