"""The command line's options for RocketMQ's RocksDB message index (RIP-82): which index
of a broker store root to open (``--index``), the broker's query limits, and ``build
--index rocksdb``.  The other commands open a RocksDB index through :func:`rmqarrow.open`
like any store and render its typed results; the database is always read through a
read-only shadow: the broker's directory is never written or locked."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import rmqarrow.commitlog
import rmqarrow.rocksdb
from rmqarrow.cli._output import print_document, print_kv
from rmqarrow.errors import UsageError
from rmqarrow.format.broker_config import DEFAULT_MAX_MSGS_NUM_BATCH, DEFAULT_MAX_QUERY_DAYS

__all__ = [
    "add_index_option",
    "add_rocksdb_options",
    "open_options",
    "rocksdb_build",
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
    result = rmqarrow.rocksdb.build_from_commitlog(
        rmqarrow.commitlog.require_commitlog(args.from_commitlog), dest, force=args.force
    )
    doc = result.to_dict()
    if args.json:
        print_document("build.rocksdb", doc)
    else:
        print_kv(doc)
    return 0
