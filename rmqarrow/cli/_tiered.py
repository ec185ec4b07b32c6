"""The command line on RocketMQ tiered index files (RIP-65 ``IndexStoreFile``, both forms).

The classic commands branch here when :func:`rmqarrow.tiered.detect_tiered` recognises
their input (a local or uploaded file, a ``tiered_index_file/`` folder, a segment folder,
or a tiered dataset for ``import``): ``info``, ``query`` (``--exact``), ``check``,
``export``, ``import`` and ``verify``.  Each function takes the path and the parsed
arguments of its command and returns the exit status.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import print_json, print_kv, print_table
from rmqarrow.errors import TieredReadError, UsageError

__all__ = [
    "is_tiered_input",
    "tiered_check",
    "tiered_export",
    "tiered_import",
    "tiered_info",
    "tiered_query",
    "tiered_verify",
]


def is_tiered_input(path: Path | str | None) -> bool:
    """Whether the commands should take the tiered branch for ``path``."""
    if path is None:
        return False
    from rmqarrow.converters.parquet.tiered_import import is_tiered_dataset
    from rmqarrow.tiered import detect_tiered

    return detect_tiered(path) is not None or is_tiered_dataset(path)


def _iso(ms: int) -> str:
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return "out of range"


def _geometry(args: argparse.Namespace) -> tuple[int | None, int | None]:
    return getattr(args, "hash_slot_num", None), getattr(args, "index_num", None)


def _not_a_dataset(path: Path, what: str) -> None:
    from rmqarrow.converters.parquet.tiered_import import is_tiered_dataset

    if is_tiered_dataset(path):
        raise UsageError(f"{path} is a tiered Parquet dataset; {what}")


# -- info ------------------------------------------------------------------------------------


def _file_info(f: Any, note: str | None) -> dict[str, Any]:
    from rmqarrow.tiered import END_MAGIC, TieredIndexFile

    if isinstance(f, TieredIndexFile):
        return {
            "file": str(f.path), "form": "unsealed (local)", "hash_slot_num": f.hash_slot_num,
            "index_num": f.index_num, "magic": "END" if f.magic == END_MAGIC else "BEGIN",
            "begin_timestamp": f.begin_timestamp, "begin_time": _iso(f.begin_timestamp),
            "end_timestamp": f.end_timestamp, "end_time": _iso(f.end_timestamp),
            "hash_slot_count": f.hash_slot_count, "item_count": f.item_count,
            "capacity": f.index_num - 1,
            "fill_ratio": round(f.item_count / max(f.index_num - 1, 1), 6),
            "full": f.item_count == f.index_num - 1, "geometry_note": note,
        }
    items = max(f.size - (28 + 8 * f.hash_slot_num), 0) // 28
    return {
        "file": str(f.path), "form": "compacted (uploaded)", "hash_slot_num": f.hash_slot_num,
        "file_size": f.size, "begin_timestamp": f.begin_timestamp,
        "begin_time": _iso(f.begin_timestamp), "end_timestamp": f.end_timestamp,
        "end_time": _iso(f.end_timestamp), "items": items, "geometry_note": note,
    }


def tiered_info(path: Path, args: argparse.Namespace) -> int:
    """``rmqarrow info`` on a tiered file or folder."""
    from rmqarrow.tiered import TieredIndexStore, open_tiered

    _not_a_dataset(path, "info reads index files (query the dataset with --engine duckdb, "
                   "or rebuild the files with rmqarrow import)")
    opened, note = open_tiered(path, *_geometry(args))
    with opened:
        if isinstance(opened, TieredIndexStore):
            infos = [_file_info(f, None) for f in opened.files()]
        else:
            infos = [_file_info(opened, note)]
    if args.json:
        print_json(infos[0] if path.is_file() else infos)
        return 0
    if note:
        print(f"note: {note}", file=sys.stderr)
    if path.is_file():
        print_kv({k: v for k, v in infos[0].items() if k != "geometry_note"})
        return 0
    columns = ["file", "form", "items", "begin_time", "end_time"]
    print_table([[Path(i["file"]).name, i["form"], i.get("item_count", i.get("items")),
                  i["begin_time"], i["end_time"]] for i in infos], columns)
    print(f"\n{len(infos)} tiered index files as RocketMQ queries them, newest first "
          "(an uploaded segment replaces the local file of its begin timestamp)")
    return 0


# -- query -----------------------------------------------------------------------------------


def _split(full: str) -> tuple[str, str]:
    topic, sep, key = full.partition("#")
    if not sep:
        raise UsageError(f"tiered index keys are topic#key (or --topic with --key); got {full!r}")
    return topic, key


def _queries(args: argparse.Namespace) -> tuple[list[tuple[str, str, int, int, int]], bool]:
    from rmqarrow.format.queries import read_queries_tsv

    if args.queries is not None:
        qs = read_queries_tsv(args.queries, escaped=args.escaped)
        return [(*_split(q.key), q.max_num, q.begin, q.end) for q in qs], True
    topic, key = (args.topic, args.key) if args.topic is not None else _split(args.key)
    from rmqarrow.format.times import parse_time

    begin, end = parse_time(args.begin, "--begin"), parse_time(args.end, "--end")
    return [(topic, key, args.max_num, begin, end)], False


def _answer(engine: str, path: Path, queries: list[Any], exact: bool,
            args: argparse.Namespace) -> list[Any]:
    s, n = _geometry(args)
    source = args.dataset if getattr(args, "dataset", None) is not None else path
    if engine == "native":
        if getattr(args, "dataset", None) is not None:
            raise UsageError("a dataset is for the duckdb and spark engines; native reads files")
        _not_a_dataset(path, "the native engine reads index files: use --engine duckdb or "
                       "spark, or rebuild the files with rmqarrow import")
        from rmqarrow.tiered import answer_queries

        return answer_queries(path, queries, exact=exact, hash_slot_num=s, index_num=n)
    if engine == "duckdb":
        from rmqarrow.converters.duckdb.tiered import answer_queries as duck

        return duck(source, queries, exact=exact, hash_slot_num=s, index_num=n)
    from rmqarrow.converters.spark.tiered import answer_queries as spark

    return spark(source, queries, exact=exact, master=args.master, hash_slot_num=s,
                 index_num=n)


def _item_row(item: Any, begin: int | None = None) -> dict[str, Any]:
    row = {"queue_id": item.queue_id, "offset": item.offset, "size": item.size,
           "time_diff": item.time_diff, "topic_id": item.topic_id,
           "hash_code": item.hash_code, "next_index": item.next_index}
    if begin is not None:  # one file: its begin timestamp decodes the stored seconds
        row["store_timestamp"] = item.store_time(begin)
        row["store_time"] = _iso(row["store_timestamp"])
    return row


def _file_begin(path: Path, args: argparse.Namespace) -> int | None:
    """The begin timestamp queries on ``path`` use, when it is one index file."""
    from rmqarrow.tiered import TieredIndexStore, open_tiered

    if not path.is_file():
        return None
    opened, _ = open_tiered(path, *_geometry(args))
    with opened:
        return None if isinstance(opened, TieredIndexStore) else opened.begin_timestamp


#: Local files up to this size get the "once uploaded" note (it compacts them in memory).
_NOTE_LIMIT = 256 << 20


def _compacted_note(path: Path, q: Any, args: argparse.Namespace) -> str | None:
    """For one query on a local file: what RocketMQ answers once the file is uploaded
    (skipped for files over 256 MiB: ``rmqarrow verify`` reports it for those)."""
    from rmqarrow.tiered import TieredIndexFile, form_differences, open_tiered

    if path.stat().st_size > _NOTE_LIMIT:
        return None
    opened, _ = open_tiered(path, *_geometry(args))
    with opened:
        if not isinstance(opened, TieredIndexFile):
            return None
        diffs = form_differences(opened, [q])
    if not diffs:
        return None
    d = diffs[0]
    after = ("fails (TieredStoreException)" if isinstance(d.compacted, TieredReadError)
             else f"answers {len(d.compacted)} items")
    return (f"once this file is uploaded, RocketMQ {after} for this query instead of "
            f"{len(d.local)} ({d.reason()}); --exact gives every match")


def tiered_query(path: Path, args: argparse.Namespace) -> int:
    """``rmqarrow query`` on a tiered file, folder (or, for SQL engines, dataset)."""
    if getattr(args, "resolve", None) is not None:
        raise UsageError("--resolve reads the classic CommitLog; tiered items hold offsets "
                         "in the queue's tiered commit log, which rmqarrow does not read")
    if args.topic is not None and args.queries is not None:
        raise UsageError("--topic goes with --key; --queries lines hold full keys topic#key")
    exact = bool(getattr(args, "exact", False))
    queries, batch = _queries(args)
    answers = _answer(args.engine, path, queries, exact, args)
    if batch:
        rows = [a if isinstance(a, TieredReadError) else [_item_row(i) for i in a]
                for a in answers]
        if args.json:
            print_json([{"error": str(r)} if isinstance(r, TieredReadError) else r
                        for r in rows])
        else:
            for i, a in enumerate(answers):
                text = (f"error: {a}" if isinstance(a, TieredReadError)
                        else " ".join(f"{x.queue_id}:{x.offset}" for x in a))
                print(f"{i}\t{text}")
        return 0
    answer = answers[0]
    q = queries[0]
    if isinstance(answer, TieredReadError):
        raise answer
    note = None
    rocketmq = None
    if exact:
        rocketmq = _answer("native", path, queries, False, args)[0] if args.engine == "native" \
            and getattr(args, "dataset", None) is None else None
    elif path.is_file() and args.engine == "native":
        note = _compacted_note(path, q, args)
    begin = _file_begin(path, args) if getattr(args, "dataset", None) is None else None
    if args.json:
        out: dict[str, Any] = {"topic": q[0], "key": q[1], "max_count": q[2], "begin": q[3],
                               "end": q[4], "exact": exact,
                               "items": [_item_row(i, begin) for i in answer]}
        if rocketmq is not None:
            out["rocketmq_items"] = (None if isinstance(rocketmq, TieredReadError)
                                     else len(rocketmq))
        if note:
            out["note"] = note
        print_json(out)
        return 0
    cols = ["queue_id", "offset", "size", "time_diff", "topic_id", "hash_code", "next_index"]
    if begin is not None:
        cols.insert(3, "store_time")
    print_table([[_item_row(i, begin)[c] for c in cols] for i in answer], cols)
    print(f"\n{len(answer)} items for {q[0]}#{q[1]!s}" + (" (exact)" if exact else ""))
    if rocketmq is not None:
        said = ("fails (TieredStoreException)" if isinstance(rocketmq, TieredReadError)
                else f"returns {len(rocketmq)}")
        same = not isinstance(rocketmq, TieredReadError) and rocketmq == answer
        print("RocketMQ's own lookup " + said + (" (the same items)" if same else
              " (its caps: 512 steps and maxCount + 1 on a local file, 1,024 items of a "
              "slot on an uploaded one)"), file=sys.stderr)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0


# -- check -----------------------------------------------------------------------------------


def _check_file(f: Any) -> list[str]:
    import numpy as np

    from rmqarrow.errors import CorruptIndexError
    from rmqarrow.tiered import TieredIndexFile
    from rmqarrow.tiered.layout import COMPACT_SLOT_DTYPE, SLOT_DTYPE, items_position

    problems: list[str] = []
    raw = f.path.read_bytes()
    if isinstance(f, TieredIndexFile):
        s = f.hash_slot_num
        slots = np.frombuffer(raw, SLOT_DTYPE, s, 28)
        if np.any(slots["unused"] != 0):
            problems.append(f"{int(np.sum(slots['unused'] != 0))} slots with a non-zero "
                            "second int32 (RocketMQ never writes it)")
        heads = slots["item_index"]
        bad = np.flatnonzero((heads < 0) | (heads > f.item_count))
        if len(bad):
            problems.append(f"{len(bad)} slot heads outside 0 .. itemCount (e.g. slot "
                            f"{int(bad[0])} = {int(heads[bad[0]])})")
        try:
            with f.compacted() as c:
                kept = max(c.size - items_position(s), 0) // 28
        except CorruptIndexError as exc:
            problems.append(f"chains: {exc}")
        else:
            if kept < f.item_count:
                problems.append(f"{f.item_count - kept} of {f.item_count} items are reachable "
                                "from no slot (an Integer.MIN_VALUE key in a header slot, or "
                                "damage); the upload drops them")
        return problems
    if f.size == 0:
        return problems
    s = f.hash_slot_num
    base = items_position(s)
    k = (f.size - base) // 28
    cs = np.frombuffer(raw, COMPACT_SLOT_DTYPE, s, 28).astype([("p", "i8"), ("l", "i8")])
    expect = base + np.concatenate([[0], np.cumsum(cs["l"])[:-1]])
    if np.any(cs["l"] < 0) or np.any(cs["l"] % 28) or np.any(cs["p"] != expect) \
            or int(cs["l"].sum()) != 28 * k:
        problems.append("slot ranges are not the back-to-back, 28-byte aligned ranges "
                        f"doCompaction writes covering all {k} items")
    return problems


def tiered_check(path: Path, args: argparse.Namespace) -> int:
    """``rmqarrow check`` on tiered files: header, slots, chains, compacted ranges."""
    from rmqarrow.errors import RmqArrowError
    from rmqarrow.tiered import (
        TieredIndexStore,
        folder_geometry,
        open_file,
        open_tiered,
        tiered_file_paths,
    )

    s, n = _geometry(args)
    report: list[dict[str, Any]] = []
    if path.is_dir():
        gs, gn, _ = folder_geometry(path, s, n)
        paths = tiered_file_paths(path)
    else:
        gs = gn = 0
        paths = [path]
    for p in paths:
        try:
            if path.is_dir():
                f: Any = open_file(p, gs, gn)
            else:
                f, _ = open_tiered(p, s, n)
                assert not isinstance(f, TieredIndexStore)
            with f:
                problems = _check_file(f)
        except RmqArrowError as exc:
            problems = [str(exc)]
        report.append({"file": str(p), "ok": not problems, "problems": problems})
    ok = all(r["ok"] for r in report)
    if getattr(args, "json", False):
        print_json({"ok": ok, "files": report})
    else:
        for r in report:
            print(f"{'ok     ' if r['ok'] else 'PROBLEM'}  {r['file']}")
            for prob in r["problems"]:
                print(f"         {prob}")
        print(f"\n{len(report)} tiered files checked: "
              f"{'all ok' if ok else 'problems found'}")
    return 0 if ok else 1


# -- export / import / verify ----------------------------------------------------------------


def tiered_export(path: Path, args: argparse.Namespace) -> int:
    """``rmqarrow export`` of tiered files (local engine)."""
    import time

    from rmqarrow.converters.parquet.tiered_export import export_tiered

    if getattr(args, "engine", "local") != "local" or getattr(args, "commitlog", None):
        raise UsageError("tiered files export with the local engine only, without --commitlog")
    start = time.perf_counter()
    manifest = export_tiered(path, args.out, overwrite=args.overwrite,
                             hash_slot_num=args.hash_slot_num, index_num=args.index_num)
    summary = {"dataset": str(args.out), "kind": "tiered",
               **{t: v["rows"] for t, v in manifest["tables"].items()},
               "seconds": round(time.perf_counter() - start, 3)}
    if args.json:
        print_json(summary)
    else:
        print_kv(summary)
    return 0


def tiered_import(path: Path, args: argparse.Namespace) -> int:
    """``rmqarrow import`` of a tiered dataset: byte-identical files under OUTDIR."""
    from rmqarrow.converters.parquet.tiered_import import import_tiered

    paths = import_tiered(path, args.outdir)
    names = [str(p.relative_to(Path(args.outdir))) for p in paths]
    summary: dict[str, Any] = {"outdir": str(args.outdir), "kind": "tiered",
                               "files": len(paths), "names": names}
    if args.json:
        print_json(summary)
    else:
        print_kv({**summary, "names": " ".join(names)})
    return 0


def tiered_verify(path: Path, args: argparse.Namespace) -> int:
    """``rmqarrow verify`` on tiered files: DuckDB/Spark against the native tiered lookup."""
    from rmqarrow.engines import parse_engines
    from rmqarrow.format.queries import read_queries_tsv
    from rmqarrow.verify.tiered import format_tiered_report, verify_tiered

    engines = parse_engines(args.engines)
    queries = None
    if args.queries is not None:
        queries = [(*_split(q.key), q.max_num, q.begin, q.end)
                   for q in read_queries_tsv(args.queries, escaped=args.escaped)]
    explicit = args.engines != "native,duckdb,spark"
    report = verify_tiered(
        path, engines=engines, queries=queries, sample=args.sample, seed=args.seed,
        dataset=args.dataset, exact=bool(getattr(args, "exact", False)), master=args.master,
        hash_slot_num=args.hash_slot_num, index_num=args.index_num,
        required=engines if explicit else [e for e in engines if e != "spark"],
    )
    if args.json:
        print_json(report.to_dict())
    else:
        format_tiered_report(report)
    return 0 if report.ok else 1
