"""``rmqarrow export`` and ``rmqarrow import``: native store <-> Parquet dataset.

``export STORE OUT [--overwrite] [--engine local|spark] [--master URL] [--commitlog DIR]``
writes the dataset layout documented in :mod:`rmqarrow.converters.parquet.export`
(``--commitlog`` adds the ``messages/`` table: one part, or with Spark one part per
CommitLog file); ``import DATASET OUTDIR`` rebuilds byte-identical
native files (never replacing one).  Engines load inside the commands.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import add_geometry_options, add_spark_options, print_json, print_kv

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export a store (or one index file) to a Parquet dataset",
        description="Export native index files to a Parquet dataset (files/, slots/, "
        "entries/ and a manifest), written atomically.",
    )
    p.add_argument("store", help="store directory (or one index file)")
    p.add_argument("out", help="dataset directory to create")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.add_argument("--engine", choices=("local", "spark"), default="local",
                   help="local (numpy + pyarrow, default) or spark")
    p.add_argument("--master", default=None, help="Spark master URL (--engine spark only)")
    add_spark_options(p)
    p.add_argument("--commitlog", metavar="DIR", default=None,
                   help="a broker's store/commitlog: also write the messages table "
                   "(messages/; with --engine spark a task per CommitLog file)")
    add_geometry_options(p)
    p.add_argument("--strict", action="store_true",
                   help="refuse a store with a damaged file instead of skipping it")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_export)

    p = sub.add_parser(
        "import",
        help="rebuild native index files from a Parquet dataset",
        description="Rebuild byte-identical native index files from a dataset made by "
        "export; checks the dataset first and never overwrites an existing file.",
    )
    p.add_argument("dataset", help="dataset directory made by rmqarrow export")
    p.add_argument("outdir", help="directory to write the index files into (created if missing)")
    p.add_argument("--trust-dataset", action="store_true",
                   help="skip checking the parts against the manifest's list and checksums")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=_import)


def _spark_export() -> Callable[..., None]:
    """``rmqarrow.converters.spark.export.export_store``, or EngineUnavailableError naming the
    fix."""
    from rmqarrow.errors import EngineUnavailableError

    try:
        module = importlib.import_module("rmqarrow.converters.spark.export")
    except ModuleNotFoundError as exc:
        raise EngineUnavailableError(
            f"--engine spark needs {exc.name} (pip install 'rmqarrow[spark]' and Java 17)"
        ) from None
    fn: Callable[..., None] = module.export_store
    return fn


def _export_source(args: argparse.Namespace) -> list[str]:
    """The store to export (a broker root -> its index/); damaged files are named on stderr
    (:func:`rmqarrow.index.health.healthy_index_files` is what the exporter leaves out) and,
    with --strict, refused."""
    from rmqarrow.errors import CorruptIndexError
    from rmqarrow.format.detect import require_commitlog, require_index_store
    from rmqarrow.index.health import healthy_index_files

    say: list[str] = []
    target = require_index_store(args.store, say=say)
    args.store = str(target.index_path)
    if args.commitlog is not None:
        args.commitlog = str(require_commitlog(args.commitlog, say=say))
    for line in dict.fromkeys(say):
        print(line, file=sys.stderr)
    geometry, healthy, damaged = healthy_index_files(args.store, args.hash_slot_num,
                                                     args.index_num)
    # the geometry fitted from the healthy files, so a damaged newest file cannot decide it
    args.hash_slot_num, args.index_num = geometry.hash_slot_num, geometry.index_num
    if damaged and args.strict:
        raise CorruptIndexError(
            f"{len(damaged)} damaged index file(s), refused (--strict): "
            + "; ".join(f.describe() for f in damaged))
    for fh in damaged:
        print(f"warning: damaged file {fh.describe()}", file=sys.stderr)
    if not healthy:
        from rmqarrow.errors import UsageError

        raise UsageError(f"{args.store}: no healthy index files to export")
    return [f.name for f in damaged]


def _export(args: argparse.Namespace) -> int:
    from rmqarrow.cli._tiered import is_tiered_input, tiered_export
    from rmqarrow.errors import CorruptIndexError

    if is_tiered_input(args.store):  # RocketMQ tiered-storage index (issue 16)
        return tiered_export(Path(args.store), args)
    damaged = _export_source(args)
    try:
        return _run_export(args, damaged)
    except CorruptIndexError as exc:
        if not damaged or not any(name in str(exc) for name in damaged):
            raise
        raise CorruptIndexError(
            f"{args.store}: the exporter stopped at a damaged file ({', '.join(damaged)}) "
            "instead of leaving it out; copy the healthy files into a new directory outside "
            "the store and export that (see `rmqarrow check`)"
        ) from None


def _run_export(args: argparse.Namespace, damaged: list[str]) -> int:
    start = time.perf_counter()
    if args.engine == "spark":
        spark_export = _spark_export()
        spark_export(
            args.store,
            args.out,
            overwrite=args.overwrite,
            master=args.master,
            hash_slot_num=args.hash_slot_num,
            index_num=args.index_num,
            commitlog=args.commitlog,
        )
        from rmqarrow.converters.parquet.manifest import read_manifest

        manifest = read_manifest(args.out)
    else:
        if args.master is not None:
            print("rmqarrow export: error: --master needs --engine spark", file=sys.stderr)
            return 2
        from rmqarrow.converters.parquet.export import export_store

        manifest = export_store(
            args.store,
            args.out,
            overwrite=args.overwrite,
            hash_slot_num=args.hash_slot_num,
            index_num=args.index_num,
            progress=True,
            commitlog=args.commitlog,
            skip=damaged,
        )
    summary = {
        "dataset": args.out,
        "engine": args.engine,
        "files": manifest["tables"]["files"]["rows"],
        "slots": manifest["tables"]["slots"]["rows"],
        "entries": manifest["tables"]["entries"]["rows"],
        **({"messages": manifest["tables"]["messages"]["rows"]}
           if "messages" in manifest["tables"] else {}),
        "seconds": round(time.perf_counter() - start, 3),
    }
    if args.json:
        print_json(summary)
    else:
        print_kv(summary)
    return 0


def _import(args: argparse.Namespace) -> int:
    from rmqarrow.cli._tiered import is_tiered_input, tiered_import

    if is_tiered_input(args.dataset):  # a tiered dataset (issue 16)
        return tiered_import(Path(args.dataset), args)
    from rmqarrow.converters.parquet.importer import import_dataset
    from rmqarrow.errors import StoreNotFoundError, UsageError
    from rmqarrow.format.detect import describe, detect

    t = detect(args.dataset)
    if t.kind == "missing":
        raise StoreNotFoundError(f"{args.dataset}: no such dataset directory")
    if t.kind != "dataset":
        hint = " (it already is index files: query it directly)" if t.is_index else ""
        raise UsageError(f"{args.dataset}: {describe(t)}{hint}; import takes a dataset made "
                         "by `rmqarrow export`")
    start = time.perf_counter()
    paths = import_dataset(args.dataset, args.outdir, progress=True,
                           trust=args.trust_dataset)
    summary = {
        "outdir": args.outdir,
        "files": len(paths),
        "names": " ".join(p.name for p in paths),
        "seconds": round(time.perf_counter() - start, 3),
    }
    if args.json:
        summary["names"] = [p.name for p in paths]
        print_json(summary)
    else:
        print_kv(summary)
    return 0
