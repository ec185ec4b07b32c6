"""How ``query``, ``export`` and ``import`` print what the library returned: one renderer
per result type (the format's lookup, manifest or files), chosen by type, never by asking
the store which kind it is.  Each takes the result and the parsed arguments and returns
the exit status."""

from __future__ import annotations

import argparse
import sys
from functools import singledispatch
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import name_list, print_document, print_kv, print_table
from rmqarrow.commitlog import format_message
from rmqarrow.errors import TieredReadError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query, escape_text
from rmqarrow.format.records import TAG_INDEX_TYPE, tag_query_note
from rmqarrow.format.times import format_time
from rmqarrow.rocksdb import QueryOffsetResult, RocksDBQuery
from rmqarrow.store import (
    ImportedIndexFiles,
    ImportedTieredFiles,
    IndexManifest,
    OffsetLookup,
    ResolvedHits,
    RocksDBLookup,
    RocksDBManifest,
    TieredLookup,
    TieredManifest,
)
from rmqarrow.tiered import TieredQuery

__all__ = ["render_export", "render_import", "render_lookup"]


# -- query -------------------------------------------------------------------------------


@singledispatch
def render_lookup(result: object, args: argparse.Namespace) -> int:
    """``rmqarrow query``'s output for one :meth:`~rmqarrow.store.Store.lookup` result."""
    raise TypeError(f"no renderer for {type(result).__name__}")


@render_lookup.register
def _offsets(result: OffsetLookup, args: argparse.Namespace) -> int:
    """RocketMQ's IndexFiles: offsets per key (a TSV line each in a batch), explained,
    or read back from the CommitLog."""
    queries, answers, explained = result.queries, result.answers, result.explained
    if result.resolved is not None:
        _print_resolved(result.resolved, args)
        _print_explained(explained, args.json)
        return 0
    if result.batch:
        if args.json:
            rows = [
                {
                    "key": q.key,
                    "max_num": q.max_num,
                    "begin": q.begin,
                    "end": q.end,
                    "phy_offsets": a,
                }
                for q, a in zip(queries, answers, strict=True)
            ]
            print_document("query.batch", {"answers": rows}, args, rows="answers")
            _print_explained(explained, True)
        else:
            for q, a in zip(queries, answers, strict=True):  # keys escaped: one line each
                sys.stdout.write(f"{escape_text(q.key)}\t{','.join(str(o) for o in a)}\n")
            _print_explained(explained, False)
        _topic_hint(args, [q for q, a in zip(queries, answers, strict=True) if not a])
        return 0
    q = queries[0]
    if args.json:
        doc: dict[str, Any] = {
            "key": q.key,
            "max_num": q.max_num,
            "begin": q.begin,
            "end": q.end,
            "phy_offsets": answers[0],
        }
        if result.explain:
            doc["explain"] = explained
        print_document("query", doc, args)
    else:
        print_table([[o] for o in answers[0]], ["phy_offset"])
        print(f"\n{len(answers[0])} offsets for {q.key!r}")
        _print_explained(explained, False)
    if not answers[0]:
        _topic_hint(args, [q])
    return 0


def _print_explained(lines: list[str], json_out: bool) -> None:
    """Explanations go after the answer; with --json (already printed) to stderr."""
    if not lines:
        return
    out = sys.stderr if json_out else sys.stdout
    print("\nexplain:", file=out)
    for line in lines:
        print(f"  {line}", file=out)


def _topic_hint(args: argparse.Namespace, empty: list[Query]) -> None:
    if empty and getattr(args, "index_type", None) == TAG_INDEX_TYPE:
        print(f"note: {tag_query_note(empty[0].key)}", file=sys.stderr)
    if getattr(args, "topic", None) is not None and args.key is not None and "#" in args.key:
        print(
            f"hint: --key {args.key!r} already holds a '#', and --topic made the index key "
            f"{args.topic}#{args.key!r}; pass either --key 'TOPIC#KEY' or --topic with the "
            "bare key",
            file=sys.stderr,
        )
        return
    bare = [q.key for q in empty if "#" not in q.key]
    if bare and getattr(args, "topic", None) is None:
        example = bare[0]
        print(
            f"hint: {example!r} has no '#': RocketMQ indexes TOPIC#KEY, so pass --topic "
            f"TOPIC (or --key 'TOPIC#{example}')"
            + (f"; {len(bare)} such keys in --queries" if len(bare) > 1 else ""),
            file=sys.stderr,
        )


