"""The command line on RocketMQ's RocksDB message index (RIP-82).

``info``, ``check``, ``verify``, ``stats`` and ``build`` render a RocksDB index here when
:func:`rmqarrow.open` says the path is one (a RocksDB directory, a broker store root holding
``rocksdbstore/``, ``--index rocksdb`` on a root that also has ``index/``, or an exported
dataset of one); ``query`` and ``export`` render the library's RocksDB results in
:mod:`rmqarrow.cli._render_query`.  The database is always read through
a read-only shadow: the broker's directory is never written or locked.  Each function
takes the opened store and the parsed arguments and returns the exit status.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow.cli._output import (
    delta_layout,
    print_document,
    print_kv,
    print_table,
    print_versions,
)
from rmqarrow.commitlog import require_commitlog
from rmqarrow.engines import parse_engines
from rmqarrow.errors import UsageError
from rmqarrow.rocksdb import (
    DEFAULT_MAX_MSGS_NUM_BATCH,
    DEFAULT_MAX_QUERY_DAYS,
    build_from_commitlog,
    read_queries,
)
from rmqarrow.store import RocksDBDatasetStore, RocksDBStore, Store

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "add_index_option",
    "add_rocksdb_options",
    "open_options",
    "print_rocksdb_stats",
    "rocksdb_build",
    "rocksdb_check",
    "rocksdb_info",
    "rocksdb_verify",
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


def rocksdb_info(store: Store, args: argparse.Namespace) -> int:
    """``rmqarrow info`` on a RocksDB index (or its dataset's manifest)."""
    info = _rocksdb(store).info()
    if args.json:
        print_document("info.rocksdb", info, args)
    elif isinstance(store, RocksDBDatasetStore):
        shown = {k: v for k, v in info.items() if k not in ("delta", "versions", "parts")}
        print_kv({"layout": delta_layout(info), **shown})
        print_versions(info.get("versions") or [])
    else:
        print_kv(info)
    return 0


def rocksdb_check(store: Store, args: argparse.Namespace) -> int:
    s = _rocksdb(store)
    if not isinstance(s, RocksDBStore):
        result = s.check()
        if args.json:
            print_document("check.rocksdb-dataset", result.to_dict())
        else:
            print("\n".join(result.problems) or "the dataset matches its manifest")
        return 0 if result.ok else 1
    check = s.check(commitlog=args.commitlog)
    if args.json:
        print_document("check.rocksdb", check.to_dict())
        return 0 if check.ok else 1
    doc = check.to_dict()
    print_kv(
        {
            k: doc[k]
            for k in (
                "path",
                "records",
                "hours",
                "first_hour",
                "last_hour",
                "max_offset",
                "last_offset_py",
                "max_store_time",
                "last_store_timestamp",
                "commitlog_span",
            )
        }
    )
    if check.findings:
        print()
        print_table(
            [
                [f.kind, "error" if f.error else "warning", f.key[:48], f.detail]
                for f in check.findings
            ],
            ["kind", "severity", "key", "detail"],
        )
        shown = len(check.findings)
        total = sum(check.counts.values())
        if total > shown:
            print(f"({total - shown} more findings: counts {check.counts})")
    print("\n" + ("healthy" if check.ok else f"problems: {check.counts}"))
    return 0 if check.ok else 1


def rocksdb_verify(store: Store, args: argparse.Namespace) -> int:
    s = _rocksdb(store)
    engines = parse_engines(args.engines)
    explicit = args.engines != "native,duckdb,spark"
    queries = read_queries(args.queries) if args.queries is not None else None
    report = s.verify(
        engines=engines,
        queries=queries,
        sample=args.sample,
        seed=args.seed,
        master=args.master,
        dataset=args.dataset,
        required=engines if explicit else [e for e in engines if e != "spark"],
    )
    if args.json:
        print_document("verify.rocksdb", report.to_dict())
        return 0 if report.ok else 1
    print_table(
        [[e, report.queries, n, report.queries - n] for e, n in report.agree.items()],
        ["engine", "queries", "agree", "differ"],
    )
    for name, why in report.skipped.items():
        print(f"skipped {name}: {why}")
    for m in report.mismatches[:20]:
        print(
            f"mismatch {m['engine']} query {m['query']} ({m['topic']!r}, {m['key']!r}): "
            f"{m['got']} instead of {m['expected']}"
        )
    print(
        "\n"
        + (
            "every engine agrees with " + report.reference
            if report.ok
            else f"{len(report.mismatches)} answers differ"
        )
    )
    return 0 if report.ok else 1


def print_rocksdb_stats(sections: dict[str, pa.Table], args: argparse.Namespace) -> int:
    """``rmqarrow stats`` of a RocksDB index: each of its tables, by name."""
    if args.json:
        print_document("stats.rocksdb", {name: t.to_pylist() for name, t in sections.items()})
        return 0
    for name, table in sections.items():
        print(f"\n{name}")
        print_table([list(r.values()) for r in table.to_pylist()], table.column_names)
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
