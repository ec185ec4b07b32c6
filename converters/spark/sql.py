"""Spark SQL over an index: RocketMQ's lookup as joins and windows, and the CLI's API.

The views come from :func:`rmqarrow.converters.spark.tables.register_tables` (re-exported here):
``files``, ``slots``, ``entries`` over a Parquet dataset or a native store.

The lookup reproduces ``IndexService.queryOffset`` (see ``rmqarrow/_rules.py``) without
walking chains row by row (Spark's ``WITH RECURSIVE`` is far too slow for that):

* files newest first (Java string order of names, ranked on the driver); a file is
  searched only if its time span touches ``[begin, end]``, and the walk over files stops
  after the first file whose ``begin_timestamp < begin`` -- so file ``f`` is searched only
  while every newer file has ``begin_timestamp >= begin`` (``newer_min_begin``);
* in a file, the chain of slot ``h % hash_slot_num`` is that slot's entries in descending
  position (true of every file RocketMQ writes); the walk ends at the first entry older
  than ``begin`` or with a negative time diff (a *stopper*);
* the join of queries with their slots keeps only candidates (hash equal, time in range)
  and stoppers; ordered newest file first, position descending, a candidate is a hit
  unless a stopper of the same file came before it (a running max of the stoppers' file
  rank); the first ``max_num`` hits are the answer.  Both windows share one partitioning
  and order (by query; file rank, position descending): one shuffle, one sort, of rows
  that are nearly all hits.

Key hashes never go through a row-at-a-time Python UDF: query lists are hashed with
:func:`rmqarrow.index_key_hashes` on the driver, and DataFrames of keys in the JVM
(``java.util.Objects.hashCode`` is ``String.hashCode``) or, with ``hash_with="arrow"``,
vectorized through an Arrow UDF.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rmqarrow.converters.spark.batches import piece_batches, plan_pieces
from rmqarrow.converters.spark.pushdown import Pushdown
from rmqarrow.converters.spark.runner import temp_views
from rmqarrow.converters.spark.session import get_spark, spark_error
from rmqarrow.converters.spark.tables import (
    Target,
    file_order,
    file_order_view,
    files_on_driver,
    register_tables,
    register_views,
)

from rmqarrow.errors import DatasetError, InvalidValueError
from rmqarrow.format.detect import require_index_source
from rmqarrow.format.hashing import check_query_key
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.format.queries import Query
from rmqarrow.kernels.hashing import index_key_hashes

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "LOOKUP_COLUMNS",
    "Target",
    "answer_queries",
    "arrow_key_hash",
    "bulk_lookup",
    "jvm_key_hash",
    "lookup",
    "queries_frame",
    "register_tables",
    "sql",
]

DEFAULT_MAX_NUM = 64  # RocketMQ's maxMsgsNumBatch

#: Columns of :func:`lookup`'s result.
LOOKUP_COLUMNS = (
    "qid",
    "ordinal",
    "phy_offset",
    "file_name",
    "position",
    "store_timestamp",
    "key_hash",
)

_PAIRS_VIEW = "_rmq_pairs"

# Constant SQL text; queries arrive as a temp view, never formatted into the text.
_QF_SQL = """
  SELECT q.qid, q.key_hash AS h, q.max_num, q.begin_ms, q.end_ms,
         f.file_name, f.newest_rank, CAST(q.key_hash % f.hash_slot_num AS INT) AS slot
  FROM {queries} q
  CROSS JOIN {order} f
  WHERE q.max_num > 0 AND f.index_count > 1
    AND (f.newer_min_begin IS NULL OR f.newer_min_begin >= q.begin_ms)
    AND ((q.begin_ms < f.begin_timestamp AND q.end_ms > f.end_timestamp)
         OR (q.begin_ms >= f.begin_timestamp AND q.begin_ms <= f.end_timestamp)
         OR (q.end_ms >= f.begin_timestamp AND q.end_ms <= f.end_timestamp))
