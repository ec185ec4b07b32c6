"""``rmqarrow info``, ``query`` and ``build``: the native engine from the command line."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path
from typing import Any

from rmqarrow.cli._output import (
    add_geometry_options,
    add_spark_options,
    print_json,
    print_kv,
    print_table,
)
from rmqarrow.engines import ENGINES, answer_with_engine
from rmqarrow.errors import DatasetError, StoreNotFoundError, UsageError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query, format_answers, read_queries_tsv
from rmqarrow.index.service import store_geometry

__all__ = ["register"]



def register(sub: Any) -> None:
    info = sub.add_parser("info", help="header fields, geometry and fill of index files")
    info.add_argument("path", type=Path, help="an index file or a store directory")
    add_geometry_options(info)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=cmd_info)

    query = sub.add_parser("query", help="look keys up with the native chained lookup")
    query.add_argument("store", type=Path, help="store directory (or dataset, for SQL engines)")
    what = query.add_mutually_exclusive_group(required=True)
    what.add_argument("--key", help="the key (with --topic) or the full index key topic#key")
    what.add_argument("--queries", type=Path, help="TSV: key<TAB>max_num<TAB>begin<TAB>end")
    query.add_argument("--topic", help="topic; the index key is then TOPIC#KEY")
    query.add_argument("--begin", type=int, default=0, help="from this store time, ms")
    query.add_argument("--end", type=int, default=JAVA_LONG_MAX, help="to this store time, ms")
    query.add_argument("--max-num", type=int, default=64, help="at most this many offsets")
    query.add_argument("--escaped", action="store_true", help="keys in --queries are escaped")
    query.add_argument("--engine", choices=ENGINES, default="native")
    query.add_argument("--dataset", type=Path, help="a Parquet dataset (duckdb/spark engines)")
    query.add_argument("--master", help="Spark master URL (spark engine)")
    add_spark_options(query)
    query.add_argument(
        "--resolve",
        type=Path,
        metavar="COMMITLOG_DIR",
        help="read each hit back from this CommitLog and keep only exact topic/key matches",
    )
    query.add_argument("--show", action="store_true", help="with --resolve: print the messages")
    add_geometry_options(query)
    query.add_argument("--json", action="store_true", help="print JSON")
    query.set_defaults(func=cmd_query)

    build = sub.add_parser("build", help="build a store from message records")
    build.add_argument("store", type=Path, help="store directory (created if missing)")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="source", type=Path, help="Parquet or CSV of records")
    source.add_argument(
        "--from-commitlog", type=Path, metavar="DIR", help="a broker's store/commitlog"
    )
    build.add_argument("--start-offset", type=int, default=0, help="CommitLog offset to resume at")
    build.add_argument(
        "--start-timestamp",
        type=int,
        help="resume where the broker's recovery would for this store time (ms): the newest "
        "CommitLog file whose first message is no later; the offset guard skips what is indexed",
    )
    build.add_argument("--checkpoint", type=Path, help="the store's checkpoint file")
    build.add_argument("--batch-rows", type=int, default=1 << 20, help="records per batch")
    add_geometry_options(build)
    build.add_argument("--json", action="store_true", help="print a JSON summary")
    build.set_defaults(func=cmd_build)


# -- info ------------------------------------------------------------------------------------


def _iso(ms: int) -> str:
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return "out of range"


def file_info(path: Path, hash_slot_num: int | None, index_num: int | None) -> dict[str, Any]:
    from rmqarrow.format.layout import resolve_geometry
    from rmqarrow.index.indexfile import IndexFile

    geometry, note = resolve_geometry(path.stat().st_size, hash_slot_num, index_num)
    with IndexFile.open(path, geometry.hash_slot_num, geometry.index_num) as f:
        return {
            "file": str(path),
            "name": f.name,
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


def cmd_info(args: argparse.Namespace) -> int:
    from rmqarrow.format.naming import list_index_files

    path: Path = args.path
    if path.is_dir():
        infos = [file_info(p, args.hash_slot_num, args.index_num) for p in list_index_files(path)]
    elif path.is_file():
        infos = [file_info(path, args.hash_slot_num, args.index_num)]
    else:
        raise StoreNotFoundError(f"{path}: no such file or directory")
    if args.json:
        print_json(infos if path.is_dir() else infos[0])
        return 0
    for note in {i["geometry_note"] for i in infos if i["geometry_note"]}:
        print(f"note: {note}", file=sys.stderr)
    if path.is_file():
        print_kv({k: v for k, v in infos[0].items() if k != "geometry_note"})
        return 0
    columns = ["name", "entries", "fill_ratio", "hash_slot_count", "begin_time", "end_time",
               "begin_phy_offset", "end_phy_offset"]
    print_table([[i[c] for c in columns] for i in infos], columns)
    total = sum(i["entries"] for i in infos)
    geom = f"{infos[0]['hash_slot_num']:,} slots x {infos[0]['index_num']:,}" if infos else "-"
    print(f"\n{len(infos)} files, {total:,} entries, geometry {geom}")
    return 0


# -- query -----------------------------------------------------------------------------------


def _queries_from_args(args: argparse.Namespace) -> tuple[list[Query], bool]:
    if args.queries is not None:
        return read_queries_tsv(args.queries, escaped=args.escaped), True
    key = f"{args.topic}#{args.key}" if args.topic is not None else args.key
    return [Query(key, args.max_num, args.begin, args.end)], False


def cmd_query(args: argparse.Namespace) -> int:
    if args.topic is not None and args.queries is not None:
        raise UsageError("--topic goes with --key; --queries lines hold full index keys")
    if args.max_num < 0:
        raise UsageError(f"--max-num must be >= 0, got {args.max_num}")
    queries, batch = _queries_from_args(args)
    if args.engine == "native":
        note = store_geometry(args.store, args.hash_slot_num, args.index_num)[1]
        if note:
            print(f"note: {note}", file=sys.stderr)
    answers = answer_with_engine(
        args.engine,
        args.store,
        queries,
        dataset=args.dataset,
        master=args.master,
        hash_slot_num=args.hash_slot_num,
        index_num=args.index_num,
    )
    if args.resolve is not None:
        if batch:
            raise UsageError("--resolve works with --key, not --queries")
        return _print_resolved(args, queries[0], answers[0])
    if batch:
        if args.json:
            print_json(answers)
        else:
            sys.stdout.write(format_answers(answers))
        return 0
    q = queries[0]
    if args.json:
        print_json({"key": q.key, "max_num": q.max_num, "begin": q.begin, "end": q.end,
                    "phy_offsets": answers[0]})
    else:
        print_table([[o] for o in answers[0]], ["phy_offset"])
        print(f"\n{len(answers[0])} offsets for {q.key!r}")
    return 0


def _print_resolved(args: argparse.Namespace, q: Query, offsets: list[int]) -> int:
    from rmqarrow.commitlog import format_message, resolve

    topic, _, key = q.key.partition("#") if args.topic is None else (args.topic, "#", args.key)
    # a key repeated in KEYS is indexed once per occurrence: read each message once
    distinct = list(dict.fromkeys(offsets))
    result = resolve(args.resolve, topic, key, distinct)
    if args.json:
        print_json({
            "key": q.key,
            "hits": len(offsets),
            "distinct_offsets": len(distinct),
            "phy_offsets": [m.physical_offset for m in result.messages],
            "dropped_false_positives": result.dropped,
            "dropped_offsets": list(result.dropped_offsets),
            "unreadable": [{"phy_offset": o, "error": e} for o, e in result.unreadable],
        })
        return 0
    print_table([[m.physical_offset, m.topic, m.keys or "", m.uniq_key or ""]
                 for m in result.messages], ["phy_offset", "topic", "keys", "uniq_key"])
    print(f"\n{len(offsets)} index hits, {len(distinct)} distinct offsets: "
          f"{len(result.messages)} messages match exactly, "
          f"{result.dropped} hash false positives dropped"
          + (f", {len(result.unreadable)} unreadable" if result.unreadable else ""))
    for offset, error in result.unreadable:
        print(f"unreadable offset {offset}: {error}", file=sys.stderr)
    if args.show:
        for m in result.messages:
            print()
            print(format_message(m))
    return 0


# -- build -----------------------------------------------------------------------------------


def _record_batches(source: Path, batch_rows: int) -> tuple[Any, int | None]:
    """Batches of message records from Parquet or CSV, and the row count when known."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from rmqarrow.format.records import RECORD_COLUMNS

    if not source.is_file():
        raise StoreNotFoundError(f"{source}: no such file")
    types = {
        "topic": pa.string(), "keys": pa.string(), "uniq_key": pa.string(),
        "commit_log_offset": pa.int64(), "store_timestamp": pa.int64(), "sys_flag": pa.int32(),
    }
    if source.suffix.lower() in {".csv", ".tsv", ".txt"}:
        parse = pcsv.ParseOptions(delimiter="\t" if source.suffix.lower() == ".tsv" else ",")
        convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=True)
        reader = pcsv.open_csv(source, parse_options=parse, convert_options=convert,
                               read_options=pcsv.ReadOptions(block_size=64 << 20))
        names, total, batches = reader.schema.names, None, iter(reader)
    else:
        try:
            pf = pq.ParquetFile(source)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DatasetError(f"{source}: neither CSV (by suffix) nor Parquet: {exc}") from None
        names, total = pf.schema_arrow.names, pf.metadata.num_rows
        batches = pf.iter_batches(batch_size=batch_rows)
    required = {"topic", "commit_log_offset", "store_timestamp"}
    missing = sorted(required - set(names))
    if missing:
        raise DatasetError(
            f"{source}: missing columns {missing}; expected {list(RECORD_COLUMNS)} "
            f"(keys, uniq_key and sys_flag optional), found {names}"
        )

    def normalise() -> Any:
        for batch in batches:
            cols = []
            for name in RECORD_COLUMNS:
                if name in batch.schema.names:
                    cols.append(batch.column(name).cast(types[name]))
                else:
                    cols.append(pa.nulls(batch.num_rows, types[name]))
            yield pa.RecordBatch.from_arrays(cols, names=list(RECORD_COLUMNS))

    return normalise(), total