def _print_resolved(resolved: ResolvedHits, args: argparse.Namespace) -> None:
    result = resolved.result
    if args.json:
        print_document(
            "query.resolved",
            {
                "key": resolved.query.key,
                "hits": resolved.hits,
                "distinct_offsets": resolved.distinct,
                "phy_offsets": [m.physical_offset for m in result.messages],
                "dropped_false_positives": result.dropped,
                "dropped_offsets": list(result.dropped_offsets),
                "unreadable": [{"phy_offset": o, "error": e} for o, e in result.unreadable],
            },
            args,
        )
        return
    print_table(
        [
            [m.physical_offset, m.topic, m.keys or "", m.uniq_key or "", m.tags or ""]
            for m in result.messages
        ],
        ["phy_offset", "topic", "keys", "uniq_key", "tags"],
    )
    print(
        f"\n{resolved.hits} index hits, {resolved.distinct} distinct offsets: "
        f"{len(result.messages)} messages match exactly, "
        f"{result.dropped} hash false positives dropped"
        + (f", {len(result.unreadable)} unreadable" if result.unreadable else "")
    )
    for offset, error in result.unreadable:
        print(f"unreadable offset {offset}: {error}", file=sys.stderr)
    if args.show:
        for m in result.messages:
            print()
            print(format_message(m))


@render_lookup.register
def _items(result: TieredLookup, args: argparse.Namespace) -> int:
    """Tiered index files: items per query (a line each in a batch), with RocketMQ's own
    answer next to an exact one and what changes once a file is uploaded."""
    queries, answers, exact = result.queries, result.answers, result.exact
    if result.batch:
        rows = [a if isinstance(a, TieredReadError) else [_item_row(i) for i in a] for a in answers]
        if args.json:
            docs = [
                _tiered_doc(
                    q, exact, {"error": str(r)} if isinstance(r, TieredReadError) else {"items": r}
                )
                for q, r in zip(queries, rows, strict=True)
            ]
            print_document("query.tiered-batch", {"answers": docs}, args, rows="answers")
        else:
            for i, a in enumerate(answers):
                text = (
                    f"error: {a}"
                    if isinstance(a, TieredReadError)
                    else " ".join(f"{x.queue_id}:{x.offset}" for x in a)
                )
                print(f"{i}\t{text}")
        return 0
    answer, q = answers[0], queries[0]
    assert not isinstance(answer, TieredReadError)  # one query's failure is raised
    begin, rocketmq, note = result.begin_timestamp, result.rocketmq, result.note
    if args.json:
        out = _tiered_doc(q, exact, {"items": [_item_row(i, begin) for i in answer]})
        if rocketmq is not None:
            out["rocketmq_items"] = None if isinstance(rocketmq, TieredReadError) else len(rocketmq)
        if note:
            out["note"] = note
        print_document("query.tiered", out, args)
        return 0
    cols = ["queue_id", "offset", "size", "time_diff", "topic_id", "hash_code", "next_index"]
    if begin is not None:
        cols.insert(3, "store_time")
    print_table([[_item_row(i, begin)[c] for c in cols] for i in answer], cols)
    print(f"\n{len(answer)} items for {q.topic}#{q.key!s}" + (" (exact)" if exact else ""))
    if rocketmq is not None:
        said = (
            "fails (TieredStoreException)"
            if isinstance(rocketmq, TieredReadError)
            else f"returns {len(rocketmq)}"
        )
        same = not isinstance(rocketmq, TieredReadError) and rocketmq == answer
        print(
            "RocketMQ's own lookup "
            + said
            + (
                " (the same items)"
                if same
                else " (its caps: 512 steps and maxCount + 1 on a local file, 1,024 items of a "
                "slot on an uploaded one)"
            ),
            file=sys.stderr,
        )
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _tiered_doc(q: TieredQuery, exact: bool, answer: dict[str, Any]) -> dict[str, Any]:
    """One answer of ``query`` on tiered files: the query, then its ``items`` (or, in a
    batch, the ``error`` reading them)."""
    head = {
        "topic": q.topic,
        "key": q.key,
        "max_count": q.max_count,
        "begin": q.begin,
        "end": q.end,
    }
    return {**head, "exact": exact, **answer}


def _item_row(item: Any, begin: int | None = None) -> dict[str, Any]:
    row = {
        "queue_id": item.queue_id,
        "offset": item.offset,
        "size": item.size,
        "time_diff": item.time_diff,
        "topic_id": item.topic_id,
        "hash_code": item.hash_code,
        "next_index": item.next_index,
    }
    if begin is not None:  # one file: its begin timestamp decodes the stored seconds
        row["store_timestamp"] = item.store_time(begin)
        row["store_time"] = format_time(row["store_timestamp"])
    return row


