"""``rmqarrow verify``: every engine's answers checked against the native chained lookup."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import add_geometry_options, add_spark_options, print_json
from rmqarrow.errors import StoreNotFoundError, UsageError

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
    p.add_argument("store", type=Path, help="native store directory (the reference)")
    p.add_argument("--dataset", type=Path,
                   help="exported Parquet dataset: the SQL engines read it, and it is checked "
                        "against the native files")
    p.add_argument("--engines", default=DEFAULT_ENGINES,
                   help=f"comma-separated engines (default {DEFAULT_ENGINES}; spark is "
                        "skipped when unavailable unless named explicitly)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--sample", type=int, default=200, help="sampled queries (default 200)")
    what.add_argument("--queries", type=Path, help="TSV: key<TAB>max_num<TAB>begin<TAB>end")
    p.add_argument("--keys", type=Path,
                   help="file of full index keys (topic#key), one a line, to sample real keys "
                        "from; without it probe keys with the index's hashes stand in")
    p.add_argument("--escaped", action="store_true", help="keys in --queries/--keys are escaped")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--master", help="Spark master URL (default local[*])")
    add_spark_options(p)
    p.add_argument("--no-chain-check", action="store_true",
                   help="skip the scan of every file for damaged chains")
    add_geometry_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_verify)


def read_keys(path: Path, escaped: bool) -> list[str]:
    """Full index keys, one a line (blank lines skipped)."""
    from rmqarrow.format.queries import unescape_text

    if not path.is_file():
        raise StoreNotFoundError(f"{path}: no such keys file")
    lines = path.read_text(encoding="utf-8").split("\n")
    return [unescape_text(k) if escaped else k for k in lines if k]


def cmd_verify(args: argparse.Namespace) -> int:
    from rmqarrow.engines import parse_engines
    from rmqarrow.format.queries import read_queries_tsv
    from rmqarrow.verify import format_report, verify

    engines = parse_engines(args.engines)
    if args.sample < 1:
        raise UsageError(f"--sample must be >= 1, got {args.sample}")
    if args.queries is not None and args.keys is not None:
        raise UsageError("--keys is for sampling; --queries gives the queries themselves")
    queries = None
    if args.queries is not None:
        queries = read_queries_tsv(args.queries, escaped=args.escaped)
    keys = read_keys(args.keys, args.escaped) if args.keys is not None else None
    explicit = args.engines != DEFAULT_ENGINES
    report = verify(
        args.store,
        dataset=args.dataset,
        engines=engines,
        queries=queries,
        keys=keys,
        sample=args.sample,
        seed=args.seed,
        master=args.master,
        hash_slot_num=args.hash_slot_num,
        index_num=args.index_num,
        required=engines if explicit else [e for e in engines if e != "spark"],
        chain_check=not args.no_chain_check,
    )
    if args.json:
        print_json(report.to_dict())
    else:
        format_report(report)
    return 0 if report.ok else 1
