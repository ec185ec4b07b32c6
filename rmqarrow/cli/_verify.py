"""``rmqarrow verify``: every engine's answers checked against the native chained lookup."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

import rmqarrow
from rmqarrow.cli._datasets import object_dataset_copy
from rmqarrow.cli._output import (
    add_as_of_option,
    add_geometry_options,
    add_spark_options,
    dataset_arg,
    geometry_option,
    path_arg,
)
from rmqarrow.cli._rocksdb import add_index_option, add_rocksdb_options, open_options
from rmqarrow.cli._show import render
from rmqarrow.engines import parse_engines
from rmqarrow.errors import UsageError
from rmqarrow.format.queries import unescape_text
from rmqarrow.format.query_file import read_lines_file

__all__ = ["register"]

DEFAULT_ENGINES = "native,duckdb,spark"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="run the same queries through native, DuckDB and Spark and compare the answers",
        description=(
            "Answer the same queries with each engine and compare every answer with the "
            "native chained lookup; print an agreement table and every mismatch with the "
            "reason when it can be told. Exit status 1 on any mismatch or failed check."
        ),
    )
    p.add_argument("store", type=path_arg, help="native store directory (the reference)")
    p.add_argument(
        "--dataset",
        type=dataset_arg,
        help="exported Parquet dataset (local or s3://): the SQL engines read it, and it "
        "is checked against the native files",
    )
    add_as_of_option(p, "the --dataset")
    p.add_argument(
        "--engines",
        default=DEFAULT_ENGINES,
        help=f"comma-separated engines (default {DEFAULT_ENGINES}; spark is "
        "skipped when unavailable unless named explicitly)",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--sample", type=int, default=200, help="sampled queries (default 200)")
    what.add_argument(
        "--queries",
        type=path_arg,
        help="TSV: key[<TAB>max_num[<TAB>begin[<TAB>end]]], a header line allowed; - reads stdin",
    )
    p.add_argument(
        "--keys",
        type=path_arg,
        help="file of full index keys (topic#key), one a line, to sample real keys "
        "from; without it probe keys with the index's hashes stand in",
    )
    p.add_argument("--escaped", action="store_true", help="keys in --queries/--keys are escaped")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--master", help="Spark master URL (default local[*])")
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse a store with a damaged file instead of skipping it",
    )
    add_spark_options(p)
    p.add_argument(
        "--no-chain-check",
        action="store_true",
        help="skip the scan of every file for damaged chains",
    )
    add_geometry_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_index_option(p)
    add_rocksdb_options(p)
    p.set_defaults(func=cmd_verify)


def read_keys(path: Path, escaped: bool) -> list[str]:
    """Full index keys, one a line (blank lines skipped)."""
    lines = read_lines_file(path, "keys file")
    if not lines:
        raise UsageError(f"{path}: no keys in the file (one full index key topic#key a line)")
    return [unescape_text(k) if escaped else k for k in lines]


#: Sampled queries are held in memory with their answers from every engine.
_MAX_SAMPLE = 1_000_000


def cmd_verify(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        # a --dataset on object storage: one local copy of its run, read by every step
        args.dataset, args.as_of = object_dataset_copy(args.dataset, args.as_of, stack)
        return _verify(args)


def _verify(args: argparse.Namespace) -> int:
    if not 1 <= args.sample <= _MAX_SAMPLE:
        raise UsageError(
            f"--sample must be 1..{_MAX_SAMPLE:,}, got {args.sample}; for more, give the "
            "queries themselves with --queries"
        )
    opened = rmqarrow.open(
        args.store,
        geometry=geometry_option(args),
        strict=args.strict,
        **open_options(args),
    )
    with opened:
        report = opened.verify(
            dataset=args.dataset,
            as_of=args.as_of,
            engines=None if args.engines == DEFAULT_ENGINES else parse_engines(args.engines),
            queries=None
            if args.queries is None
            else opened.read_queries(args.queries, escaped=args.escaped),
            keys=None if args.keys is None else read_keys(args.keys, args.escaped),
            sample=args.sample,
            seed=args.seed,
            master=args.master,
            chain_check=not args.no_chain_check,
        )
    return render(report, args)
