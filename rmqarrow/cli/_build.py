"""``rmqarrow build``: a store from message records (CSV, Parquet) or a CommitLog, crash-safe.

With ``--from-commitlog DIR --engine spark`` the CommitLog is decoded by Spark (one task
a file, :mod:`rmqarrow.converters.spark.records`) and this process builds from the records
in log order: the same index files, byte for byte.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import (
    add_geometry_options,
    add_spark_options,
    print_json,
    print_kv,
    print_notes,
)
from rmqarrow.errors import DatasetError, StoreNotFoundError, UsageError
from rmqarrow.format.detect import detect, require_commitlog
from rmqarrow.format.times import TIME_HELP, parse_time

__all__ = ['register']


def register(sub: Any) -> None:
    build = sub.add_parser("build", help="build a store from message records")
    build.add_argument("store", type=Path, help="store directory (created if missing)")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="source", type=Path, help="Parquet or CSV of records")
    source.add_argument(
        "--from-commitlog", type=Path, metavar="DIR",
        help="a broker's store/commitlog (or the store root: its commitlog/ is used)"
    )
    build.add_argument("--start-offset", type=int, default=0, help="CommitLog offset to resume at")
    build.add_argument(
        "--start-timestamp",
        help="resume where the broker's recovery would for this store time: the newest "
        "CommitLog file whose first message is no later; the offset guard skips what is "
        f"indexed. {TIME_HELP}",
    )
    build.add_argument("--checkpoint", type=Path, help="the store's checkpoint file")
    build.add_argument("--batch-rows", type=int, default=1 << 20, help="records per batch")
    build.add_argument(
        "--engine", choices=("local", "spark"), default="local",
        help="who decodes --from-commitlog: local (this process, default) or spark (one task "
        "per CommitLog file; this process still writes the index, byte-identical)",
    )
    build.add_argument("--master", default=None, help="Spark master URL (--engine spark only)")
    add_spark_options(build)
    add_geometry_options(build)
    build.add_argument("--json", action="store_true", help="print a JSON summary")
    build.set_defaults(func=cmd_build)



def _record_batches(source: Path, batch_rows: int) -> tuple[Any, int | None]:
    """Batches of message records from Parquet or CSV, and the row count when known."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from rmqarrow.format.records import RECORD_COLUMNS

    if not source.is_file():
        raise StoreNotFoundError(f"{source}: no such file")
    types = {
        "topic": pa.string(), "keys": pa.string(), "uniq_key": pa.string(),
        "commit_log_offset": pa.int64(), "store_timestamp": pa.int64(), "sys_flag": pa.int32(),
    }
    if source.suffix.lower() in {".csv", ".tsv", ".txt"}:
        parse = pcsv.ParseOptions(delimiter="\t" if source.suffix.lower() == ".tsv" else ",")
        convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=True)
        try:
            reader = pcsv.open_csv(source, parse_options=parse, convert_options=convert,
                                   read_options=pcsv.ReadOptions(block_size=64 << 20))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DatasetError(
                f"{source}: {' '.join(str(exc).split())[:300]}; expected a header line and "
                "commit_log_offset, store_timestamp (epoch ms) and sys_flag as integers"
            ) from None
        names, total, batches = reader.schema.names, None, iter(reader)
    else:
        try:
            pf = pq.ParquetFile(source)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DatasetError(f"{source}: neither CSV (by suffix) nor Parquet: {exc}") from None
        names, total = pf.schema_arrow.names, pf.metadata.num_rows
        batches = pf.iter_batches(batch_size=batch_rows)
    required = {"topic", "commit_log_offset", "store_timestamp"}
    missing = sorted(required - set(names))
    if missing:
        raise DatasetError(
            f"{source}: missing columns {missing}; expected {list(RECORD_COLUMNS)} "
            f"(keys, uniq_key and sys_flag optional), found {names}"
        )

    def checked() -> Any:
        """The source's batches; a value that does not parse is one line naming it."""
        try:
            yield from batches
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            text = " ".join(str(exc).split())[:300]
            raise DatasetError(
                f"{source}: a value does not fit its column ({text}); expected "
                "commit_log_offset and store_timestamp as integers (epoch ms), sys_flag as "
                "an integer"
            ) from None

    def normalise() -> Any:
        for batch in checked():
            cols = []
            for name in RECORD_COLUMNS:
                if name in batch.schema.names:
                    try:
                        cols.append(batch.column(name).cast(types[name]))
                    except (pa.ArrowInvalid, pa.ArrowTypeError,
                            pa.ArrowNotImplementedError) as exc:
                        raise DatasetError(
                            f"{source}: column {name} holds {batch.schema.field(name).type} "
                            f"values that do not convert to {types[name]} "
                            f"({' '.join(str(exc).split())[:200]})"
                        ) from None
                else:
                    cols.append(pa.nulls(batch.num_rows, types[name]))
            whole = pa.RecordBatch.from_arrays(cols, names=list(RECORD_COLUMNS))
            for start in range(0, whole.num_rows, batch_rows):  # CSV blocks are larger
                yield whole.slice(start, batch_rows)

    return normalise(), total


def _validate_records(source: Path, batch_rows: int) -> None:
    """Read every input record once, writing nothing: a bad value anywhere fails here,
    before a store that already exists is touched (issue 12)."""
    import pyarrow as pa

    try:
        batches, _ = _record_batches(source, batch_rows)
        for _ in batches:
            pass
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise _bad_record(source, exc) from None
    except DatasetError as exc:
        raise DatasetError(f"{exc}; nothing was written") from None


def _bad_record(source: Path, exc: Exception) -> DatasetError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatasetError(f"{source}: bad record: {first}; nothing was written")


