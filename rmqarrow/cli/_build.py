"""``rmqarrow build``: a store from message records (CSV, Parquet) or a CommitLog, crash-safe
(:func:`rmqarrow.build` does the work).

With ``--from-commitlog DIR --engine spark`` the CommitLog is decoded by Spark (one task
a file, :mod:`rmqarrow.converters.spark.records`) and this process builds from the records
in log order: the same index files, byte for byte.
"""

from __future__ import annotations

import argparse
from typing import Any

import rmqarrow
from rmqarrow.cli._output import (
    add_force_option,
    add_geometry_options,
    add_spark_options,
    add_wait_option,
    geometry_option,
    path_arg,
    print_document,
    print_kv,
    progress_bar,
)
from rmqarrow.cli._rocksdb import rocksdb_build
from rmqarrow.errors import UsageError
from rmqarrow.format.records import DEFAULT_ROCKETMQ_VERSION
from rmqarrow.format.times import TIME_HELP, parse_time

__all__ = ["register"]


def register(sub: Any) -> None:
    build = sub.add_parser("build", help="build a store from message records")
    build.add_argument("store", type=path_arg, help="store directory (created if missing)")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="source", type=path_arg, help="Parquet or CSV of records")
    source.add_argument(
        "--from-commitlog",
        type=path_arg,
        metavar="DIR",
        help="a broker's store/commitlog (or the store root: its commitlog/ is used)",
    )
    build.add_argument("--start-offset", type=int, default=0, help="CommitLog offset to resume at")
    build.add_argument(
        "--start-timestamp",
        help="resume where the broker's recovery would for this store time: the newest "
        "CommitLog file whose first message is no later. Records below the store's last "
        "indexed offset (the newest file's endPhyOffset) are skipped, as RocketMQ's guard "
        "does; the record at that offset is indexed again, so its keys appear once more "
        f"after a resume. {TIME_HELP}",
    )
    build.add_argument("--checkpoint", type=path_arg, help="the store's checkpoint file")
    build.add_argument("--batch-rows", type=int, default=1 << 20, help="records per batch")
    build.add_argument(
        "--engine",
        choices=("local", "spark"),
        default="local",
        help="who decodes --from-commitlog: local (this process, default) or spark (one task "
        "per CommitLog file; this process still writes the index, byte-identical)",
    )
    build.add_argument("--master", default=None, help="Spark master URL (--engine spark only)")
    add_spark_options(build)
    add_geometry_options(build)
    add_wait_option(build)
    add_force_option(build)
    build.add_argument("--json", action="store_true", help="print a JSON summary")
    build.add_argument(
        "--index",
        choices=("indexfile", "rocksdb"),
        default="indexfile",
        help="which index to write: IndexFiles (default) or RocketMQ's RocksDB "
        "message index (RIP-82; into STORE/rocksdbstore for a broker store "
        "root, else STORE), as the broker's buildIndex writes it",
    )
    build.add_argument(
        "--rocketmq-version",
        default=None,
        metavar="VERSION",
        help="follow this RocketMQ release's index rules with --from-commitlog: 5.4 and "
        f"later also index each message's tags (TOPIC#T#TAGS); default "
        f"{DEFAULT_ROCKETMQ_VERSION}, what 4.9.x to 5.3.x write",
    )
    build.set_defaults(func=cmd_build)


def cmd_build(args: argparse.Namespace) -> int:
    """Build (or resume) a store through :func:`rmqarrow.build` and print its summary."""
    if args.start_offset < 0:
        raise UsageError(
            f"--start-offset must be a CommitLog offset >= 0, got {args.start_offset}; "
            "give 0 (the default) to build from the first record"
        )
    if args.index == "rocksdb":
        if args.rocketmq_version is not None:
            raise UsageError(
                "--rocketmq-version picks the IndexFile rules; the RocksDB index has its own "
                "(it always indexes tags): drop it"
            )
        return rocksdb_build(args)
    if args.engine == "spark" and args.from_commitlog is None:
        raise UsageError(
            "--engine spark goes with --from-commitlog (records from --from are "
            "read by this process)"
        )
    if args.batch_rows < 1:
        raise UsageError(f"--batch-rows must be >= 1, got {args.batch_rows}")
    if args.start_timestamp is not None and args.from_commitlog is None:
        raise UsageError("--start-timestamp goes with --from-commitlog")
    start_timestamp = (
        None
        if args.start_timestamp is None
        else parse_time(args.start_timestamp, "--start-timestamp")
    )
    summary = rmqarrow.build(
        args.store,
        records=args.source,
        commitlog=args.from_commitlog,
        start_offset=args.start_offset,
        start_timestamp=start_timestamp,
        engine=args.engine,
        master=args.master,
        checkpoint=args.checkpoint,
        geometry=geometry_option(args),
        batch_rows=args.batch_rows,
        progress=progress_bar(),
        wait=args.wait,
        force=args.force,
        rocketmq_version=args.rocketmq_version or DEFAULT_ROCKETMQ_VERSION,
    )
    doc = summary.to_dict()
    if args.json:
        print_document("build", doc)
    else:
        print_kv(doc)
    return 0
