"""The command line on RocketMQ tiered index files (RIP-65 ``IndexStoreFile``, both forms).

``query``, ``export`` and ``import`` render a tiered store here when :func:`rmqarrow.open`
says the path is tiered (a local or uploaded file, a ``tiered_index_file/`` folder, a
segment folder, or a tiered dataset); ``info``, ``check`` and ``verify`` render theirs with
:mod:`rmqarrow.cli._render`.  Each function takes the opened store and the parsed
arguments of its command and returns the exit status.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import name_list, print_document, print_kv, print_table
from rmqarrow.errors import TieredReadError, UsageError
from rmqarrow.format.queries import read_queries_tsv
from rmqarrow.format.times import format_time, parse_time
from rmqarrow.store import Store, TieredDatasetStore, TieredStore

__all__ = ["tiered_export", "tiered_import", "tiered_query"]


def _split(full: str) -> tuple[str, str]:
    topic, sep, key = full.partition("#")
    if not sep:
        raise UsageError(f"tiered index keys are topic#key (or --topic with --key); got {full!r}")
    return topic, key


def _queries(args: argparse.Namespace) -> tuple[list[tuple[str, str, int, int, int]], bool]:
    if args.queries is not None:
        qs = read_queries_tsv(args.queries, escaped=args.escaped)
        return [(*_split(q.key), q.max_num, q.begin, q.end) for q in qs], True
    topic, key = (args.topic, args.key) if args.topic is not None else _split(args.key)
    begin, end = parse_time(args.begin, "--begin"), parse_time(args.end, "--end")
    return [(topic, key, args.max_num, begin, end)], False


def _answer_doc(q: tuple[Any, ...], exact: bool, answer: dict[str, Any]) -> dict[str, Any]:
    """One answer of ``query`` on tiered files: the query, then its ``items`` (or, in a
    batch, the ``error`` reading them)."""
    topic, key, max_count, begin, end = q[:5]
    head = {"topic": topic, "key": key, "max_count": max_count, "begin": begin, "end": end}
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


def tiered_query(store: Store, args: argparse.Namespace) -> int:
    """``rmqarrow query`` on a tiered file, folder (or, for SQL engines, dataset)."""
    if not isinstance(store, TieredStore | TieredDatasetStore):
        raise UsageError(f"{store.path}: {store.description}")
    if getattr(args, "resolve", None) is not None:
        raise UsageError(
            "--resolve reads the classic CommitLog; tiered items hold offsets "
            "in the queue's tiered commit log, which rmqarrow does not read"
        )
    if args.topic is not None and args.queries is not None:
        raise UsageError("--topic goes with --key; --queries lines hold full keys topic#key")
    dataset = getattr(args, "dataset", None) is not None
    if args.engine == "native" and (dataset or isinstance(store, TieredDatasetStore)):
        raise UsageError(
            "a dataset is for the duckdb and spark engines; the native engine "
            "reads index files: use --engine duckdb or spark, or rebuild the "
            "files with rmqarrow import"
        )
    exact = bool(getattr(args, "exact", False))
    queries, batch = _queries(args)
    answers = store.answers(queries, engine=args.engine, exact=exact, master=args.master)
    if batch:
        rows = [a if isinstance(a, TieredReadError) else [_item_row(i) for i in a] for a in answers]
        if args.json:
            docs = [
                _answer_doc(
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
    answer = answers[0]
    q = queries[0]
    if isinstance(answer, TieredReadError):
        raise answer
    note = None
    rocketmq = None
    if exact:
        if args.engine == "native" and isinstance(store, TieredStore):
            rocketmq = store.answers(queries, exact=False)[0]
    elif args.engine == "native" and isinstance(store, TieredStore):
        note = store.upload_note(q)
    begin = store.file_begin_timestamp() if isinstance(store, TieredStore) else None
    if args.json:
        out = _answer_doc(q, exact, {"items": [_item_row(i, begin) for i in answer]})
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
    print(f"\n{len(answer)} items for {q[0]}#{q[1]!s}" + (" (exact)" if exact else ""))
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


# -- export / import ----------------------------------------------------------------


def tiered_export(store: TieredStore, args: argparse.Namespace) -> int:
    """``rmqarrow export`` of tiered files (local engine)."""
    start = time.perf_counter()
    manifest = store.export(
        args.out,
        overwrite=args.overwrite,
        engine=args.engine,
        commitlog=args.commitlog,
        wait=args.wait,
    )
    summary = {
        "dataset": str(args.out),
        "kind": "tiered",
        **{t: v["rows"] for t, v in manifest["tables"].items()},
        "seconds": round(time.perf_counter() - start, 3),
    }
    if args.json:
        print_document("export.tiered", summary)
    else:
        print_kv(summary)
    return 0


def tiered_import(store: TieredDatasetStore, args: argparse.Namespace) -> int:
    """``rmqarrow import`` of a tiered dataset: byte-identical files under OUTDIR."""
    paths = store.import_files(args.outdir, wait=args.wait, force=args.force)
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
