"""``rmqarrow check``: fsck of a store (see :mod:`rmqarrow.verify.fsck`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

import rmqarrow
from rmqarrow.cli._output import add_geometry_options, path_arg, print_document, print_table
from rmqarrow.cli._rocksdb import add_index_option, open_options, rocksdb_check
from rmqarrow.errors import UsageError
from rmqarrow.verify import damage_summary

if TYPE_CHECKING:
    from rmqarrow.store import StoreCheck
    from rmqarrow.tiered import TieredCheck

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="fsck: every index file's size, header and chains (exit 1 when any is damaged)",
        description=(
            "Check every index file of a store: size against the store geometry (fitted from "
            "the healthy files), header sanity (counts, times, offsets), chain damage (entries "
            "off their slot's chain, out-of-range pointers, forward links, negative time "
            "diffs) and, with --commitlog, entries pointing at no message. Exit status 0 when "
            "every file is healthy, 1 otherwise."
        ),
    )
    p.add_argument(
        "store", type=path_arg, help="store/index directory, one index file, or a broker store root"
    )
    p.add_argument(
        "--commitlog",
        type=path_arg,
        metavar="DIR",
        help="the broker's store/commitlog: also find entries pointing at no "
        "message (a broker store root's own commitlog/ is used by default)",
    )
    add_geometry_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_index_option(p)
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    store = rmqarrow.open(
        args.store, hash_slot_num=args.hash_slot_num, index_num=args.index_num, **open_options(args)
    )
    with store:
        if store.format == "rocksdb":
            return rocksdb_check(store, args)
        if isinstance(store, rmqarrow.store.TieredStore):
            return _print_tiered(store.check(), args)
        if not isinstance(store, rmqarrow.store.IndexStore):
            raise UsageError(f"{args.store}: {store.description}")
        result = store.check(commitlog=args.commitlog)
    return _print_check(result, args)


def _print_check(result: StoreCheck, args: argparse.Namespace) -> int:
    health, chains, commitlog = result.health, result.chains, result.commitlog
    g = health.geometry
    if args.json:
        print_document("check", result.to_dict())
        return 0 if health.ok else 1
    if health.note:
        print(f"note: {health.note}", file=sys.stderr)
    rows = []
    for fh in health.files:
        c = chains.get(fh.name)
        rows.append(
            [
                fh.name,
                fh.status,
                fh.size,
                fh.header.get("index_count", 0) - 1 if fh.header else None,
                None
                if c is None
                else c.off_chain
                + c.bad_heads
                + c.out_of_range
                + c.forward_links
                + c.negative_time_diffs,
                None if c is None else c.dangling,
            ]
        )
    columns = ["name", "status", "size", "entries", "chain_problems", "dangling"]
    if commitlog is None:  # not counted: no column of blanks (null in --json)
        rows, columns = [r[:-1] for r in rows], columns[:-1]
    print_table(rows, columns, grouped=("entries", "chain_problems", "dangling"))
    print(f"\ngeometry {g} ({len(health.files)} files)")
    if commitlog is None:
        print("dangling offsets: not checked (no CommitLog; give --commitlog DIR)")
    for fh in health.files:
        if fh.ok and fh.detail:  # a write past the header: not damage
            print(f"note: {fh.path}: {fh.detail}")
    for fh in health.damaged:
        print(f"damaged: {fh.describe()}")
        c = chains.get(fh.name)
        for example in c.examples[:3] if c is not None else []:
            print(f"  e.g. {example}")
    if not health.files:
        print(f"{result.store}: no index files", file=sys.stderr)
        return 1
    if health.damaged:
        print(damage_summary(health.damaged, len(health.files)))
    for fh in health.misordered:
        print(f"misordered: {fh.describe()}")
    for fh in health.blocking:
        print(f"blocking: {fh.describe()}")
    if health.ok:
        print("healthy")
    return 0 if health.ok else 1


def _print_tiered(result: TieredCheck, args: argparse.Namespace) -> int:
    if args.json:
        print_document("check.tiered", result.to_dict())
        return 0 if result.ok else 1
    for f in result.files:
        print(f"{'ok     ' if f.ok else 'PROBLEM'}  {f.path}")
        for problem in f.problems:
            print(f"         {problem}")
        for note in f.notes:
            print(f"note: {f.path}: {note}", file=sys.stderr)
    print(
        f"\n{len(result.files)} tiered files checked: {'all ok' if result.ok else 'problems found'}"
    )
    return 0 if result.ok else 1
