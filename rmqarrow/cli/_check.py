"""``rmqarrow check``: fsck of a store (see :mod:`rmqarrow.verify.fsck`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import add_geometry_options, print_json, print_table
from rmqarrow.format.detect import require_commitlog, require_index_store

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
    p.add_argument("store", type=Path,
                   help="store/index directory, one index file, or a broker store root")
    p.add_argument("--commitlog", type=Path, metavar="DIR",
                   help="the broker's store/commitlog: also find entries pointing at no "
                        "message (a broker store root's own commitlog/ is used by default)")
    add_geometry_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from rmqarrow.cli._tiered import is_tiered_input, tiered_check
    from rmqarrow.verify.fsck import check_store, damage_summary

    if is_tiered_input(args.store):  # RocketMQ's tiered-storage index (issue 16)
        return tiered_check(args.store, args)

    say: list[str] = []
    target = require_index_store(args.store, say=say)
    commitlog = args.commitlog
    if commitlog is None and target.kind == "broker_root" and target.commitlog_dir is not None:
        commitlog = target.commitlog_dir
        say.append(f"note: checking entries against the CommitLog in {commitlog}")
    if commitlog is not None:
        commitlog = require_commitlog(commitlog, say=say)
    for line in dict.fromkeys(say):
        print(line, file=sys.stderr)
    health, chains = check_store(target.index_path, args.hash_slot_num, args.index_num,
                                 commitlog=commitlog)
    g = health.geometry
    if args.json:
        print_json({
            "store": str(target.index_path),
            "ok": health.ok,
            "geometry": {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num,
                         "file_size": g.file_size, "note": health.note},
            "commitlog": None if commitlog is None else str(commitlog),
            "files": [{**fh.to_dict(),
                       "chains": chains[fh.name].to_dict() if fh.name in chains else None}
                      for fh in health.files],
        })
        return 0 if health.ok else 1
    if health.note:
        print(f"note: {health.note}", file=sys.stderr)
    rows = []
    for fh in health.files:
        c = chains.get(fh.name)
        rows.append([fh.name, fh.status, fh.size,
                     fh.header.get("index_count", 0) - 1 if fh.header else None,
                     None if c is None else c.off_chain + c.bad_heads + c.out_of_range
                     + c.forward_links + c.negative_time_diffs,
                     None if c is None or commitlog is None else c.dangling])
    print_table(rows, ["name", "status", "size", "entries", "chain_problems", "dangling"],
                grouped=("entries", "chain_problems", "dangling"))
    print(f"\ngeometry {g} ({len(health.files)} files)")
    for fh in health.files:
        if fh.ok and fh.detail:  # a write past the header: not damage
            print(f"note: {fh.path}: {fh.detail}")
    for fh in health.damaged:
        print(f"damaged: {fh.describe()}")
        c = chains.get(fh.name)
        for example in c.examples[:3] if c is not None else []:
            print(f"  e.g. {example}")
    if not health.files:
        print(f"{target.index_path}: no index files", file=sys.stderr)
        return 1
    print("healthy" if health.ok else damage_summary(health.damaged, len(health.files)))
    return 0 if health.ok else 1
