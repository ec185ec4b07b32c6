"""The command line on RocketMQ's RocksDB message index (RIP-82).

``query``, ``export``, ``sql`` and ``build`` render a RocksDB index here when
:func:`rmqarrow.open` says the path is one (a RocksDB
directory, a broker store root holding ``rocksdbstore/``, ``--index rocksdb`` on a root that
also has ``index/``, or an exported dataset of one).  The database is always read through
a read-only shadow: the broker's directory is never written or locked.  Each function
takes the opened store and the parsed arguments and returns the exit status.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow.cli._output import (
    print_document,
    print_kv,
    print_table,
)
from rmqarrow.commitlog import require_commitlog
from rmqarrow.errors import UsageError
from rmqarrow.format.times import parse_time
from rmqarrow.rocksdb import (
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_MAX_QUERY_DAYS,
    QueryOffsetResult,
    RocksDBQuery,
    build_from_commitlog,
    read_queries,
)
from rmqarrow.store import RocksDBDatasetStore, RocksDBStore, Store

if TYPE_CHECKING:
    pass

__all__ = [
    "add_index_option",
    "add_rocksdb_options",
    "open_options",
    "rocksdb_build",
    "rocksdb_export",
    "rocksdb_query",
]


def add_index_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--index",
        choices=("indexfile", "rocksdb"),
        default=None,
        help="which index of a broker store root to read: its IndexFiles (index/, "
        "the default when present) or its RocksDB message index "
        "(rocksdbstore/, RIP-82)",
    )


def add_rocksdb_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-msgs-num-batch",
        type=int,
        default=None,
        metavar="N",
        help="RocksDB index: the broker's maxMsgsNumBatch, which caps --max-num "
        f"(default {DEFAULT_MAX_MSGS_NUM_BATCH})",
    )
    p.add_argument(
        "--max-query-days",
        type=int,
        default=None,
        metavar="DAYS",
        help="RocksDB index: the broker's maxRocksDBIndexQueryDays; longer windows "
        f"answer null (default {DEFAULT_MAX_QUERY_DAYS})",
    )


def open_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`rmqarrow.open` for the RocksDB options given."""
    out: dict[str, Any] = {"index": getattr(args, "index", None)}
    for name in ("max_msgs_num_batch", "max_query_days"):
        value = getattr(args, name, None)
        if value is not None:
            if value < 0:
                raise UsageError(f"--{name.replace('_', '-')} must be >= 0, got {value}")
            out[name] = value
    return out


def _rocksdb(store: Store) -> RocksDBStore | RocksDBDatasetStore:
    if not isinstance(store, RocksDBStore | RocksDBDatasetStore):
        raise UsageError(f"{store.path}: {store.description}")
    return store


def _answer_doc(q: RocksDBQuery, a: QueryOffsetResult | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "topic": q.topic,
        "key": q.key,
        "index_type": q.index_type,
        "max_num": q.max_num,
        "begin": q.begin,
        "end": q.end,
        "last_key": q.last_key,
    }
    if a is None:
        return {**doc, "result": "null", "phy_offsets": None}
    return {
        **doc,
        "result": "ok",
        "phy_offsets": a.phy_offsets,
        "last_update_timestamp": a.index_last_update_timestamp,
        "last_update_phy_offset": a.index_last_update_phy_offset,
    }


def _one_line(a: QueryOffsetResult | None) -> str:
    if a is None:
        return "null"
    offsets = "NULL" if a.phy_offsets is None else ",".join(str(o) for o in a.phy_offsets)
    return f"ok\t{offsets}\t{a.index_last_update_timestamp}\t{a.index_last_update_phy_offset}"


def _queries(args: argparse.Namespace) -> tuple[list[RocksDBQuery], bool]:
    if args.queries is not None:
        return read_queries(args.queries), True
    if args.topic is None:
        topic, sep, key = args.key.partition("#")
        if not sep:
            raise UsageError(
                "the RocksDB index is asked for a topic and a key: pass --topic "
                "with --key (or --key 'TOPIC#KEY')"
            )
    else:
        topic, key = args.topic, args.key
    begin, end = parse_time(args.begin, "--begin"), parse_time(args.end, "--end")
    index_type = getattr(args, "index_type", None)
    return [
        RocksDBQuery(
            topic, key, args.max_num, begin, end, index_type, getattr(args, "last_key", None)
        )
    ], False


