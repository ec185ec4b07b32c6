"""``rmqarrow query``: key lookups through any engine, explained, resolved against the CommitLog."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import rmqarrow
from rmqarrow.cli._output import (
    add_as_of_option,
    add_geometry_options,
    add_json_options,
    add_spark_options,
    dataset_arg,
    path_arg,
    print_document,
    print_table,
)
from rmqarrow.cli._rocksdb import (
    add_index_option,
    add_rocksdb_options,
    open_options,
    rocksdb_query,
)
from rmqarrow.cli._tiered import tiered_query
from rmqarrow.commitlog import format_message
from rmqarrow.engines import ENGINES
from rmqarrow.errors import UsageError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query, escape_text
from rmqarrow.format.query_file import read_query_file
from rmqarrow.format.records import TAG_INDEX_TYPE, query_index_key, tag_query_note
from rmqarrow.format.times import TIME_HELP, check_range, parse_time
from rmqarrow.store import DatasetStore, IndexStore

if TYPE_CHECKING:
    from rmqarrow.store import IndexStore

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
    query.add_argument("--engine", choices=ENGINES, default="native")
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


def _queries_from_args(args: argparse.Namespace) -> tuple[list[Query], bool]:
    begin = parse_time(args.begin, "--begin")
    end = parse_time(args.end, "--end")
    check_range(begin, end, ("--begin", "--end"))
    if args.queries is not None:
        queries = read_query_file(
            args.queries, max_num=args.max_num, begin=begin, end=end, escaped=args.escaped
        )
        return [_typed(q, None, args.index_type) for q in queries], True
    if args.key == "":
        raise UsageError("--key is empty")
    return [_typed(Query(args.key, args.max_num, begin, end), args.topic, args.index_type)], False


def _topic_and_key(topic: str | None, key: str) -> tuple[str, str, bool]:
    """The topic and key a query names: ``--topic`` and ``--key``, or a full key TOPIC#KEY
    split at its first '#' (topics hold none); and whether a topic was found at all."""
    if topic is not None:
        return topic, key, True
    topic, sep, rest = key.partition("#")
    return topic, rest, bool(sep)


def _typed(q: Query, topic: str | None, index_type: str | None) -> Query:
    """``q`` with its key made the index key of ``index_type``."""
    if topic is None and index_type is None:
        return q
    topic, key, found = _topic_and_key(topic, q.key)
    if not found:
        raise UsageError(
            f"--type {index_type}: {q.key!r} has no '#'; give --topic TOPIC or the key as TOPIC#KEY"
        )
    return Query(query_index_key(topic, key, index_type), q.max_num, q.begin, q.end)


def _checked_options(args: argparse.Namespace) -> None:
    if args.topic is not None and args.queries is not None:
        raise UsageError("--topic goes with --key; --queries lines hold full index keys")
    if args.max_num < 0:
        raise UsageError(f"--max-num must be >= 0, got {args.max_num}")
    if args.explain and args.engine != "native":
        raise UsageError("--explain traces the native lookup; drop --engine")
    if args.resolve is not None and args.queries is not None:
        raise UsageError("--resolve works with --key, not --queries")
    if args.engine == "native" and args.dataset is not None:
        raise UsageError("a dataset is for the duckdb and spark engines; native reads the store")


def cmd_query(args: argparse.Namespace) -> int:
    if args.topic is not None and not args.topic.strip():
        # an unset shell variable, most likely: every kind would look up "#KEY" and find nothing
        raise UsageError(
            f"--topic is empty (got {args.topic!r}); give the message's topic, or drop "
            "--topic and pass --key 'TOPIC#KEY'"
        )
    source = args.dataset if args.dataset is not None else args.store
    store = rmqarrow.open(
        source,
        hash_slot_num=args.hash_slot_num,
        index_num=args.index_num,
        strict=args.strict,
        **open_options(args),
        as_of=args.as_of,
    )
    with store:
        if store.format == "rocksdb":
            return rocksdb_query(store, args)
        if args.last_key is not None or (args.index_type is not None and store.format == "tiered"):
            raise UsageError(
                "--last-key is for the RocksDB index (--index rocksdb); --type for the RocksDB "
                "index and index files"
            )
        if store.format == "tiered":
            return tiered_query(store, args)
        _checked_options(args)
        if not isinstance(store, IndexStore | DatasetStore) or (
            isinstance(store, DatasetStore) and args.engine == "native"
        ):
            raise UsageError(f"{source}: {store.description}")
        queries, batch = _queries_from_args(args)
        answers = store.answers(queries, engine=args.engine, master=args.master)
        explained: list[str] = []
        if args.explain and isinstance(store, IndexStore):
            explained = store.explain_queries(queries, commitlog=args.resolve)
        if args.resolve is not None:
            if not isinstance(store, IndexStore):
                raise UsageError("--resolve reads hits back from the CommitLog of a store")
            status = _print_resolved(store, args, queries[0], answers[0])
            _print_explained(explained, args.json)
            return status
    if batch:
        if args.json:
            rows = [
                {
                    "key": q.key,
                    "max_num": q.max_num,
                    "begin": q.begin,
                    "end": q.end,
                    "phy_offsets": a,
                }
                for q, a in zip(queries, answers, strict=True)
            ]
            print_document("query.batch", {"answers": rows}, args, rows="answers")
            _print_explained(explained, True)
        else:
            for q, a in zip(queries, answers, strict=True):  # keys escaped: one line each
                sys.stdout.write(f"{escape_text(q.key)}\t{','.join(str(o) for o in a)}\n")
            _print_explained(explained, False)
        _topic_hint(args, [q for q, a in zip(queries, answers, strict=True) if not a])
        return 0
    q = queries[0]
    if args.json:
        doc: dict[str, Any] = {
            "key": q.key,
            "max_num": q.max_num,
            "begin": q.begin,
            "end": q.end,
            "phy_offsets": answers[0],
        }
        if args.explain:
            doc["explain"] = explained
        print_document("query", doc, args)
    else:
        print_table([[o] for o in answers[0]], ["phy_offset"])
        print(f"\n{len(answers[0])} offsets for {q.key!r}")
        _print_explained(explained, False)
    if not answers[0]:
        _topic_hint(args, [q])
    return 0


def _print_explained(lines: list[str], json_out: bool) -> None:
    """Explanations go after the answer; with --json (already printed) to stderr."""
    if not lines:
        return
    out = sys.stderr if json_out else sys.stdout
    print("\nexplain:", file=out)
    for line in lines:
        print(f"  {line}", file=out)


def _topic_hint(args: argparse.Namespace, empty: list[Query]) -> None:
    if empty and getattr(args, "index_type", None) == TAG_INDEX_TYPE:
        print(f"note: {tag_query_note(empty[0].key)}", file=sys.stderr)
    if getattr(args, "topic", None) is not None and args.key is not None and "#" in args.key:
        print(
            f"hint: --key {args.key!r} already holds a '#', and --topic made the index key "
            f"{args.topic}#{args.key!r}; pass either --key 'TOPIC#KEY' or --topic with the "
            "bare key",
            file=sys.stderr,
        )
        return
    bare = [q.key for q in empty if "#" not in q.key]
    if bare and getattr(args, "topic", None) is None:
        example = bare[0]
        print(
            f"hint: {example!r} has no '#': RocketMQ indexes TOPIC#KEY, so pass --topic "
            f"TOPIC (or --key 'TOPIC#{example}')"
            + (f"; {len(bare)} such keys in --queries" if len(bare) > 1 else ""),
            file=sys.stderr,
        )


def _print_resolved(
    store: IndexStore, args: argparse.Namespace, q: Query, offsets: list[int]
) -> int:
    # the key as given (for --type T, the tags), not the index key looked up
    topic, key, _ = _topic_and_key(args.topic, args.key)
    # a key repeated in KEYS is indexed once per occurrence: each message is read once
    distinct = list(dict.fromkeys(offsets))
    result = store.resolve(topic, key, distinct, commitlog=args.resolve, index_type=args.index_type)
    if args.json:
        print_document(
            "query.resolved",
            {
                "key": q.key,
                "hits": len(offsets),
                "distinct_offsets": len(distinct),
                "phy_offsets": [m.physical_offset for m in result.messages],
                "dropped_false_positives": result.dropped,
                "dropped_offsets": list(result.dropped_offsets),
                "unreadable": [{"phy_offset": o, "error": e} for o, e in result.unreadable],
            },
            args,
        )
        return 0
    print_table(
        [
            [m.physical_offset, m.topic, m.keys or "", m.uniq_key or "", m.tags or ""]
            for m in result.messages
        ],
        ["phy_offset", "topic", "keys", "uniq_key", "tags"],
    )
    print(
        f"\n{len(offsets)} index hits, {len(distinct)} distinct offsets: "
        f"{len(result.messages)} messages match exactly, "
        f"{result.dropped} hash false positives dropped"
        + (f", {len(result.unreadable)} unreadable" if result.unreadable else "")
    )
    for offset, error in result.unreadable:
        print(f"unreadable offset {offset}: {error}", file=sys.stderr)
    if args.show:
        for m in result.messages:
            print()
            print(format_message(m))
    return 0