def _check_build_output(store: Path) -> None:
    """``build`` writes index files into a store directory: never into something else."""
    t = detect(store)
    if t.kind in ("missing", "empty_dir", "index_dir"):
        return
    if t.kind == "broker_root":
        raise UsageError(f"{store}: a broker store root; build into its index directory "
                         f"({t.index_dir or store / 'index'}), not the root")
    raise UsageError(f"{store}: {t.detail or t.kind}; build writes index files into a new, "
                     "empty or index directory")


def _check_engine(args: argparse.Namespace) -> None:
    """``--engine spark`` decodes a CommitLog; Spark's options need it."""
    if args.engine == "spark" and args.from_commitlog is None:
        raise UsageError("--engine spark goes with --from-commitlog (records from --from are "
                         "read by this process)")
    spark_options = args.master is not None or args.spark_conf or args.spark_py_files \
        or args.spark_no_ship
    if args.engine != "spark" and spark_options:
        raise UsageError("--master, --conf, --py-files and --no-ship need --engine spark")


def _commitlog_batches(args: argparse.Namespace, commitlog: Path, start: int) -> Any:
    """The index records of ``commitlog`` from ``start``, in log order: decoded here, or
    by Spark's executors and handed back in order (the same batches either way)."""
    if args.engine == "spark":
        from rmqarrow.converters.spark.records import ordered_index_records
        from rmqarrow.converters.spark.session import get_spark

        spark = get_spark(args.master, app_name="rmqarrow-build")
        return ordered_index_records(spark, commitlog, start_offset=start,
                                     batch_rows=args.batch_rows)
    from rmqarrow.commitlog import index_records

    return index_records(commitlog, start_offset=start, batch_rows=args.batch_rows)


def cmd_build(args: argparse.Namespace) -> int:
    """Build (or resume) a store.  A new store is built in a sibling staging folder and
    renamed into place when complete (a failure or kill -9 leaves no store, and the next
    run removes the folder); an existing store is appended in place, crash-consistently
    (an interrupted batch is rolled back to the header on the next open, and said)."""
    import os

    from rmqarrow._space import disk_full, is_disk_full
    from rmqarrow._staging import remove_path, sibling, stale_siblings
    from rmqarrow.errors import DiskFullError

    if args.batch_rows < 1:
        raise UsageError(f"--batch-rows must be >= 1, got {args.batch_rows}")
    if args.start_timestamp is not None and args.from_commitlog is None:
        raise UsageError("--start-timestamp goes with --from-commitlog")
    _check_engine(args)
    _check_build_output(Path(args.store))
    store = Path(args.store).absolute()
    for stale in stale_siblings(store, "build"):
        remove_path(stale)
        print(f"rmqarrow build: removed {stale} (left by a killed build)", file=sys.stderr)
    if store.exists() and not store.is_dir():
        raise UsageError(f"{args.store}: exists and is not a directory; give a store directory")
    fresh = not store.exists() or not any(store.iterdir())
    if fresh:
        from rmqarrow.converters.parquet.atomic import check_output_place

        check_output_place(store)
    elif args.source is not None:
        _validate_records(args.source, args.batch_rows)
    target = sibling(store, "build") if fresh else store
    try:
        summary = _build_into(args, target)
        if fresh:
            if store.exists():
                store.rmdir()  # it was empty
            os.rename(target, store)
    except OSError as exc:
        if fresh:
            remove_path(target)
        if is_disk_full(exc) and not isinstance(exc, DiskFullError):
            raise disk_full(args.store, None, exc) from None
        raise
    except BaseException as exc:
        if fresh:
            remove_path(target)
        import pyarrow as pa

        if isinstance(exc, pa.ArrowInvalid | pa.ArrowNotImplementedError) and args.source:
            raise _bad_record(args.source, exc) from None
        raise
    summary["store"] = str(args.store)
    if args.json:
        print_json(summary)
    else:
        print_kv(summary)
    return 0


def _build_into(args: argparse.Namespace, store: Path) -> dict[str, Any]:
    import time

    from rmqarrow._progress import Progress
    from rmqarrow.format.layout import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM
    from rmqarrow.index.service import IndexService

    if args.source is not None:
        batches, total = _record_batches(args.source, args.batch_rows)
        unit = "records"
    else:
        from rmqarrow.commitlog import CommitLogReader

        say: list[str] = []
        commitlog = require_commitlog(args.from_commitlog, say=say)
        print_notes(say)
        start = args.start_offset
        if args.start_timestamp is not None:
            start = CommitLogReader(commitlog).recover_start_offset(
                parse_time(args.start_timestamp, "--start-timestamp"))
        batches = _commitlog_batches(args, commitlog, start)
        total, unit = None, "records"
    service = IndexService(
        store,
        DEFAULT_HASH_SLOT_NUM if args.hash_slot_num is None else args.hash_slot_num,
        DEFAULT_INDEX_NUM if args.index_num is None else args.index_num,
        checkpoint_path=args.checkpoint,
    )
    started = time.monotonic()
    records = 0
    with service:
        service.load()
        for note in service.repairs:
            print(f"rmqarrow build: {note}", file=sys.stderr)
        files_before = len(service.files)
        with Progress(total, "building", unit) as progress:
            for batch in batches:
                service.build_index_batch(batch)
                records += batch.num_rows
                progress.advance(batch.num_rows)
        service.flush()
        return {
            "store": str(store),
            "records": records,
            "files": len(service.files),
            "new_files": len(service.files) - files_before,
            "entries": sum(f.entry_count for f in service.files),
            "repaired": len(service.repairs),
            "seconds": round(time.monotonic() - started, 3),
        }
