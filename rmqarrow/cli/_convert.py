"""``rmqarrow export`` and ``rmqarrow import``: native store <-> Parquet dataset.

``export STORE OUT [--overwrite] [--engine local|spark] [--master URL] [--commitlog DIR]``
writes the dataset layout documented in :mod:`rmqarrow.converters.parquet.export`
(``--commitlog`` adds the ``messages/`` table: one part, or with Spark one part per
CommitLog file); ``import DATASET OUTDIR`` rebuilds byte-identical
native files (never replacing one).  Engines load inside the commands.
``export STORE OUT --incremental [--prune-deleted] [--reexport-changed]`` brings an
existing dataset up to the store (``IndexStore.sync``); ``--follow [--interval S]`` does so
every S seconds until SIGINT/SIGTERM, which end it between rounds (``IndexStore.follow``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import rmqarrow
from rmqarrow._text import json_line
from rmqarrow.cli._output import (
    add_as_of_option,
    add_force_option,
    add_geometry_options,
    add_spark_options,
    add_wait_option,
    dataset_arg,
    geometry_option,
    location_arg,
    print_document,
    print_kv,
    progress_bar,
)
from rmqarrow.cli._rocksdb import add_index_option, open_options
from rmqarrow.cli._schemas import document
from rmqarrow.cli._show import render_export, render_import
from rmqarrow.errors import UsageError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export a store (or one index file) to a Parquet dataset",
        description="Export native index files to a dataset of Delta tables (files/, "
        "slots/, entries/), written atomically: a new dataset appears whole, an existing one "
        "changes by one commit.",
    )
    p.add_argument("store", type=location_arg, help="store directory (or one index file)")
    p.add_argument(
        "out",
        type=dataset_arg,
        help="dataset directory to create, or s3://BUCKET/PREFIX (Delta tables)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUT if it exists (a dataset of Delta tables: one more version, the "
        "older ones still read with --as-of until a vacuum)",
    )
    # the older spellings of the one layout written now, accepted so scripts keep working
    # (the manifest layout is no longer written: "--layout manifest" is an invalid choice)
    p.add_argument("--layout", choices=("delta",), default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--delta", dest="layout", action="store_const", const="delta", help=argparse.SUPPRESS
    )
    p.add_argument(
        "--engine",
        choices=("local", "spark"),
        default="local",
        help="local (numpy + pyarrow, default) or spark",
    )
    p.add_argument("--master", default=None, help="Spark master URL (--engine spark only)")
    add_spark_options(p)
    p.add_argument(
        "--commitlog",
        type=location_arg,
        metavar="DIR",
        default=None,
        help="a broker's store/commitlog: also write the messages table "
        "(messages/; with --engine spark a task per CommitLog file)",
    )
    add_geometry_options(p)
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse a store with a damaged file instead of skipping it",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument(
        "--incremental",
        action="store_true",
        help="bring the existing dataset OUT up to the store: append new files "
        "and new entries, replace what changed, one atomic switch (OUT missing: "
        "export it whole)",
    )
    p.add_argument(
        "--prune-deleted",
        action="store_true",
        help="with --incremental/--follow: remove files (and CommitLog messages) "
        "the broker deleted from the dataset (default: keep them)",
    )
    p.add_argument(
        "--reexport-changed",
        action="store_true",
        help="with --incremental/--follow: export a file that went backwards "
        "(shorter, or replaced) whole again instead of refusing",
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="keep running: an incremental export every --interval seconds (it implies "
        "--incremental; giving both is the same as --follow alone), one "
        "line per round that changed something; a round that fails in a way that "
        "can heal (a file born, torn or expired mid-round, a full disk) is retried "
        "after 1 s, doubling up to 30 s, with a warning each time; SIGINT/SIGTERM "
        "stop it between rounds",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds between --follow rounds (default 5)",
    )
    p.add_argument(
        "--duckdb-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --incremental/--follow: write the DuckDB database file FILE over OUT "
        "again after each run that changed it (as `rmqarrow sql OUT --save FILE`), so "
        "it stays current",
    )
    add_index_option(p)
    add_wait_option(p)
    p.set_defaults(func=_export)

    p = sub.add_parser(
        "import",
        help="rebuild native index files from a Parquet dataset",
        description="Rebuild byte-identical native index files from a dataset made by "
        "export; checks the dataset first and never overwrites an existing file.",
    )
    p.add_argument("dataset", type=dataset_arg, help="dataset directory made by rmqarrow export")
    p.add_argument(
        "outdir",
        type=location_arg,
        help="directory to write the index files into (created if missing)",
    )
    p.add_argument(
        "--trust-dataset",
        action="store_true",
        help="skip checking the parts against the manifest's list and checksums",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_as_of_option(p)
    add_wait_option(p)
    add_force_option(p)
    p.set_defaults(func=_import)

    p = sub.add_parser(
        "convert",
        help="make an exported dataset's tables Delta tables, in place",
        description="Convert a dataset of the older manifest layout (_rmqarrow.json), which "
        "rmqarrow no longer writes, to Delta tables in place: its parts are committed as "
        "they are and the manifest is deleted last (killed, run it again to finish). "
        "export --incremental needs it done; from then on every run is a version, read "
        "back with --as-of. A dataset of Delta tables is left as it is.",
    )
    p.add_argument("dataset", type=location_arg, help="dataset directory made by rmqarrow export")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_wait_option(p)
    p.set_defaults(func=_convert)

    p = sub.add_parser(
        "vacuum",
        help="delete the files of a Delta dataset's old versions",
        description="Delete the parts of a dataset of Delta tables that no version within "
        "the retention reads (they stay on disk after an --incremental run replaces them, "
        "for --as-of), and parts no run committed (a killed run's) once as old.",
    )
    p.add_argument("dataset", type=dataset_arg, help="dataset of Delta tables")
    p.add_argument(
        "--retention",
        type=int,
        default=None,
        metavar="HOURS",
        help="keep every version current within the last HOURS (default 168, a week; "
        "under 1 only with --force)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="list the files it would delete; delete none"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="take a --retention under 1 hour (a reader still on an older version, a sql "
        "prompt or a Spark job, loses its files mid-query)",
    )
    p.add_argument("--json", action="store_true", help="print the files by table as JSON")
    add_wait_option(p)
    p.set_defaults(func=_vacuum)


def _export(args: argparse.Namespace) -> int:
    _check_sync_options(args)
    store = rmqarrow.open(
        args.store,
        geometry=geometry_option(args),
        strict=args.strict,
        **open_options(args),
    )
    with store:
        if args.incremental or args.follow:
            return _sync(store, args)  # refused by any store but IndexFiles
        start = time.perf_counter()
        manifest = store.export(
            args.out,
            overwrite=args.overwrite,
            engine=args.engine,
            master=args.master,
            commitlog=args.commitlog,
            progress=progress_bar(),
            wait=args.wait,
        )
    return render_export(manifest, args, time.perf_counter() - start)


def _check_sync_options(args: argparse.Namespace) -> None:
    sync = args.incremental or args.follow
    if args.interval is not None and not args.follow:
        raise UsageError("--interval needs --follow")
    if args.interval is not None and not args.interval > 0:
        raise UsageError(f"--interval must be > 0 seconds, got {args.interval}")
    for flag in ("prune_deleted", "reexport_changed", "duckdb_file"):
        if getattr(args, flag) and not sync:
            raise UsageError(f"--{flag.replace('_', '-')} needs --incremental or --follow")
    if sync and args.overwrite:
        raise UsageError(
            "--overwrite replaces the dataset; --incremental/--follow update it: choose one"
        )
    if sync and args.engine != "local":
        raise UsageError("--incremental/--follow export with the local engine only")


def _round(result: Any) -> dict[str, Any]:
    return {
        "dataset": result.dataset,
        "run": result.run,
        "added": len(result.added),
        "grown": len(result.grown),
        "reexported": len(result.reexported),
        "unchanged": result.unchanged,
        "deleted": len(result.deleted),
        "pruned": len(result.pruned),
        "entries": result.entries,
        **({"messages": result.messages} if result.messages else {}),
        "seconds": round(result.seconds, 3),
    }


def _sync(store: Any, args: argparse.Namespace) -> int:
    options = {
        "commitlog": args.commitlog,
        "prune_deleted": args.prune_deleted,
        "reexport_changed": args.reexport_changed,
        "wait": args.wait,
        "duckdb_file": args.duckdb_file,
    }
    if not args.follow:
        summary = _round(store.sync(args.out, **options))
        if args.json:
            print_document("export.sync", summary)
        else:
            print_kv(summary)
        return 0
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        stop.set()  # the round in progress finishes; the loop ends before the next

    interval = 5.0 if args.interval is None else args.interval
    # a store that cannot be followed refuses here, before any signal is taken over
    rounds = store.follow(args.out, interval=interval, stop=stop, **options)
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for i, result in enumerate(rounds):
            if not (result.changed or i == 0):
                continue
            if args.json:  # one JSON object a line (JSON Lines), as a log shipper reads it
                sys.stdout.write(json_line(document("export.sync", _round(result))) + "\n")
            else:
                print(
                    f"run {result.run}: files +{len(result.added)} new, "
                    f"{len(result.grown)} grown, {result.unchanged} unchanged, "
                    f"{len(result.deleted)} deleted; entries +{result.entries}"
                    + (f", messages +{result.messages}" if result.messages else "")
                    + f"; {result.seconds:.3f} s"
                )
            sys.stdout.flush()
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    return 0


def _import(args: argparse.Namespace) -> int:
    store = rmqarrow.open(args.dataset, as_of=args.as_of)
    with store:
        start = time.perf_counter()
        paths = store.import_files(
            args.outdir,
            trust=args.trust_dataset,
            progress=progress_bar(),
            wait=args.wait,
            force=args.force,
        )
    return render_import(paths, args, time.perf_counter() - start)


def _convert(args: argparse.Namespace) -> int:
    with rmqarrow.open(args.dataset) as store:
        converted = store.convert_to_delta(wait=args.wait)
    summary = {"dataset": args.dataset, "converted": converted, "layout": "delta"}
    if args.json:
        print_document("convert", summary, args)
    else:
        print_kv(summary)
    return 0


def _vacuum(args: argparse.Namespace) -> int:
    with rmqarrow.open(args.dataset) as store:
        deleted = store.vacuum(
            args.retention, dry_run=args.dry_run, wait=args.wait, force=args.force
        )
    if args.json:
        print_document(
            "vacuum", {"dataset": args.dataset, "dry_run": args.dry_run, "files": deleted}, args
        )
        return 0
    verb = "would delete" if args.dry_run else "deleted"
    for table, files in deleted.items():
        for name in files:
            print(f"{table}/{name}")
    total = sum(len(f) for f in deleted.values())
    print(f"{verb} {total} file(s)", file=sys.stderr)
    return 0