"""

# The walk over (query, file) pairs ``qf``: qid, h, max_num, begin_ms, end_ms, file_name,
# newest_rank, slot.
_WALK_SQL = """
WITH qf AS ({qf}),
cand AS (
  SELECT /*+ BROADCAST(qf) */
         qf.qid, qf.max_num, qf.newest_rank, e.file_name, e.position, e.phy_offset,
         e.store_timestamp, e.key_hash,
         e.store_timestamp < qf.begin_ms OR e.time_diff < 0 AS stopper
  FROM qf JOIN {entries} e ON e.file_name = qf.file_name AND e.slot = qf.slot
  WHERE (e.key_hash = qf.h AND e.time_diff >= 0
         AND e.store_timestamp BETWEEN qf.begin_ms AND qf.end_ms)
     OR e.store_timestamp < qf.begin_ms OR e.time_diff < 0
),
walk AS (
  SELECT *,
         max(CASE WHEN stopper THEN newest_rank END) OVER (
           PARTITION BY qid ORDER BY newest_rank, position DESC
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS stopped_in
  FROM cand
),
hits AS (
  SELECT qid, max_num, phy_offset, file_name, position, store_timestamp, key_hash,
         row_number() OVER (PARTITION BY qid ORDER BY newest_rank, position DESC) AS ordinal
  FROM walk
  WHERE NOT stopper AND (stopped_in IS NULL OR stopped_in < newest_rank)
)
SELECT qid, ordinal, phy_offset, file_name, position, store_timestamp, key_hash
FROM hits
WHERE ordinal <= max_num
"""


# --- queries --------------------------------------------------------------------------


def queries_frame(spark: SparkSession, queries: Sequence[Query]) -> DataFrame:
    """Queries as a DataFrame ``qid, key_hash, max_num, begin_ms, end_ms`` (hashed here)."""
    qs = list(queries)
    for q in qs:
        check_query_key(q.key)  # a str, and no byte that is not UTF-8
    table = pa.table(
        {
            "qid": pa.array(np.arange(len(qs), dtype=np.int64)),
            "key_hash": pa.array(
                index_key_hashes([q.key for q in qs]) if qs else np.empty(0, np.int32),
                pa.int32(),
            ),
            "max_num": pa.array([q.max_num for q in qs], pa.int64()),
            "begin_ms": pa.array([q.begin for q in qs], pa.int64()),
            "end_ms": pa.array([q.end for q in qs], pa.int64()),
        }
    )
    return spark.createDataFrame(table)


def lookup(spark: SparkSession, queries: DataFrame) -> DataFrame:
    """Every native hit of every query, over the views :func:`register_tables` made.

    ``queries`` has ``qid`` (unique), ``key_hash`` (int), ``max_num``, ``begin_ms``,
    ``end_ms``; the result has :data:`LOOKUP_COLUMNS`, one row per returned offset,
    ``ordinal`` 1.. in the order the native lookup returns them.
    """
    view = "_rmq_queries"
    queries.select(
        "qid",
        queries["key_hash"].cast("int").alias("key_hash"),
        queries["max_num"].cast("bigint").alias("max_num"),
        queries["begin_ms"].cast("bigint").alias("begin_ms"),
        queries["end_ms"].cast("bigint").alias("end_ms"),
    ).createOrReplaceTempView(view)
    qf = _QF_SQL.format(queries=view, order=file_order_view(spark))
    return spark.sql(_WALK_SQL.format(qf=qf, entries="entries"))


def _local_pairs(files: pa.Table, queries: Sequence[Query]) -> pa.Table:
    """The (query, file) pairs the native walk visits, computed on the driver.

    Same rules as ``_QF_SQL`` (time match, the newest-first stop, ``max_num > 0``,
    ``index_count > 1``), vectorized over the queries one file at a time.
    """
    n = len(queries)
    h = index_key_hashes([q.key for q in queries]) if n else np.empty(0, np.int32)
    max_num = np.array([q.max_num for q in queries], dtype=object)
    begin = np.array([q.begin for q in queries], dtype=np.int64)
    end = np.array([q.end for q in queries], dtype=np.int64)
    wanted = np.array([m > 0 for m in max_num], dtype=bool)
    max_num = np.array([min(int(m), JAVA_LONG_MAX) for m in max_num], dtype=np.int64)
    parts: list[pa.Table] = []
    for f in files.to_pylist():
        fb, fe = int(f["begin_timestamp"]), int(f["end_timestamp"])
        newer = f["newer_min_begin"]
        keep = wanted & (int(f["index_count"]) > 1)
        if newer is not None:
            keep &= int(newer) >= begin
        keep &= (
            ((begin < fb) & (end > fe))
            | ((begin >= fb) & (begin <= fe))
            | ((end >= fb) & (end <= fe))
        )
        idx = np.flatnonzero(keep)
        parts.append(
            pa.table(
                {
                    "qid": pa.array(idx.astype(np.int64)),
                    "h": pa.array(h[idx], pa.int32()),
                    "max_num": pa.array(max_num[idx]),
                    "begin_ms": pa.array(begin[idx]),
                    "end_ms": pa.array(end[idx]),
                    "file_name": pa.array([f["file_name"]] * len(idx), pa.string()),
                    "newest_rank": pa.array(np.full(len(idx), f["newest_rank"], np.int32)),
                    "slot": pa.array((h[idx] % np.int32(f["hash_slot_num"])).astype(np.int32)),
                }
            )
        )
    return pa.concat_tables(parts) if parts else _PAIRS_SCHEMA.empty_table()


_PAIRS_SCHEMA = pa.schema(
    [
        ("qid", pa.int64()),
        ("h", pa.int32()),
        ("max_num", pa.int64()),
        ("begin_ms", pa.int64()),
        ("end_ms", pa.int64()),
        ("file_name", pa.string()),
        ("newest_rank", pa.int32()),
        ("slot", pa.int32()),
    ]
)


#: Most distinct slots whose chains the driver reads itself for a store lookup (a handful
#: of entries each per file: a small Arrow table, no Python worker started anywhere).
#: Safe: the driver reads exactly what the data source's pushdown reads (the same pieces
#: and batches for the same Pushdown of files and slots), so the walk gets the same rows.
#: It registers none of the session's shared views: the file order :func:`lookup` joins
#: belongs with the ``entries`` view of the same target, and replacing it alone made a
#: later :func:`bulk_lookup` pair this store's files with another target's entries (it
#: answered nothing, or another store's offsets; tests/converters/spark/test_spark_random.py).
MAX_DRIVER_SLOTS = 4096
#: Most distinct slots named to the data source as literals (its executors then read the
#: chains); more than that (a bulk lookup of very many keys) reads the files' entries whole,
#: which is then cheaper than the chains.
MAX_PUSHED_SLOTS = 65536
_WANTED_VIEW = "_rmq_wanted_entries"


def _driver_chains(
    root: Path,
    pairs: pa.Table,
    geometry: GeometryHint,
) -> pa.Table | None:
    """The entries on the pairs' slot chains, read on the driver; None when the pairs name
    more than :data:`MAX_DRIVER_SLOTS` slots.

    The same reads as the data source's pushdown (slot head, then ``prev_index`` links, in
    the pairs' files only), done where the files' headers were just read: a key query then
    costs Spark's start-up and one small SQL job, not a data source job.
    """
    from rmqarrow.converters.spark.source import spark_arrow_schema

    slots = frozenset(int(s) for s in pairs.column("slot").to_pylist())
    if len(slots) > MAX_DRIVER_SLOTS:
        return None
    names = frozenset(str(n) for n in pairs.column("file_name").to_pylist())
    push = Pushdown(file_names=names, slots=slots)
    schema = spark_arrow_schema("entries")
    batches = [
        batch
        for piece in plan_pieces(root, "entries", geometry=geometry, pushdown=push)
        for batch in piece_batches(piece, schema=schema)
    ]
    return pa.Table.from_batches(batches, schema=schema)


def _pushed_chains(spark: SparkSession, pairs: pa.Table) -> DataFrame | None:
    """The ``entries`` view limited to the (file, slot) pairs the walk joins.

    The walk's join on ``file_name`` and ``slot`` is no filter Spark can hand to the
    ``rocketmq_index`` source (its values come from another relation), so without this the
    source decodes every entry of every file and the join throws nearly all of them away.
    Naming the files and slots as literal ``IN`` lists (built as Column expressions, never
    as SQL text) lets the source read only those slots' chains
    (:mod:`rmqarrow.converters.spark.pushdown`); the join still pairs each file with its
    own slots, so the answer is the same.  None (read ``entries`` whole) when the pairs
    name too many slots for chains to pay.
    """
    from pyspark.sql import functions as F

    names = sorted(set(pairs.column("file_name").to_pylist()))
    slots = sorted({int(s) for s in pairs.column("slot").to_pylist()})
    if len(slots) > MAX_PUSHED_SLOTS:
        return None
    if not names:  # no file to search: an empty relation, no task at all
        slots = []
    wanted: DataFrame = spark.table("entries").where(
        F.col("file_name").isin(names) & F.col("slot").isin(slots)
    )
    return wanted


def jvm_key_hash(key: Column | str) -> Column:
    """RocketMQ's key hash computed in the JVM: ``abs(String.hashCode)``, MIN_VALUE -> 0.

    ``reflect`` is non-deterministic to Spark: put this in a projection of its own (a
    column of a ``select``) before joining or aggregating on it.
    """
    from pyspark.sql import functions as F

    col = F.col(key) if isinstance(key, str) else key
    java = F.call_function("reflect", F.lit("java.util.Objects"), F.lit("hashCode"), col)
    h = java.cast("int")
    return F.when(h == F.lit(-(2**31)), F.lit(0)).otherwise(F.abs(h)).cast("int")


def _hash_arrow_array(keys: pa.Array) -> pa.Array:
    """index_key_hashes over an Arrow string array; nulls stay null."""
    if len(keys) == 0:
        return pa.array([], pa.int32())
    hashes = index_key_hashes(pc.fill_null(keys, ""))
    return pa.array(hashes, pa.int32(), mask=keys.is_null().to_numpy(zero_copy_only=False))


def arrow_key_hash(key: Column | str) -> Column:
    """RocketMQ's key hash vectorized through an Arrow UDF (:func:`index_key_hashes`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    col = F.col(key) if isinstance(key, str) else key
    with warnings.catch_warnings():  # "prefer type hints": ours are strings (annotations)
        warnings.simplefilter("ignore", UserWarning)
        udf = arrow_udf(_hash_arrow_array, "int", ArrowUDFType.SCALAR)
    result: Column = udf(col)
    return result


def bulk_lookup(
    spark: SparkSession,
    keys: DataFrame,
    *,
    key_col: str = "key",
    max_num: int = DEFAULT_MAX_NUM,
    begin: int = 0,
    end: int = JAVA_LONG_MAX,
    hash_with: str = "jvm",
) -> DataFrame:
    """Look up every row of ``keys`` at once: ``keys`` plus ``offsets`` (array<bigint>).

    ``key_col`` holds full index keys (``topic#key``).  Per-row ``max_num``, ``begin_ms``
    and ``end_ms`` columns are used when present, the arguments otherwise.  Hashes come
    from the JVM (``hash_with="jvm"``) or from :func:`rmqarrow.index_key_hashes` through
    an Arrow UDF (``"arrow"``).  A null key finds nothing.  ``keys`` should be
    deterministic (it is read twice: once to look up, once to attach the answers).
    """
    from pyspark.sql import functions as F

    if key_col not in keys.columns:
        raise DatasetError(f"keys DataFrame has no column {key_col!r}; found {keys.columns}")
    numbered = keys.withColumn("_rmq_qid", F.monotonically_increasing_id())
    if hash_with == "jvm":
        hashed = numbered.select("*", jvm_key_hash(key_col).alias("_rmq_h"))
    elif hash_with == "arrow":
        hashed = numbered.select("*", arrow_key_hash(key_col).alias("_rmq_h"))
    else:
        raise InvalidValueError(f"hash_with must be 'jvm' or 'arrow', got {hash_with!r}")

    def param(name: str, default: int) -> Column:
        if name in keys.columns:
            return F.coalesce(F.col(name).cast("bigint"), F.lit(default).cast("bigint"))
        return F.lit(default).cast("bigint")

    queries = hashed.where(F.col("_rmq_h").isNotNull()).select(
        F.col("_rmq_qid").alias("qid"),
        F.col("_rmq_h").alias("key_hash"),
        param("max_num", max_num).alias("max_num"),
        param("begin_ms", begin).alias("begin_ms"),
        param("end_ms", end).alias("end_ms"),
    )
    hits = lookup(spark, queries)
    answers = hits.groupBy("qid").agg(
        F.sort_array(F.collect_list(F.struct("ordinal", "phy_offset"))).alias("_rmq_hits")
    )
    joined = numbered.join(answers, numbered["_rmq_qid"] == answers["qid"], "left")
    offsets = F.coalesce(
        F.transform(F.col("_rmq_hits"), lambda s: s["phy_offset"]),
        F.array().cast("array<bigint>"),
    )
    return joined.select(*[numbered[c] for c in keys.columns], offsets.alias("offsets"))


# --- the API the CLI calls ------------------------------------------------------------


def answer_queries(
    target: Target,
    queries: list[Query],
    *,
    master: str | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> list[list[int]]:
    """The native answer to each query, computed by Spark SQL over ``target``.

    ``target`` is a Parquet dataset directory or a native store directory; same contract
    as :func:`rmqarrow.answer_queries` (newest file first, no batch cap; the geometry
    ``geometry`` or ``hash_slot_num``/``index_num``, not both forms).
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    qs = list(queries)
    for q in qs:
        check_query_key(q.key)  # a str, and no byte that is not UTF-8
    spark = get_spark(master)
    source = require_index_source(target)
    wanted: pa.Table | DataFrame | None = None
    if source.kind != "dataset" and qs:
        # a store: the files' headers and the queried slots' chains, read on the driver;
        # the session's views stay as they were (registering them starts the data source,
        # the cost this path saves; replacing only some would mix two targets)
        root = source.index_path.absolute()
        files = file_order(files_on_driver("store", root, hint))
        pairs = _local_pairs(files, qs)
        wanted = _driver_chains(root, pairs, hint)
    if wanted is None:
        kind, files = register_views(spark, target, hint)
        if not qs:
            return []
        pairs = _local_pairs(files, qs)
        wanted = _pushed_chains(spark, pairs) if kind == "store" else None
    # this call's own views; no later query sees them
    inputs = {_PAIRS_VIEW: pairs} if wanted is None else {_PAIRS_VIEW: pairs, _WANTED_VIEW: wanted}
    with temp_views(spark, inputs):
        walk = _WALK_SQL.format(
            qf=f"SELECT * FROM {_PAIRS_VIEW}", entries="entries" if wanted is None else _WANTED_VIEW
        )
        result = spark.sql(walk).select("qid", "ordinal", "phy_offset")
        table = result.toArrow().sort_by([("qid", "ascending"), ("ordinal", "ascending")])
    ids = table.column("qid").to_numpy()
    offsets = table.column("phy_offset").to_numpy()
    bounds = np.searchsorted(ids, np.arange(len(qs) + 1))
    return [offsets[bounds[i] : bounds[i + 1]].tolist() for i in range(len(qs))]


def sql(
    target: Target,
    query: str,
    *,
    master: str | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> pa.Table:
    """Run one Spark SQL statement over the ``files``/``slots``/``entries`` of ``target``
    (the geometry as for :func:`register_tables`)."""
    spark = get_spark(master)
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    register_tables(spark, target, geometry=hint)
    result: pa.Table = spark.sql(query).toArrow()
    return result


#: Spark commands that only read, or set this session's settings: what a read-only session runs
#: (names, or the prefix of names, of the plan Spark's parser gives).
READING_COMMANDS = (
    "Show",
    "Describe",
    "ExplainCommand",
    "SetCommand",
    "ResetCommand",
    "SetCatalogAndNamespace",
)


def writing_statement(spark: SparkSession, query: str) -> str | None:
    """The name of ``query``'s plan as Spark's own parser gives it (nothing runs) when it
    may write, else None.  Spark's rule: queries (``SELECT``, ``WITH``, ``VALUES``, ``TABLE``)
    read; ``INSERT`` (a parsed statement), ``INSERT OVERWRITE DIRECTORY`` and every command
    (``CREATE TABLE ... AS``, ``CACHE TABLE``, ``ADD JAR``, ``DROP``, ...) may write, except
    :data:`READING_COMMANDS`."""
    session = getattr(spark, "_jsparkSession", None)
    if session is None:  # no JVM parser to ask (Spark Connect): nothing can be told
        return "a statement Spark's parser cannot classify here"
    try:
        plan = session.sessionState().sqlParser().parsePlan(query)
    except Exception as exc:
        raise spark_error(exc) from None
    name = str(plan.getClass().getSimpleName()).rstrip("$")
    logical = "org.apache.spark.sql.catalyst.plans.logical."
    kinds = ("Command", "ParsedStatement", "InsertIntoDir")
    jvm: Any = spark._jvm  # a classic session has its JVM (checked above)
    lang = jvm.java.lang
    writes = any(lang.Class.forName(logical + kind).isInstance(plan) for kind in kinds)
    return name if writes and not name.startswith(READING_COMMANDS) else None
