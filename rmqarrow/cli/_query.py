"""``rmqarrow query``: key lookups through any engine, explained, resolved against the CommitLog."""

from __future__ import annotations

import argparse
import os
from typing import Any

import rmqarrow
from rmqarrow.cli._output import (
    add_as_of_option,
    add_geometry_options,
    add_json_options,
    add_spark_options,
    dataset_arg,
    geometry_option,
    path_arg,
)
from rmqarrow.cli._rocksdb import add_index_option, add_rocksdb_options, open_options
from rmqarrow.cli._show import render_lookup
from rmqarrow.engines import ENGINES
from rmqarrow.errors import UsageError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.times import TIME_HELP, parse_time

__all__ = ["register"]


def register(sub: Any) -> None:
    query = sub.add_parser(
        "query",
        help="look keys up with the native chained lookup",
        description="Look keys up. Damaged files (truncated, bad header, wrong size) are "
        "skipped and named on stderr; --strict refuses instead.",
    )
    query.add_argument(
        "store",
        type=dataset_arg,
        help="store directory, broker store root (or dataset, local or s3://, for SQL engines)",
    )
    what = query.add_mutually_exclusive_group(required=True)
    what.add_argument("--key", help="the key (with --topic) or the full index key topic#key")
    what.add_argument(
        "--queries",
        type=path_arg,
        help="TSV, one query a line: key[<TAB>max_num[<TAB>begin[<TAB>end]]] "
        "(a header line is allowed; missing columns take the options); - reads stdin",
    )
    query.add_argument("--topic", help="topic; the index key is then TOPIC#KEY")
    query.add_argument("--begin", default="0", help=f"from this store time: {TIME_HELP}")
    query.add_argument("--end", default=str(JAVA_LONG_MAX), help=f"to this store time: {TIME_HELP}")
    query.add_argument("--max-num", type=int, default=64, help="at most this many offsets")
    query.add_argument("--escaped", action="store_true", help="keys in --queries are escaped")
    query.add_argument("--engine", choices=[str(e) for e in ENGINES], default="native")
    query.add_argument(
        "--dataset",
        type=dataset_arg,
        help="a Parquet dataset, local or s3:// (duckdb/spark engines)",
    )
    add_as_of_option(query)
    query.add_argument("--master", help="Spark master URL (spark engine)")
    add_spark_options(query)
    query.add_argument(
        "--resolve",
        type=path_arg,
        metavar="COMMITLOG_DIR",
        help="read each hit back from this CommitLog and keep only exact topic/key matches "
        "(with --type T: exact topic/tags matches)",
    )
    query.add_argument("--show", action="store_true", help="with --resolve: print the messages")
    query.add_argument(
        "--explain",
        action="store_true",
        help="say per file why nothing (or something) came back (native)",
    )
    query.add_argument(
        "--strict",
        action="store_true",
        help="refuse a store with a damaged file instead of skipping it",
    )
    add_geometry_options(query)
    add_json_options(query)
    query.add_argument(
        "--exact",
        action="store_true",
        help="tiered index: every match of the chain or slot, capped by --max-num",
    )
    query.add_argument(
        "--type",
        dest="index_type",
        default=None,
        help="the index type: K (keys), U (message id) or T (tags: TOPIC#T#KEY in the "
        "index files of 5.4 and later). RocksDB index without it: K, then U when K "
        "finds nothing (older clients); index files: K and U are the same TOPIC#KEY",
    )
    query.add_argument(
        "--last-key",
        default=None,
        help="RocksDB index: page after this lastKey (hour@topic@TYPE@key@uniqKey@offset)",
    )
    add_index_option(query)
    add_rocksdb_options(query)
    query.set_defaults(func=cmd_query)


def cmd_query(args: argparse.Namespace) -> int:
    if args.topic is not None and not args.topic.strip():
        # an unset shell variable, most likely: every kind would look up "#KEY" and find nothing
        raise UsageError(
            f"--topic is empty (got {args.topic!r}); give the message's topic, or drop "
            "--topic and pass --key 'TOPIC#KEY'"
        )
    if args.engine == "native" and args.dataset is not None:
        raise UsageError("a dataset is for the duckdb and spark engines; native reads the store")
    begin = parse_time(args.begin, "--begin")
    end = parse_time(args.end, "--end")
    source = args.dataset if args.dataset is not None else args.store
    store = rmqarrow.open(
        source,
        geometry=geometry_option(args),
        strict=args.strict,
        **open_options(args),
        as_of=args.as_of,
    )
    if args.dataset is not None and os.path.exists(str(args.store)):
        # a STORE that is no path is a placeholder: the dataset alone answers
        _check_dataset_format(args, store)
    with store:
        result = store.lookup(
            args.key,
            topic=args.topic,
            queries=args.queries,
            escaped=args.escaped,
            begin=begin,
            end=end,
            max_num=args.max_num,
            index_type=args.index_type,
            last_key=args.last_key,
            exact=args.exact,
            engine=args.engine,
            master=args.master,
            explain=args.explain,
            resolve=args.resolve,
        )
    return render_lookup(result, args)


def _check_dataset_format(args: argparse.Namespace, dataset: rmqarrow.Store) -> None:
    """Refuse a ``--dataset`` of another format than the store's: it would answer its
    own format's nothing (0 items, exit 0) for a key the store holds."""
    with rmqarrow.open(args.store, geometry=geometry_option(args), **open_options(args)) as store:
        fmt = store.format
    if dataset.format != fmt:
        dataset.close()
        raise UsageError(
            f"--dataset {args.dataset}: a dataset of the {dataset.format} format, but "
            f"{args.store} holds the {fmt} format; pass the dataset `rmqarrow export "
            f"{args.store}` wrote"
        )
