"""One renderer per result type: what ``info``, ``check``, ``verify`` and ``stats`` print.

A command opens its path, asks the store one verb and hands the typed result to
:func:`render`, which prints it (text, or the ``--json`` document of its shape) and returns
the exit status.  Which kind answered is the result's type, never a test in the command.
"""

from __future__ import annotations

import argparse
import sys
from functools import singledispatch
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import (
    delta_layout,
    human_times,
    print_document,
    print_kv,
    print_table,
    print_versions,
)
from rmqarrow.errors import UsageError
from rmqarrow.format.times import format_time
from rmqarrow.rocksdb import RocksDBCheck
from rmqarrow.store import (
    DatasetCheck,
    DatasetInfo,
    RocksDBDatasetCheck,
    RocksDBDatasetInfo,
    RocksDBInfo,
    RocksDBStats,
    RocksDBVerify,
    StatsReport,
    StoreCheck,
    StoreInfo,
    TieredDatasetInfo,
    TieredInfo,
)
from rmqarrow.tiered import TieredCheck
from rmqarrow.verify import (
    TieredVerifyReport,
    VerifyReport,
    damage_summary,
    format_report,
    format_tiered_report,
)

__all__ = ["render"]


@singledispatch
def render(result: object, args: argparse.Namespace) -> int:
    """Print ``result`` as its command shows it; returns the exit status.  A result of a
    format registered by a program (no renderer of its own) shows its ``to_dict()``: its
    fields, or with ``--json`` the open shape ``info.format``."""
    to_dict = getattr(result, "to_dict", None)
    if not callable(to_dict) or args.command != "info":
        raise TypeError(f"no renderer for {type(result).__name__}")
    fields = to_dict()
    if args.json:
        print_document("info.format", fields, args)
    else:
        print_kv(fields)
    return 0 if getattr(result, "ok", True) else 1


# -- info ------------------------------------------------------------------------------------


@render.register
def _store_info(result: StoreInfo, args: argparse.Namespace) -> int:
    """``info`` on index files: one line per file (one file: its fields)."""
    health, infos = result.health, result.files
    status = 0 if result.ok else 1
    one_file = result.one_file
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
        raise UsageError(f"{result.store}: no index files in the store")
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


@render.register
def _tiered_info(result: TieredInfo, args: argparse.Namespace) -> int:
    """``info`` on a tiered file or folder."""
    infos = result.files
    one_file = result.one_file
    if args.json:
        if one_file:
            print_document("info.tiered-file", result.to_dict(), args)
        else:
            print_document("info.tiered-store", result.to_dict(), args, rows="files")
        return 0
    note = result.note
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


@render.register
def _dataset_info(info: DatasetInfo, args: argparse.Namespace) -> int:
    """``info`` on an exported dataset (manifest or Delta layout)."""
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


@render.register
def _tiered_dataset_info(result: TieredDatasetInfo, args: argparse.Namespace) -> int:
    """``info`` on an exported tiered dataset: its manifest."""
    manifest = result.to_dict()
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
    print_versions(result.versions)
    return 0


@render.register
def _rocksdb_info(result: RocksDBInfo, args: argparse.Namespace) -> int:
    """``info`` on a RocksDB index: its figures."""
    if args.json:
        print_document("info.rocksdb", result.to_dict(), args)
    else:
        print_kv(result.to_dict())
    return 0


@render.register
def _rocksdb_dataset_info(result: RocksDBDatasetInfo, args: argparse.Namespace) -> int:
    """``info`` on a RocksDB index's dataset: its manifest."""
    info = result.to_dict()
    if args.json:
        print_document("info.rocksdb", info, args)
        return 0
    shown = {k: v for k, v in info.items() if k not in ("delta", "versions", "parts")}
    print_kv({"layout": delta_layout(info), **shown})
    print_versions(result.versions)
    return 0


# -- check -----------------------------------------------------------------------------------


@render.register
def _store_check(result: StoreCheck, args: argparse.Namespace) -> int:
    """``check`` of index files: one line per file, then the damage."""
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


@render.register
def _tiered_check(result: TieredCheck, args: argparse.Namespace) -> int:
    """``check`` of tiered files: one line per file, its problems under it."""
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


def _print_dataset_check(result: DatasetCheck, shape: str, args: argparse.Namespace) -> int:
    if args.json:
        print_document(shape, result.to_dict())
    else:
        print("\n".join(result.problems) or "the dataset matches its manifest")
    return 0 if result.ok else 1


@render.register
def _dataset_check(result: DatasetCheck, args: argparse.Namespace) -> int:
    """``check`` of an exported dataset: its parts against the manifest."""
    return _print_dataset_check(result, "check.dataset", args)


@render.register
def _rocksdb_dataset_check(result: RocksDBDatasetCheck, args: argparse.Namespace) -> int:
    """``check`` of a RocksDB index's dataset: each table's rows against the manifest."""
    return _print_dataset_check(result, "check.rocksdb-dataset", args)


@render.register
def _rocksdb_check(check: RocksDBCheck, args: argparse.Namespace) -> int:
    """``check`` of a RocksDB index: its figures, then every finding."""
    if args.json:
        print_document("check.rocksdb", check.to_dict())
        return 0 if check.ok else 1
    doc = check.to_dict()
    figures = {
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
        )
    }
    span = check.commitlog_span
    # the hour buckets are compared with the CommitLog only when there is one to read
    figures["commitlog_span"] = (
        f"{span[0]} .. {span[1]}"
        if span
        else "not compared (no CommitLog beside the index: pass --commitlog DIR)"
    )
    print_kv(figures)
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


