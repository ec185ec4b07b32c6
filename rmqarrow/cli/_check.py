"""``rmqarrow check``: fsck of a store (see :mod:`rmqarrow.verify.fsck`)."""

from __future__ import annotations

import argparse
from typing import Any

import rmqarrow
from rmqarrow.cli._output import add_geometry_options, geometry_option, path_arg
from rmqarrow.cli._rocksdb import add_index_option, open_options
from rmqarrow.cli._show import render

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
        "store",
        type=path_arg,
        help="store/index directory, one index file, a broker store root, tiered index "
        "files, a RocksDB index, or an exported dataset (its parts against its manifest)",
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
    store = rmqarrow.open(args.store, geometry=geometry_option(args), **open_options(args))
    with store:
        result = store.check(commitlog=args.commitlog)
    return render(result, args)
