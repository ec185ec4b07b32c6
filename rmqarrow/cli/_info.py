"""``rmqarrow info``: every index file of a store with its header, fill and health; what
an exported dataset holds and whether its store has moved on since."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rmqarrow
from rmqarrow.cli._output import (
    add_as_of_option,
    add_geometry_options,
    add_json_options,
    dataset_arg,
    delta_layout,
    print_document,
    print_kv,
    print_table,
    print_versions,
)
from rmqarrow.cli._rocksdb import add_index_option, add_rocksdb_options, open_options, rocksdb_info
from rmqarrow.errors import UsageError
from rmqarrow.verify import damage_summary

if TYPE_CHECKING:
    from rmqarrow.store import DatasetInfo, IndexStore, StoreInfo, TieredStore

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
        hash_slot_num=args.hash_slot_num,
        index_num=args.index_num,
        **open_options(args),
        as_of=args.as_of,
    )
    with store:
        if store.format == "rocksdb":
            return rocksdb_info(store, args)
        if isinstance(store, rmqarrow.store.TieredStore):
            return _tiered_info(store, args)
        if isinstance(store, rmqarrow.store.DatasetStore):
            return _dataset_info(store.info(), args)
        if isinstance(store, rmqarrow.store.TieredDatasetStore):
            return _tiered_dataset_info(store.info(), args)
        if not isinstance(store, rmqarrow.store.IndexStore):
            raise UsageError(f"{args.path}: {store.description}")
        result = store.info(chains=not args.no_chain_check)
    return _print_info(store, result, args)


def _print_info(store: IndexStore, result: StoreInfo, args: argparse.Namespace) -> int:
    health, infos = result.health, result.files
    status = 0 if result.ok else 1
    one_file = store.kind == "index_file"
    if args.json:
        if one_file:
            print_document("info.index-file", infos[0], args)
        else:  # each with "status"
            print_document("info.index-store", {"files": infos}, args, rows="files")
        return status
    if health.note:
        print(f"note: {health.note}", file=sys.stderr)
    if one_file:
        print_kv({k: v for k, v in infos[0].items() if k != "geometry_note"})
        return status
    if not infos:
        raise UsageError(f"{store.index_path}: no index files in the store")
    g = health.geometry
    columns = [
        "name",
        "status",
        "entries",
        "fill_ratio",
        "begin_time",
        "end_time",
        "begin_phy_offset",
        "end_phy_offset",
    ]
    print_table([[i.get(c) for c in columns] for i in infos], columns, grouped=("entries",))
    total = sum(i["entries"] or 0 for i in infos)
    print(
        f"\n{len(infos)} files, {total:,} entries, geometry {g.hash_slot_num:,} slots x "
        f"{g.index_num:,}"
    )
    for fh in health.files:
        if fh.ok and fh.detail:  # a write past the header: not damage
            print(f"note: {fh.path}: {fh.detail}")
    for fh in health.damaged:
        print(f"damaged: {fh.describe()}")
    if health.damaged:
        print(f"\n{damage_summary(health.damaged, len(infos))}\n`rmqarrow check` tells more")
    for fh in health.blocking:
        print(f"blocking: {fh.describe()}")
    return status


def _tiered_info(store: TieredStore, args: argparse.Namespace) -> int:
    """``rmqarrow info`` on a tiered file or folder."""
    infos = store.info()
    one_file = store.path.is_file()
    if args.json:
        if one_file:
            print_document("info.tiered-file", infos[0], args)
        else:
            print_document("info.tiered-store", {"files": infos}, args, rows="files")
        return 0
    note = infos[0].get("geometry_note") if one_file else None
    if note:
        print(f"note: {note}", file=sys.stderr)
    if one_file:
        print_kv({k: v for k, v in infos[0].items() if k != "geometry_note"})
        return 0
    columns = ["file", "form", "items", "begin_time", "end_time"]
    print_table(
        [
            [
                Path(i["file"]).name,
                i["form"],
                i.get("item_count", i.get("items")),
                i["begin_time"],
                i["end_time"],
            ]
            for i in infos
        ],
        columns,
    )
    print(
        f"\n{len(infos)} tiered index files as RocketMQ queries them, newest first "
        "(an uploaded segment replaces the local file of its begin timestamp)"
    )
    return 0


def _dataset_info(info: DatasetInfo, args: argparse.Namespace) -> int:
    """``rmqarrow info`` on an exported dataset (manifest or Delta layout)."""
    if args.json:
        print_document("info.dataset", info.to_dict(), args)
        return 0
    layout = info.layout
    if info.delta_version is not None:
        versions = ", ".join(f"{t} v{v}" for t, v in sorted(info.table_versions.items()))
        layout = f"delta (pinned version {info.delta_version}: {versions})"
    files = info.source_files
    span = f"{files[0]['file_name']} .. {files[-1]['file_name']}" if files else "none"
    fields: dict[str, Any] = {
        "dataset": info.dataset,
        "layout": layout,
        "run": info.run,
        "source": info.source,
        "source files": f"{len(files):,} ({span}), {info.source_entries:,} entries",
        "created_at": info.created_at,
    }
    if info.updated_at is not None:
        fields["updated_at"] = info.updated_at
    if info.commitlog is not None:
        fields["commitlog"] = info.commitlog
    fields["writer"] = info.writer
    print_kv(fields)
    print()
    print_table(
        [[t, v["rows"], v["parts"]] for t, v in info.tables.items()],
        ["table", "rows", "parts"],
        grouped=("rows", "parts"),
    )
    print_versions(info.versions)  # what --as-of takes
    print()
    drift = info.drift
    if not drift.found:
        print(f"source not found: {drift.path} (moved, deleted or on another machine)")
    elif not drift.stale:
        print(f"up to date with its source: {drift.store_entries:,} entries in the store")
    else:
        lacks = [f"{drift.entries_missing:,} entries"]
        if drift.files_added:
            lacks.insert(0, f"{len(drift.files_added):,} file(s)")
        more = [
            f"{len(names):,} file(s) {what}"
            for names, what in ((drift.files_changed, "changed"), (drift.files_gone, "gone"))
            if names
        ]
        tail = f" ({', '.join(more)})" if more else ""
        print(f"stale: the source has {' and '.join(lacks)} the dataset lacks{tail}")
        for reason in drift.reasons:
            print(f"  {reason}")
    return 0


def _tiered_dataset_info(manifest: dict[str, Any], args: argparse.Namespace) -> int:
    """``rmqarrow info`` on an exported tiered dataset: its manifest."""
    if args.json:
        print_document("info.tiered-dataset", manifest, args)
        return 0
    source = manifest.get("source") or {}
    print_kv(
        {
            "layout": delta_layout(manifest),
            "source": source.get("path") if isinstance(source, dict) else source,
            "created_at": manifest.get("created_at"),
            "writer": manifest.get("writer"),
        }
    )
    print()
    print_table(
        [[t, v["rows"]] for t, v in manifest["tables"].items()],
        ["table", "rows"],
        grouped=("rows",),
    )
    print_versions(manifest.get("versions") or [])
    return 0
