"""Distributed export: many native index files to one Parquet dataset, in parallel on Spark.

Writes the dataset :func:`rmqarrow.converters.parquet.export.export_store` writes (layout
version 1: ``files/``, ``slots/``, ``entries/`` with one ``part-NNNNN.parquet`` per native
file and table, or per run of small files, entries sorted by ``(slot, position)`` within
each file, committed as Delta tables in one pinned run), because each Spark task runs the
local exporter's own writers on one file or one run of small files.  The one difference: a
local export of a single large file splits its entries into one part per export thread;
a Spark task writes one (the tables' rows are the same).  The driver plans (geometry and
header checks), then writes ``files/`` and commits the run.

Atomicity is the local exporter's: everything is written into a hidden sibling of
``out_dir`` and renamed into place at the end; an existing ``out_dir`` is replaced only
with ``overwrite=True``, and never when it is a dataset of Delta tables.  On a cluster,
``store_dir`` and ``out_dir`` must be on a file system every executor sees at the same path
(NFS, a mounted bucket), and rmqarrow must be installed on the executors.

Runnable as a Spark application::

    spark-submit "$(python -c 'import rmqarrow.converters.spark.export as m
    print(m.__file__)')" STORE OUT
    python -m rmqarrow.converters.spark.export STORE OUT [--overwrite] [--master URL]
        [--hash-slot-num N] [--index-num N] [--commitlog DIR]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from rmqarrow.converters.arrow.scan import files_batch, source_paths
from rmqarrow.converters.arrow.tables import geometry_of
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet.atomic import atomic_dir
from rmqarrow.converters.parquet.export import (
    ENTRIES_ORDER,
    EXPORT_APP,
    PARQUET_OPTIONS,
    ROW_GROUP_ROWS,
    check_exportable,
    entry_count,
    export_file_entries,
    export_file_slots,
    parquet_writer,
    plan_groups,
    snapshot,
    write_group,
)
from rmqarrow.converters.parquet.manifest import new_manifest, part_records, source_file_info
from rmqarrow.converters.parquet.to_delta import commit_manifest
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.converters.spark.errors import spark_errors
from rmqarrow.converters.spark.session import get_spark, is_local_master

from rmqarrow import errors
from rmqarrow._lock import Wait
from rmqarrow._paths import local_path
from rmqarrow._progress import Progress
from rmqarrow._version import __version__
from rmqarrow.errors import RmqArrowError, StoreNotFoundError, UsageError
from rmqarrow.format.layout import Geometry, GeometryHint, check_header, geometry_hint, map_regions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["export_store", "main", "on_executor", "raise_task_error", "run_tasks"]


def _export_one(task: tuple[int, list[tuple[str, int, int]], str, bool]) -> dict[str, Any]:
    """Spark task: export one native file's ``slots`` and ``entries`` parts, or one run of
    small files' shared parts (:func:`rmqarrow.converters.parquet.export.plan_groups`).

    Returns their ``files`` rows, manifest entries and row counts, or the rmqarrow error
    it hit (class name and message) so the driver can raise the same error.
    """
    rank, files, tmp_text, on_cluster = task
    paths, tmp = [Path(t) for t, _, _ in files], Path(tmp_text)
    part = f"part-{rank:05d}.parquet"
    quiet = Progress(None, "export")
    try:
        geometries = [Geometry(s, n) for _, s, n in files]
        if len(paths) > 1:
            group = write_group(paths, geometries, tmp, part, quiet)
            return {
                "rank": rank,
                "files_rows": pa_rows(group.files),
                "infos": group.infos,
                "slots": group.slots,
                "entries": group.entries,
            }
        (path,), (geometry,) = paths, geometries
        m = map_regions(path, geometry, writable=False)
        try:
            check_header(path, geometry, m.header)
            m = snapshot(m)  # as the Parquet export: damaged slot heads read as RocketMQ does
            check_exportable(m)
            files_row = files_batch(m, path.name).to_pylist()[0]
            slots = export_file_slots(m, tmp / "slots" / part)
            entries = export_file_entries(m, tmp / "entries" / part, quiet)
            info = source_file_info(path, geometry, int(m.header["index_count"][0]))
            info["parts"] = [f"entries/{part}", f"slots/{part}"]
        finally:
            m.close()
    except RmqArrowError as exc:
        message = on_executor(exc) if on_cluster else str(exc)
        return {"error": type(exc).__name__, "message": message}
    return {
        "rank": rank,
        "files_rows": [files_row],
        "infos": [info],
        "slots": slots,
        "entries": entries,
    }


def pa_rows(batches: Sequence[Any]) -> list[dict[str, Any]]:
    """The rows of record batches as dicts (what a task sends back to the driver)."""
    return [row for b in batches for row in b.to_pylist()]


def on_executor(exc: RmqArrowError) -> str:
    """``exc``'s message with where it happened (the executor's host and work directory).

    A Python worker runs in its executor's working directory, which on a standalone
    cluster is ``<worker dir>/<app-id>/<executor-id>`` and holds the executor's log.
    """
    cwd = os.getcwd()
    where = f" (on the executor at {socket.gethostname()}, log {cwd}/stderr)"
    if isinstance(exc, StoreNotFoundError):
        return (
            f"{exc}{where}: the executors do not see this path; stores and outputs must "
            f"be visible at the same absolute path on the driver and every executor "
            f"(a shared file system)"
        )
    return f"{exc}{where}"


def raise_task_error(result: dict[str, Any]) -> None:
    cls = getattr(errors, str(result["error"]), RmqArrowError)
    if not (isinstance(cls, type) and issubclass(cls, RmqArrowError)):
        cls = RmqArrowError
    raise cls(result["message"])


def run_tasks(
    spark: SparkSession, fn: Callable[[Any], dict[str, Any]], work: Sequence[Any]
) -> list[dict[str, Any]]:
    """``fn`` over ``work``, one Spark task an item; a task's reported error is raised
    here as its own rmqarrow error class (Spark's own failures in one line)."""
    results: list[dict[str, Any]] = []
    if work:
        rdd = spark.sparkContext.parallelize(list(work), len(work))
        with spark_errors(spark.sparkContext.applicationId):
            results = rdd.map(fn).collect()
    for result in results:
        if "error" in result:
            raise_task_error(result)
    return results


def export_store(
    store_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    master: str | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    commitlog: str | os.PathLike[str] | None = None,
    wait: Wait = False,
) -> None:
    """Export every index file of ``store_dir`` to the dataset ``out_dir`` on Spark.

    One task per native file, or per run of small files sharing parts (largest first);
    the tables and parts equal the local exporter's, committed as Delta tables in one
    pinned run as the local exporter commits them.  The dataset appears whole by one
    rename, so ``overwrite`` replaces a dataset of the older manifest layout but refuses
    one of Delta tables (its versions would go): the local exporter makes an overwrite one
    more version of it.
    ``commitlog`` (a broker's ``store/commitlog``) also writes the ``messages/`` table, a
    task and a part per CommitLog file (:mod:`rmqarrow.converters.spark.messages_export`),
    recorded in the manifest as the local exporter does.  ``out_dir``'s writer lock is
    held from before anything about it is decided: another writer there refuses the export
    in one line naming it, or is waited for with ``wait`` (True, or seconds).  The geometry
    is ``geometry`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or ``hash_slot_num``/``index_num`` (not both forms).
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    source = Path(store_dir).absolute()  # executors resolve paths in their own work dirs
    out_dir = local_path(out_dir).absolute()
    if not source.exists():
        raise StoreNotFoundError(f"{source}: no such store directory or index file")
    if commitlog is not None and not Path(commitlog).is_dir():
        raise StoreNotFoundError(f"{commitlog}: no such CommitLog directory")
    paths = source_paths(source)
    geometries = [geometry_of(p, hint) for p in paths]

    def refuse_delta(out: Path) -> None:
        # decided under the lock: no other writer can make it Delta tables meanwhile
        if overwrite and is_delta_dataset(out):
            raise UsageError(
                f"{out}: a dataset of Delta tables; the spark exporter would replace it "
                "and its versions: export with the local engine (one more version)"
            )

    with atomic_dir(out_dir, overwrite=overwrite, wait=wait, refuse=refuse_delta) as tmp:
        spark = get_spark(master, app_name="rmqarrow-export")
        on_cluster = not is_local_master(spark.sparkContext.master)
        for sub in ("files", "slots", "entries"):
            (tmp / sub).mkdir()
        groups = plan_groups([entry_count(p) for p in paths])
        tasks = [
            (
                g.start,
                [
                    (str(paths[i].absolute()), geometries[i].hash_slot_num, geometries[i].index_num)
                    for i in g
                ],
                str(tmp),
                on_cluster,
            )
            for g in groups
        ]
        tasks.sort(key=lambda t: -sum(Path(p).stat().st_size for p, _, _ in t[1]))
        results = run_tasks(spark, _export_one, tasks)
        results.sort(key=lambda r: int(r["rank"]))
        if not paths:
            for sub in ("slots", "entries"):
                pq.write_table(SCHEMAS[sub].empty_table(), tmp / sub / "part-00000.parquet")
        files = pa.Table.from_pylist(
            [row for r in results for row in r["files_rows"]], schema=SCHEMAS["files"]
        )
        with parquet_writer(tmp / "files" / "part-00000.parquet", "files") as w:
            w.write_table(files)
        rows = {
            "files": files.num_rows,
            "slots": sum(int(r["slots"]) for r in results),
            "entries": sum(int(r["entries"]) for r in results),
        }
        messages = None
        if commitlog is not None:
            from rmqarrow.converters.spark.messages_export import write_messages_parts

            messages = write_messages_parts(spark, commitlog, tmp, on_cluster)

        manifest = new_manifest(
            source,
            [info for r in results for info in r["infos"]],
            rows,
            writer=f"rmqarrow {__version__} rmqarrow.converters.spark.export (spark "
            f"{spark.version}, {spark.sparkContext.master})",
            extra={
                "entries_order": list(ENTRIES_ORDER),
                "parquet": {"row_group_rows": ROW_GROUP_ROWS, **PARQUET_OPTIONS},
                # every reader checks the parts against it
                "parts": part_records(tmp),
            },
            messages=messages,
        )
        commit_manifest(tmp, manifest, EXPORT_APP)


def main(argv: list[str] | None = None) -> int:
    """``python -m rmqarrow.converters.spark.export STORE OUT [--overwrite] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m rmqarrow.converters.spark.export",
        description="Export a RocketMQ index store to an rmqarrow Parquet dataset on Spark.",
    )
    parser.add_argument("store", help="store directory of index files (or one index file)")
    parser.add_argument("out", help="dataset directory to create")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default: active spark-submit session, else local[*])",
    )
    parser.add_argument("--hash-slot-num", type=int, default=None)
    parser.add_argument("--index-num", type=int, default=None)
    parser.add_argument(
        "--commitlog", default=None, help="also write messages/ from this store/commitlog"
    )
    args = parser.parse_args(argv)
    try:
        export_store(
            args.store,
            args.out,
            overwrite=args.overwrite,
            master=args.master,
            geometry=GeometryHint(args.hash_slot_num, args.index_num),
            commitlog=args.commitlog,
        )
    except RmqArrowError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"exported {args.store} -> {args.out}")
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):
        # spark-submit runs this file as a script: import the package, not the path.
        sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent]
        from rmqarrow.converters.spark.export import main as _main

        sys.exit(_main())
    sys.exit(main())