@render_lookup.register
def _query_offset(result: RocksDBLookup, args: argparse.Namespace) -> int:
    """The RocksDB index: RocketMQ's ``queryOffset`` per query (null, a null list, or the
    offsets with the index's last update), explained."""
    queries, answers, explained = result.queries, result.answers, result.explained
    if args.json:
        docs = [_rocksdb_doc(q, a) for q, a in zip(queries, answers, strict=True)]
        if result.explain and docs:
            docs[0]["explain"] = explained
        if result.batch:
            print_document("query.rocksdb-batch", {"answers": docs}, args, rows="answers")
        else:
            print_document("query.rocksdb", docs[0], args)
        return 0
    if result.batch:
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
        if not a.phy_offsets and (q.begin == 0 or q.end == JAVA_LONG_MAX):
            # RocketMQ's window without a time range ends now: an older index answers nothing
            print(
                f"searched the last {result.max_query_days} days up to now, as RocketMQ does "
                "without a time range (--max-query-days), and the index was last updated "
                f"{format_time(a.index_last_update_timestamp)}: pass --begin and --end to "
                "search older hours"
            )
    if explained:
        print("\nexplain:")
        for line in explained:
            print(f"  {line}")
    return 0


def _rocksdb_doc(q: RocksDBQuery, a: QueryOffsetResult | None) -> dict[str, Any]:
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


# -- export ------------------------------------------------------------------------------


@singledispatch
def render_export(manifest: object, args: argparse.Namespace, seconds: float) -> int:
    """``rmqarrow export``'s summary of the manifest :meth:`~rmqarrow.store.Store.export`
    returned, ``seconds`` after it started."""
    raise TypeError(f"no renderer for {type(manifest).__name__}")


@render_export.register
def _index_export(manifest: IndexManifest, args: argparse.Namespace, seconds: float) -> int:
    rows = manifest.table_rows()
    summary = {
        "dataset": args.out,
        "engine": args.engine,
        **{t: rows[t] for t in ("files", "slots", "entries")},
        **({"messages": rows["messages"]} if "messages" in rows else {}),
        "seconds": round(seconds, 3),
    }
    _print_summary("export", summary, args)
    return 0


@render_export.register
def _tiered_export(manifest: TieredManifest, args: argparse.Namespace, seconds: float) -> int:
    summary = {
        "dataset": str(args.out),
        "kind": "tiered",
        **manifest.table_rows(),
        "seconds": round(seconds, 3),
    }
    _print_summary("export.tiered", summary, args)
    return 0


@render_export.register
def _rocksdb_export(manifest: RocksDBManifest, args: argparse.Namespace, seconds: float) -> int:
    records = manifest.table_rows()["rocksdb_records"]
    summary = {
        "dataset": args.out,
        "records": records,
        "bookkeeping": manifest.bookkeeping(),
        "seconds": round(seconds, 3),
        "records_per_second": round(records / seconds) if seconds else None,
    }
    _print_summary("export.rocksdb", summary, args)
    return 0


def _print_summary(kind: str, summary: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print_document(kind, summary)
    else:
        print_kv(summary)


# -- import ------------------------------------------------------------------------------


@singledispatch
def render_import(paths: object, args: argparse.Namespace, seconds: float) -> int:
    """``rmqarrow import``'s summary of the files :meth:`~rmqarrow.store.Store.import_files`
    wrote, ``seconds`` after it started."""
    raise TypeError(f"no renderer for {type(paths).__name__}")


@render_import.register
def _index_import(paths: ImportedIndexFiles, args: argparse.Namespace, seconds: float) -> int:
    names = [p.name for p in paths]
    summary: dict[str, Any] = {
        "outdir": args.outdir,
        "files": len(paths),
        "names": name_list(names),
        "seconds": round(seconds, 3),
    }
    if args.json:
        print_document("import", {**summary, "names": names})
    else:
        print_kv(summary)
    return 0


@render_import.register
def _tiered_import(paths: ImportedTieredFiles, args: argparse.Namespace, seconds: float) -> int:
    names = [str(p.relative_to(Path(args.outdir))) for p in paths]
    summary: dict[str, Any] = {
        "outdir": str(args.outdir),
        "kind": "tiered",
        "files": len(paths),
        "names": names,
    }
    if args.json:
        print_document("import.tiered", summary)
    else:
        print_kv({**summary, "names": name_list(names)})
    return 0
