"""``rmqarrow info``: every index file of a store with its header, fill and health."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow.cli._output import (
    add_geometry_options,
    print_json,
    print_kv,
    print_notes,
    print_table,
)
from rmqarrow.errors import UsageError
from rmqarrow.format.detect import require_index_store
from rmqarrow.format.times import format_time

if TYPE_CHECKING:
    from rmqarrow.index.health import StoreHealth

__all__ = ['refuse_unknown_geometry', 'register']


def register(sub: Any) -> None:
    info = sub.add_parser(
        "info", help="header fields, geometry, fill and health of index files",
        description="One line per index file with its status (ok, truncated, wrong geometry, "
                    "bad header, damaged chains); exit status 1 when any file is damaged.")
    info.add_argument("path", type=Path,
                      help="an index file, a store/index directory or a broker store root")
    add_geometry_options(info)
    info.add_argument("--no-chain-check", action="store_true",
                      help="skip reading every entry for chain damage (sizes and headers only)")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)



def _iso(ms: int) -> str:
    return format_time(ms)


def file_info(path: Path, hash_slot_num: int | None, index_num: int | None) -> dict[str, Any]:
    from rmqarrow.format.layout import resolve_geometry
    from rmqarrow.index.indexfile import IndexFile

    geometry, note = resolve_geometry(path.stat().st_size, hash_slot_num, index_num)
    with IndexFile.open(path, geometry.hash_slot_num, geometry.index_num) as f:
        return {
            "file": str(path),
            "name": f.name,
            "status": "ok",
            "hash_slot_num": geometry.hash_slot_num,
            "index_num": geometry.index_num,
            "file_size": geometry.file_size,
            "begin_timestamp": f.begin_timestamp,
            "begin_time": _iso(f.begin_timestamp),
            "end_timestamp": f.end_timestamp,
            "end_time": _iso(f.end_timestamp),
            "begin_phy_offset": f.begin_phy_offset,
            "end_phy_offset": f.end_phy_offset,
            "hash_slot_count": f.hash_slot_count,
            "index_count": f.index_count,
            "entries": f.entry_count,
            "fill_ratio": round(f.entry_count / max(f.capacity, 1), 6),
            "slot_fill_ratio": round(f.hash_slot_count / geometry.hash_slot_num, 6),
            "write_full": f.is_write_full(),
            "geometry_note": note,
        }


def store_health(path: Path, args: argparse.Namespace, chains: bool) -> StoreHealth:
    """Each file's status (chains too unless ``chains`` is False)."""
    if chains:
        from rmqarrow.verify.fsck import check_store

        return check_store(path, args.hash_slot_num, args.index_num)[0]
    from rmqarrow.index.health import scan_store

    return scan_store(path, args.hash_slot_num, args.index_num)


def refuse_unknown_geometry(health: StoreHealth) -> None:
    """When no file fits the geometry and all share one size, the counts are what is wrong:
    say so in one line instead of calling every file damaged."""
    from rmqarrow.errors import GeometryError
    from rmqarrow.format.layout import Geometry

    files = health.files
    if not files or health.healthy or any(f.status != "wrong geometry" for f in files):
        return
    sizes = {f.size for f in files}
    if len(sizes) != 1:
        return
    size, g = sizes.pop(), health.geometry
    fitted = Geometry.for_size_default_ratio(size)
    hint = (f"--hash-slot-num {fitted.hash_slot_num} --index-num {fitted.index_num} fits"
            if fitted else "pass the --hash-slot-num and --index-num they were written with")
    raise GeometryError(
        f"{health.store}: expected {g.file_size} bytes per file for {g}, found {size} bytes "
        f"in all {len(files)} files; {hint}"
    )


def cmd_info(args: argparse.Namespace) -> int:
    from rmqarrow.cli._tiered import is_tiered_input, tiered_info

    if is_tiered_input(args.path):  # RocketMQ's tiered-storage index (issue 16)
        return tiered_info(args.path, args)
    say: list[str] = []
    target = require_index_store(args.path, say=say)
    print_notes(say)
    path = target.index_path
    health = store_health(path, args, not args.no_chain_check)
    g = health.geometry
    refuse_unknown_geometry(health)
    infos = []
    for fh in health.files:
        if fh.ok or fh.status in ("damaged chains",):
            info = file_info(fh.path, g.hash_slot_num, g.index_num)
            info["status"], info["detail"] = fh.status, fh.detail
        else:
            info = {"file": str(fh.path), "name": fh.name, "status": fh.status,
                    "detail": fh.detail, "file_size": fh.size, **fh.header,
                    "entries": None, "geometry_note": None}
            for k in ("begin_timestamp", "end_timestamp"):
                if k in fh.header:
                    info[k.replace("timestamp", "time")] = _iso(fh.header[k])
        info["skipped_by_readers"] = fh.skipped_by_readers
        infos.append(info)
    status = 0 if health.ok else 1
    if args.json:
        print_json(infos[0] if target.kind == "index_file" else infos)  # each with "status"
        return status
    if health.note:
        print(f"note: {health.note}", file=sys.stderr)
    if target.kind == "index_file":
        print_kv({k: v for k, v in infos[0].items() if k != "geometry_note"})
        return status
    if not infos:
        raise UsageError(f"{path}: no index files in the store")
    columns = ["name", "status", "entries", "fill_ratio", "begin_time", "end_time",
               "begin_phy_offset", "end_phy_offset"]
    print_table([[i.get(c) for c in columns] for i in infos], columns, grouped=("entries",))
    total = sum(i["entries"] or 0 for i in infos)
    print(f"\n{len(infos)} files, {total:,} entries, geometry {g.hash_slot_num:,} slots x "
          f"{g.index_num:,}")
    for fh in health.files:
        if fh.ok and fh.detail:  # a write past the header: not damage
            print(f"note: {fh.path}: {fh.detail}")
    for fh in health.damaged:
        print(f"damaged: {fh.describe()}")
    if health.damaged:
        from rmqarrow.verify.fsck import damage_summary

        print(f"\n{damage_summary(health.damaged, len(infos))}\n`rmqarrow check` tells more")
    return status
