"""``rmqarrow info``: every index file of a store with its header, fill and health; what
an exported dataset holds and whether its store has moved on since."""

from __future__ import annotations

import argparse
from typing import Any

import rmqarrow
from rmqarrow.cli._output import (
    add_as_of_option,
    add_geometry_options,
    add_json_options,
    dataset_arg,
    geometry_option,
)
from rmqarrow.cli._rocksdb import add_index_option, add_rocksdb_options, open_options
from rmqarrow.cli._show import render

__all__ = ["register"]


def register(sub: Any) -> None:
    info = sub.add_parser(
        "info",
        help="header fields, geometry, fill and health of index files",
        description="One line per index file with its status (ok, truncated, wrong geometry, "
        "bad header, damaged chains); exit status 1 when any file is damaged.  On an exported "
        "dataset: its layout, rows and parts per table, the source it was exported from, and "
        "whether that store now has files or entries the dataset lacks.",
    )
    info.add_argument(
        "path",
        type=dataset_arg,
        help="an index file, a store/index directory, a broker store root, tiered index "
        "files, a RocksDB index or an exported dataset (local or s3://)",
    )
    add_geometry_options(info)
    info.add_argument(
        "--no-chain-check",
        action="store_true",
        help="skip reading every entry for chain damage (sizes and headers only)",
    )
    add_json_options(info)
    add_as_of_option(info, "an exported dataset")
    add_index_option(info)
    add_rocksdb_options(info)
    info.set_defaults(func=cmd_info)


def cmd_info(args: argparse.Namespace) -> int:
    store = rmqarrow.open(
        args.path,
        geometry=geometry_option(args),
        **open_options(args),
        as_of=args.as_of,
    )
    with store:
        result = store.info(chains=not args.no_chain_check)
    return render(result, args)