def rocksdb_query(store: Store, args: argparse.Namespace) -> int:
    """``rmqarrow query`` on a RocksDB index: RocketMQ's ``queryOffset`` per query, with
    ``--explain`` saying why (a refused window, no such bucket, the type fallback, the cap)."""
    s = _rocksdb(store)
    if getattr(args, "resolve", None) is not None:
        raise UsageError(
            "--resolve is for IndexFiles; RocksDB answers hold exact topic and key "
            "matches already (byte prefixes: see --explain)"
        )
    if args.explain and (args.engine != "native" or not isinstance(s, RocksDBStore)):
        raise UsageError("--explain traces the native walk over the database; drop --engine")
    queries, batch = _queries(args)
    answers = s.answers(queries, engine=args.engine, master=args.master)
    explained = s.explain(queries[0]) if args.explain and isinstance(s, RocksDBStore) else []
    if args.json:
        docs = [_answer_doc(q, a) for q, a in zip(queries, answers, strict=True)]
        if args.explain and docs:
            docs[0]["explain"] = explained
        if batch:
            print_document("query.rocksdb-batch", {"answers": docs}, args, rows="answers")
        else:
            print_document("query.rocksdb", docs[0], args)
        return 0
    if batch:
        for i, a in enumerate(answers):
            sys.stdout.write(f"{i}\t{_one_line(a)}\n")
        return 0
    q, a = queries[0], answers[0]
    if a is None:
        print(f"RocketMQ returns null for {q.topic!r} / {q.key!r} (see --explain)")
    elif a.phy_offsets is None:
        print(
            f"RocketMQ returns a null offset list for {q.topic!r} / {q.key!r} (a lastKey "
            "it cannot page from)"
        )
    else:
        print_table([[o] for o in a.phy_offsets], ["phy_offset"])
        print(
            f"\n{len(a.phy_offsets)} offsets for {q.topic!r} / {q.key!r}; index last "
            f"updated at store time {a.index_last_update_timestamp}, offset "
            f"{a.index_last_update_phy_offset}"
        )
    if explained:
        print("\nexplain:")
        for line in explained:
            print(f"  {line}")
    return 0


def rocksdb_export(store: Store, args: argparse.Namespace) -> int:
    s = _rocksdb(store)
    if not isinstance(s, RocksDBStore):
        raise UsageError(f"{s.path}: already an exported dataset")
    if args.engine != "local" or getattr(args, "commitlog", None):
        raise UsageError("a RocksDB index exports with the local engine, without --commitlog")
    start = time.perf_counter()
    manifest = s.export(args.out, overwrite=args.overwrite)
    seconds = time.perf_counter() - start
    records = manifest["tables"]["rocksdb_records"]["rows"]
    summary = {
        "dataset": args.out,
        "records": records,
        "bookkeeping": manifest["bookkeeping"],
        "seconds": round(seconds, 3),
        "records_per_second": round(records / seconds) if seconds else None,
    }
    if args.json:
        print_document("export.rocksdb", summary)
    else:
        print_kv(summary)
    return 0


def rocksdb_build(args: argparse.Namespace) -> int:
    """``rmqarrow build STORE --from-commitlog DIR --index rocksdb``: a new RocksDB index as
    the broker's ``buildIndex`` writes it (``STORE/rocksdbstore`` when STORE is a broker
    store root, else STORE itself)."""
    if args.from_commitlog is None:
        raise UsageError("--index rocksdb builds from --from-commitlog DIR")
    if args.engine != "local" or args.start_offset or args.start_timestamp or args.checkpoint:
        raise UsageError(
            "--index rocksdb rebuilds the whole CommitLog with the local engine "
            "(no --start-offset, --start-timestamp, --checkpoint or spark)"
        )
    dest = Path(args.store)
    if (dest / "commitlog").is_dir() or (dest / "index").is_dir():
        dest = dest / "rocksdbstore"
    result = build_from_commitlog(require_commitlog(args.from_commitlog), dest, force=args.force)
    doc = result.to_dict()
    if args.json:
        print_document("build.rocksdb", doc)
    else:
        print_kv(doc)
    return 0