# -- verify ----------------------------------------------------------------------------------


@render.register
def _verify(report: VerifyReport, args: argparse.Namespace) -> int:
    """``verify`` of index files: the agreement table and every mismatch."""
    if args.json:
        print_document("verify", report.to_dict())
    else:
        format_report(report)
    return 0 if report.ok else 1


@render.register
def _tiered_verify(report: TieredVerifyReport, args: argparse.Namespace) -> int:
    """``verify`` of tiered files."""
    if args.json:
        print_document("verify.tiered", report.to_dict())
    else:
        format_tiered_report(report)
    return 0 if report.ok else 1


@render.register
def _rocksdb_verify(report: RocksDBVerify, args: argparse.Namespace) -> int:
    """``verify`` of a RocksDB index (or its dataset)."""
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


# -- stats -----------------------------------------------------------------------------------


@render.register
def _rocksdb_stats(result: RocksDBStats, args: argparse.Namespace) -> int:
    """``stats`` of a RocksDB index: each of its tables, by name."""
    if args.plot:
        raise UsageError(
            "--plot draws the IndexFile analyses; a RocksDB index's stats print as tables "
            "(drop the option, or use --json)"
        )
    if args.json:
        print_document("stats.rocksdb", result.to_dict())
        return 0
    for name, table in result.tables.items():
        print(f"\n{name}")
        print_table([list(r.values()) for r in table.to_pylist()], table.column_names)
    return 0


def _section(title: str, table: Any, epoch: bool) -> None:
    print(f"\n{title}")
    _print_rows([list(r.values()) for r in table.to_pylist()], table.column_names, epoch)


def _print_rows(rows: list[list[Any]], columns: list[str], epoch: bool) -> None:
    columns, rows = human_times(columns, rows, epoch)
    print_table(rows, columns)


def _print_fields(fields: dict[str, Any], epoch: bool) -> None:
    """A ``field value`` table, its times as :func:`human_times` shows them."""
    names, rows = human_times(list(fields), [list(fields.values())], epoch)
    print_kv(dict(zip(names, rows[0], strict=True)))


@render.register
def _stats(report: StatsReport, args: argparse.Namespace) -> int:
    """``stats`` of index files (or their dataset): the figures, charts and page asked
    for, and the index against its log."""
    result, log_check = report.figures, report.log_check
    charts = []
    if args.plot:
        from rmqarrow.converters.stats import write_charts

        charts = [str(p) for p in write_charts(result, args.plot, overwrite=args.overwrite)]
    if args.html:
        from rmqarrow.converters.stats import write_html

        page = write_html(
            result, args.html, check=report.check, log_check=log_check, overwrite=args.overwrite
        )
        charts.append(str(page))
    if args.json:
        doc = result.to_json()
        if charts:
            doc["charts"] = charts
        if log_check is not None:
            doc["log_check"] = log_check
        print_document("stats", doc)
        if result.time_range_note is not None:
            print(f"note: {result.time_range_note}", file=sys.stderr)
        report.raise_for_log()  # the figures are out: then the log asked for fails the run
        return 0
    epoch = args.epoch
    _print_fields(result.summary, epoch)
    _section("files: time coverage and fill", result.files, epoch)
    _section("slot load (slots holding k entries) vs Poisson", result.slot_load, epoch)
    _section(
        "chain depth (entries a lookup reads to reach each entry) vs Poisson",
        result.chain_depth,
        epoch,
    )
    _section(f"hottest key hashes (top {args.top})", result.hot_keys, epoch)
    print("\nduplicated offsets")
    print_kv(result.duplicates_summary)
    if result.duplicates.num_rows:
        _section(f"most duplicated offsets (top {args.top})", result.duplicates, epoch)
    print("\nchain consistency (all 0 in files RocketMQ wrote; the SQL lookup assumes it)")
    print_kv(result.chain_check)
    if result.time_range is not None:
        assert result.time_range_summary is not None and result.time_range_entries is not None
        t1, t2 = result.time_range
        span = f"{t1} and {t2} ms" if epoch else f"{format_time(t1)} and {format_time(t2)}"
        _section(f"indexed between {span}, per file", result.time_range_summary, epoch)
        _section(f"first {args.limit} entries in that range", result.time_range_entries, epoch)
    if result.time_range_note is not None:
        print(f"note: {result.time_range_note}", file=sys.stderr)
    if log_check is not None:
        _print_log_check(log_check, args.top, epoch)
    for c in charts:
        print(f"wrote {c}", file=sys.stderr)
    report.raise_for_log()
    return 0


def _print_log_check(check: dict[str, Any], top: int, epoch: bool) -> None:
    print("\nindex against the log (dangling entries, missing keys: 0 when built from it)")
    print_kv({k: v for k, v in check.items() if not k.endswith("_examples")})
    for name in ("dangling", "missing"):
        rows = check[f"{name}_examples"]
        if rows:
            print(f"\nfirst {top} {name}")
            _print_rows([list(r.values()) for r in rows], list(rows[0]), epoch)