def cmd_build(args: argparse.Namespace) -> int:
    import time

    from rmqarrow._progress import Progress
    from rmqarrow.format.layout import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM
    from rmqarrow.index.service import IndexService

    if args.batch_rows < 1:
        raise UsageError(f"--batch-rows must be >= 1, got {args.batch_rows}")
    if args.source is not None:
        batches, total = _record_batches(args.source, args.batch_rows)
        unit = "records"
    else:
        from rmqarrow.commitlog import CommitLogReader, index_records

        start = args.start_offset
        if args.start_timestamp is not None:
            start = CommitLogReader(args.from_commitlog).recover_start_offset(args.start_timestamp)
        batches = index_records(args.from_commitlog, start_offset=start,
                                batch_rows=args.batch_rows)
        total, unit = None, "records"
    service = IndexService(
        args.store,
        DEFAULT_HASH_SLOT_NUM if args.hash_slot_num is None else args.hash_slot_num,
        DEFAULT_INDEX_NUM if args.index_num is None else args.index_num,
        checkpoint_path=args.checkpoint,
    )
    started = time.monotonic()
    records = 0
    with service:
        service.load()
        files_before = len(service.files)
        with Progress(total, "building", unit) as progress:
            for batch in batches:
                service.build_index_batch(batch)
                records += batch.num_rows
                progress.advance(batch.num_rows)
        service.flush()
        summary = {
            "store": str(args.store),
            "records": records,
            "files": len(service.files),
            "new_files": len(service.files) - files_before,
            "entries": sum(f.entry_count for f in service.files),
            "seconds": round(time.monotonic() - started, 3),
        }
    if args.json:
        print_json(summary)
    else:
        print_kv(summary)
    return 0
