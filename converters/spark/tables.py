"""The ``files``, ``slots``, ``entries`` views on a Spark session, over a dataset or a store.

:func:`register_tables` puts the three tables on a session as temp views, with exactly
the column names and types of :mod:`rmqarrow.converters.schema`: from an exported Parquet dataset
(a directory with ``files/``, ``slots/`` and ``entries/``, read by Spark's Parquet reader)
or from a native store (through the ``rocketmq_index`` data source,
:mod:`rmqarrow.converters.spark.source`).  It also registers the small newest-first file order
the lookup in :mod:`rmqarrow.converters.spark.sql` walks, computed on the driver (files are few).

A ``messages`` view (:data:`rmqarrow.converters.arrow.messages.MESSAGES_SCHEMA`: the real topic and
keys
of every CommitLog message) is added from ``commitlog=`` (a broker's ``store/commitlog``,
decoded in parallel by the ``rocketmq_commitlog`` data source, one task a file) or,
without it, from a dataset's
``messages/`` Parquet directory when there is one; joining ``entries.phy_offset`` to
``messages.physical_offset`` filtered on the real key gives exact-key answers.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA
from rmqarrow.converters.parquet.manifest import check_parts, one_snapshot, trusted
from rmqarrow.converters.parquet.parts import hadoop_literal, table_parts
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.converters.spark.batches import piece_batches, plan_pieces

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.detect import require_index_source
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.format.naming import java_name_order

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "FILE_ORDER_SCHEMA",
    "FILE_ORDER_VIEW",
    "MESSAGES_VIEW",
    "TABLES",
    "Target",
    "file_order",
    "file_order_view",
    "register_messages",
    "register_tables",
    "register_views",
]

Target = str | os.PathLike[str]
TABLES = tuple(SCHEMAS)
#: The prefix of the file-order view's name.  The view is a *global* temporary view (in
#: Spark's ``global_temp`` database), so ``SHOW TABLES`` in a user's session does not list
#: it; its name carries a random part, kept in the session's conf, because global views are
#: shared by every session of the application and each session has its own store.
FILE_ORDER_VIEW = "_rmq_file_order"
_FILE_ORDER_CONF = "rmqarrow.fileOrderView"
MESSAGES_VIEW = "messages"


def _read_parquet_table(spark: SparkSession, directory: Path, table: str) -> DataFrame:
    from rmqarrow.converters.spark.source import spark_ddl

    parts = [hadoop_literal(p) for p in table_parts(directory.parent, directory.name)]
    df = spark.read.schema(spark_ddl(table)).parquet(*parts)
    return df.select(*SCHEMAS[table].names)


def register_tables(
    spark: SparkSession,
    target: Target,
    *,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    commitlog: Target | None = None,
) -> str:
    """Create temp views ``files``, ``slots``, ``entries`` over ``target``; return its kind.

    A dataset is read as Parquet (column names and types checked against the schema); a
    store through the ``rocketmq_index`` data source with the given geometry.  The views
    also get the newest-first file order the lookup needs.  ``messages`` is registered
    from ``commitlog`` when given, else from the dataset's ``messages/`` if present.  The
    geometry is ``geometry`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or ``hash_slot_num``/``index_num`` (not both forms).
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    return register_views(spark, target, hint, commitlog=commitlog)[0]


def register_messages(spark: SparkSession, kind: str, root: Path, commitlog: Target | None) -> bool:
    """The ``messages`` temp view, if there is a source for it; True when registered.

    A view of that name left by an earlier call on the session is dropped otherwise, so
    the views always describe this target.
    """
    if commitlog is not None:
        from rmqarrow.converters.spark.commitlog import messages_frame

        df = messages_frame(spark, commitlog)  # decoded by the executors, a task a file
    elif kind == "dataset" and (root / "messages").is_dir():
        parts = [hadoop_literal(p) for p in table_parts(root, "messages")]
        df = spark.read.parquet(*parts).select(*MESSAGES_SCHEMA.names)
    else:
        spark.catalog.dropTempView(MESSAGES_VIEW)
        return False
    df.createOrReplaceTempView(MESSAGES_VIEW)
    return True


def register_views(
    spark: SparkSession,
    target: Target,
    geometry: GeometryHint,
    *,
    commitlog: Target | None = None,
) -> tuple[str, pa.Table]:
    """:func:`register_tables`; also returns the newest-first files table it registered."""
    source = require_index_source(target)
    kind = "dataset" if source.kind == "dataset" else "store"
    # executors resolve paths in their own work dirs
    root = (source.path if kind == "dataset" else source.index_path).absolute()
    with one_snapshot(root) if kind == "dataset" else contextlib.nullcontext():
        return _register_views(spark, kind, root, geometry, commitlog)


def _register_views(
    spark: SparkSession,
    kind: str,
    root: Path,
    geometry: GeometryHint,
    commitlog: Target | None,
) -> tuple[str, pa.Table]:
    frames: dict[str, DataFrame] = {}
    if kind == "dataset":
        if not trusted():  # parts added, missing or changed since export: refused
            check_parts(root)
        for table in TABLES:
            frames[table] = _read_parquet_table(spark, root / table, table)
    else:
        from rmqarrow.converters.spark.source import (
            FORMAT,
            PUSHDOWN_CONF,
            pushdown_supported,
            register,
            spark_ddl,
        )

        register(spark)
        push = pushdown_supported() and spark.conf.get(PUSHDOWN_CONF, "false") == "true"
        for table in TABLES:
            reader = spark.read.format(FORMAT).schema(spark_ddl(table)).option("table", table)
            reader = reader.option("pushdown", "true" if push else "false")
            if geometry.hash_slot_num is not None:
                reader = reader.option("hashSlotNum", str(geometry.hash_slot_num))
            if geometry.index_num is not None:
                reader = reader.option("indexNum", str(geometry.index_num))
            frames[table] = reader.load(str(root))
    for table, df in frames.items():
        df.createOrReplaceTempView(table)
    register_messages(spark, kind, root, commitlog)
    order = register_file_order(spark, files_on_driver(kind, root, geometry))
    return kind, order


def files_on_driver(kind: str, root: Path, geometry: GeometryHint) -> pa.Table:
    """The ``files`` table read on the driver (one row a file: no Spark job needed)."""
    if kind == "dataset":
        return pa.concat_tables(
            [pq.read_table(p, schema=SCHEMAS["files"]) for p in table_parts(root, "files")]
        )

    batches = [
        batch
        for piece in plan_pieces(root, "files", geometry=geometry)
        for batch in piece_batches(piece)
    ]
    return pa.Table.from_batches(batches, schema=SCHEMAS["files"])


def file_order(files: pa.Table) -> pa.Table:
    """The files the lookup walks, newest first (a table on the driver).

    Ranks follow Java string order of the names.  ``newer_min_begin`` is the smallest
    ``begin_timestamp`` of the files newer than this one (NULL for the newest): the native
    walk reaches this file only if it is ``>=`` the query's begin.  Files are few, so this
    is computed on the driver.
    """
    rows = sorted(files.to_pylist(), key=lambda r: java_name_order(r["file_name"]), reverse=True)
    smallest: int | None = None
    for rank, row in enumerate(rows):
        row["newest_rank"] = rank
        row["newer_min_begin"] = smallest
        begin = int(row["begin_timestamp"])
        smallest = begin if smallest is None else min(smallest, begin)
    return pa.Table.from_pylist(rows, schema=FILE_ORDER_SCHEMA)


FILE_ORDER_SCHEMA = pa.schema(
    [pa.field(f.name, f.type) for f in SCHEMAS["files"]]
    + [pa.field("newest_rank", pa.int32()), pa.field("newer_min_begin", pa.int64())]
)


def register_file_order(spark: SparkSession, files: pa.Table) -> pa.Table:
    """:func:`file_order` as a small local view, which the lookup joins instead of
    ``files``."""
    order = file_order(files)
    previous = spark.conf.get(_FILE_ORDER_CONF, None)
    name = f"{FILE_ORDER_VIEW}_{uuid.uuid4().hex[:12]}"
    spark.createDataFrame(order).createOrReplaceGlobalTempView(name)
    spark.conf.set(_FILE_ORDER_CONF, name)
    if previous:
        spark.catalog.dropGlobalTempView(previous)
    return order


def file_order_view(spark: SparkSession) -> str:
    """The qualified name of the file-order view :func:`register_file_order` made for this
    session, for the lookup's SQL (hidden from ``SHOW TABLES``)."""
    name = spark.conf.get(_FILE_ORDER_CONF, None)
    if not name:
        raise InvalidValueError(
            "no index registered in this Spark session: call register_tables first"
        )
    database = spark.conf.get("spark.sql.globalTempDatabase", "global_temp")
    return f"`{database}`.`{name}`"
