"""The command line on RocketMQ tiered index files (RIP-65 ``IndexStoreFile``, both forms).

``verify`` renders a tiered store here when :func:`rmqarrow.open` says the path is tiered
(a local or uploaded file, a ``tiered_index_file/`` folder, a segment folder, or a tiered
dataset); ``query``, ``export`` and ``import`` render the library's tiered results in
:mod:`rmqarrow.cli._render_query`, ``info`` and ``check`` theirs in their own modules.
"""

from __future__ import annotations

import argparse

from rmqarrow.cli._output import print_document
from rmqarrow.engines import parse_engines
from rmqarrow.errors import UsageError
from rmqarrow.format.queries import read_queries_tsv
from rmqarrow.store import TieredStore
from rmqarrow.verify import format_tiered_report, verify_tiered

__all__ = ["tiered_verify"]


def _split(full: str) -> tuple[str, str]:
    topic, sep, key = full.partition("#")
    if not sep:
        raise UsageError(f"tiered index keys are topic#key (or --topic with --key); got {full!r}")
    return topic, key


def tiered_verify(store: TieredStore, args: argparse.Namespace) -> int:
    """``rmqarrow verify`` on tiered files: DuckDB/Spark against the native tiered lookup."""
    engines = parse_engines(args.engines)
    queries = None
    if args.queries is not None:
        queries = [
            (*_split(q.key), q.max_num, q.begin, q.end)
            for q in read_queries_tsv(args.queries, escaped=args.escaped)
        ]
    explicit = args.engines != "native,duckdb,spark"
    report = verify_tiered(
        store.path,
        engines=engines,
        queries=queries,
        sample=args.sample,
        seed=args.seed,
        dataset=args.dataset,
        exact=bool(getattr(args, "exact", False)),
        master=args.master,
        hash_slot_num=args.hash_slot_num,
        index_num=args.index_num,
        required=engines if explicit else [e for e in engines if e != "spark"],
    )
    if args.json:
        print_document("verify.tiered", report.to_dict())
    else:
        format_tiered_report(report)
    return 0 if report.ok else 1
