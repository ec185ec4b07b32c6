"""``rmqarrow info``, ``query`` and ``build``: the native engine from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow.cli._output import (
    add_geometry_options,
    add_spark_options,
    print_json,
    print_kv,
    print_table,
)
from rmqarrow.engines import ENGINES, answer_with_engine
from rmqarrow.errors import DatasetError, StoreNotFoundError, UsageError
from rmqarrow.format.detect import detect, require_commitlog, require_index_store
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query
from rmqarrow.format.times import TIME_HELP, format_time, parse_time

if TYPE_CHECKING:
    from rmqarrow.index.health import StoreHealth
    from rmqarrow.index.service import IndexService

__all__ = ["refuse_unknown_geometry", "register"]


def _notes(lines: list[str]) -> None:
    for line in dict.fromkeys(lines):
        print(line, file=sys.stderr)


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

    query = sub.add_parser(
        "query", help="look keys up with the native chained lookup",
        description="Look keys up. Damaged files (truncated, bad header, wrong size) are "
                    "skipped and named on stderr; --strict refuses instead.")
    query.add_argument("store", type=Path,
                       help="store directory, broker store root (or dataset, for SQL engines)")
    what = query.add_mutually_exclusive_group(required=True)
    what.add_argument("--key", help="the key (with --topic) or the full index key topic#key")
    what.add_argument("--queries", type=Path,
                      help="TSV, one query a line: key[<TAB>max_num[<TAB>begin[<TAB>end]]] "
                           "(a header line is allowed; missing columns take the options)")
    query.add_argument("--topic", help="topic; the index key is then TOPIC#KEY")
    query.add_argument("--begin", default="0", help=f"from this store time: {TIME_HELP}")
    query.add_argument("--end", default=str(JAVA_LONG_MAX),
                       help=f"to this store time: {TIME_HELP}")
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
    query.add_argument("--explain", action="store_true",
                       help="say per file why nothing (or something) came back (native)")
    query.add_argument("--strict", action="store_true",
                       help="refuse a store with a damaged file instead of skipping it")
    add_geometry_options(query)
    query.add_argument("--json", action="store_true", help="print JSON")
    query.add_argument("--exact", action="store_true",
                       help="tiered index: every match of the chain or slot, capped by --max-num")
    query.set_defaults(func=cmd_query)

    build = sub.add_parser("build", help="build a store from message records")
    build.add_argument("store", type=Path, help="store directory (created if missing)")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="source", type=Path, help="Parquet or CSV of records")
    source.add_argument(
        "--from-commitlog", type=Path, metavar="DIR",
        help="a broker's store/commitlog (or the store root: its commitlog/ is used)"
    )
    build.add_argument("--start-offset", type=int, default=0, help="CommitLog offset to resume at")
    build.add_argument(
        "--start-timestamp",
        help="resume where the broker's recovery would for this store time: the newest "
        "CommitLog file whose first message is no later; the offset guard skips what is "
        f"indexed. {TIME_HELP}",
    )
    build.add_argument("--checkpoint", type=Path, help="the store's checkpoint file")
    build.add_argument("--batch-rows", type=int, default=1 << 20, help="records per batch")
    add_geometry_options(build)
    build.add_argument("--json", action="store_true", help="print a JSON summary")
    build.set_defaults(func=cmd_build)


# -- info ------------------------------------------------------------------------------------


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
    _notes(say)
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
    for fh in health.damaged:
        print(f"damaged: {fh.describe()}")
    if health.damaged:
        print(f"\n{len(health.damaged)} of {len(infos)} files damaged; `rmqarrow query`, "
              "`export` and `verify` skip them (--strict refuses); `rmqarrow check` tells more")
    return status


# -- query -----------------------------------------------------------------------------------


def _queries_from_args(args: argparse.Namespace) -> tuple[list[Query], bool]:
    begin = parse_time(args.begin, "--begin")
    end = parse_time(args.end, "--end")
    if begin > end:
        raise UsageError(f"--begin {begin} is after --end {end}: the range is empty")
    if args.queries is not None:
        from rmqarrow.format.query_file import read_query_file

        return read_query_file(args.queries, max_num=args.max_num, begin=begin, end=end,
                               escaped=args.escaped), True
    if args.key == "":
        raise UsageError("--key is empty")
    key = f"{args.topic}#{args.key}" if args.topic is not None else args.key
    return [Query(key, args.max_num, begin, end)], False


def open_native(store: Path, args: argparse.Namespace) -> IndexService:
    """The read-only service over the store's healthy files; skipped files named on stderr."""
    from rmqarrow.index.service import open_store

    say: list[str] = []
    target = require_index_store(store, say=say)
    _notes(say)
    service, note = open_store(target.index_path, args.hash_slot_num, args.index_num,
                               strict=getattr(args, "strict", False))
    if note:
        print(f"note: {note}", file=sys.stderr)
    if not service.files:
        from rmqarrow.index.health import StoreHealth

        refuse_unknown_geometry(StoreHealth(target.index_path, service.geometry, None,
                                             service.skipped))
    for fh in service.skipped:
        print(f"warning: skipped damaged file {fh.describe()}", file=sys.stderr)
    if not service.files:
        service.close()
        raise UsageError(f"{target.index_path}: no readable index files"
                         + (" (every file is damaged)" if service.skipped else ""))
    return service


def _native_answers(service: IndexService, queries: list[Query]) -> list[list[int]]:
    from rmqarrow.kernels.lookup import answers_from_table

    table = service.query_offsets([q.key for q in queries], [q.max_num for q in queries],
                                  [q.begin for q in queries], [q.end for q in queries])
    return answers_from_table(table, len(queries))


def _check_sql_target(args: argparse.Namespace) -> None:
    source = args.dataset if args.dataset is not None else args.store
    t = detect(source)
    if t.kind == "dataset":
        return
    say: list[str] = []
    t = require_index_store(source, say=say)
    _notes(say)
    if t.kind == "broker_root":
        if args.dataset is None:
            args.store = t.index_path
        else:
            args.dataset = t.index_path
    from rmqarrow.index.health import scan_store

    health = scan_store(t.index_path, args.hash_slot_num, args.index_num)
    refuse_unknown_geometry(health)
    if health.damaged:
        raise UsageError(
            f"{t.index_path}: {len(health.damaged)} damaged file(s) "
            f"({', '.join(f'{f.name}: {f.status}' for f in health.damaged)}); the "
            f"{args.engine} engine reads every file: use --engine native, which skips them"
        )
    # the geometry fitted from the healthy files, never from the newest file alone
    args.hash_slot_num = health.geometry.hash_slot_num
    args.index_num = health.geometry.index_num


def cmd_query(args: argparse.Namespace) -> int:
    from rmqarrow.cli._tiered import is_tiered_input, tiered_query

    if is_tiered_input(args.store):  # RocketMQ tiered-storage index (issue 16)
        return tiered_query(args.store, args)
    if args.topic is not None and args.queries is not None:
        raise UsageError("--topic goes with --key; --queries lines hold full index keys")
    if args.max_num < 0:
        raise UsageError(f"--max-num must be >= 0, got {args.max_num}")
    if args.explain and args.engine != "native":
        raise UsageError("--explain traces the native lookup; drop --engine")
    if args.resolve is not None and args.queries is not None:
        raise UsageError("--resolve works with --key, not --queries")
    if args.engine == "native" and args.dataset is not None:
        raise UsageError("a dataset is for the duckdb and spark engines; native reads the store")
    queries, batch = _queries_from_args(args)
    if args.resolve is not None:
        say: list[str] = []
        args.resolve = require_commitlog(args.resolve, say=say)
        _notes(say)
    if args.engine == "native":
        service = open_native(args.store, args)
        with service:
            answers = _native_answers(service, queries)
            explained = _explain(service, queries, args) if args.explain else []
    else:
        explained = []
        _check_sql_target(args)
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
        status = _print_resolved(args, queries[0], answers[0])
        _print_explained(explained, args.json)
        return status
    if batch:
        if args.json:
            print_json([{"key": q.key, "max_num": q.max_num, "begin": q.begin, "end": q.end,
                         "phy_offsets": a} for q, a in zip(queries, answers, strict=True)])
            _print_explained(explained, True)
        else:
            from rmqarrow.format.queries import escape_text

            for q, a in zip(queries, answers, strict=True):  # keys escaped: one line each
                sys.stdout.write(f"{escape_text(q.key)}\t{','.join(str(o) for o in a)}\n")
            _print_explained(explained, False)
        _topic_hint(args, [q for q, a in zip(queries, answers, strict=True) if not a])
        return 0
    q = queries[0]
    if args.json:
        doc: dict[str, Any] = {"key": q.key, "max_num": q.max_num, "begin": q.begin,
                               "end": q.end, "phy_offsets": answers[0]}
        if args.explain:
            doc["explain"] = explained
        print_json(doc)
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
    if getattr(args, "topic", None) is not None and args.key is not None and "#" in args.key:
        print(f"hint: --key {args.key!r} already holds a '#', and --topic made the index key "
              f"{args.topic}#{args.key!r}; pass either --key 'TOPIC#KEY' or --topic with the "
              "bare key", file=sys.stderr)
        return
    bare = [q.key for q in empty if "#" not in q.key]
    if bare and getattr(args, "topic", None) is None:
        example = bare[0]
        print(f"hint: {example!r} has no '#': RocketMQ indexes TOPIC#KEY, so pass --topic "
              f"TOPIC (or --key 'TOPIC#{example}')"
              + (f"; {len(bare)} such keys in --queries" if len(bare) > 1 else ""),
              file=sys.stderr)


def _explain(service: IndexService, queries: list[Query], args: argparse.Namespace
             ) -> list[str]:
    """Per query and file, why the native lookup returned what it did."""
    from rmqarrow.verify.explain import explain_query

    lines: list[str] = []
    for q in queries:
        lines += explain_query(service.files, q, skipped=service.skipped,
                               commitlog=args.resolve)
    return lines


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
        try:
            reader = pcsv.open_csv(source, parse_options=parse, convert_options=convert,
                                   read_options=pcsv.ReadOptions(block_size=64 << 20))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DatasetError(
                f"{source}: {' '.join(str(exc).split())[:300]}; expected a header line and "
                "commit_log_offset, store_timestamp (epoch ms) and sys_flag as integers"
            ) from None
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

    def checked() -> Any:
        """The source's batches; a value that does not parse is one line naming it."""
        try:
            yield from batches
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            text = " ".join(str(exc).split())[:300]
            raise DatasetError(
                f"{source}: a value does not fit its column ({text}); expected "
                "commit_log_offset and store_timestamp as integers (epoch ms), sys_flag as "
                "an integer"
            ) from None

    def normalise() -> Any:
        for batch in checked():
            cols = []
            for name in RECORD_COLUMNS:
                if name in batch.schema.names:
                    try:
                        cols.append(batch.column(name).cast(types[name]))
                    except (pa.ArrowInvalid, pa.ArrowTypeError,
                            pa.ArrowNotImplementedError) as exc:
                        raise DatasetError(
                            f"{source}: column {name} holds {batch.schema.field(name).type} "
                            f"values that do not convert to {types[name]} "
                            f"({' '.join(str(exc).split())[:200]})"
                        ) from None
                else:
                    cols.append(pa.nulls(batch.num_rows, types[name]))
            whole = pa.RecordBatch.from_arrays(cols, names=list(RECORD_COLUMNS))
            for start in range(0, whole.num_rows, batch_rows):  # CSV blocks are larger
                yield whole.slice(start, batch_rows)

    return normalise(), total


def _validate_records(source: Path, batch_rows: int) -> None:
    """Read every input record once, writing nothing: a bad value anywhere fails here,
    before a store that already exists is touched (issue 12)."""
    import pyarrow as pa

    try:
        batches, _ = _record_batches(source, batch_rows)
        for _ in batches:
            pass
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise _bad_record(source, exc) from None
    except DatasetError as exc:
        raise DatasetError(f"{exc}; nothing was written") from None


def _bad_record(source: Path, exc: Exception) -> DatasetError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatasetError(f"{source}: bad record: {first}; nothing was written")


def _check_build_output(store: Path) -> None:
    """``build`` writes index files into a store directory: never into something else."""
    t = detect(store)
    if t.kind in ("missing", "empty_dir", "index_dir"):
        return
    if t.kind == "broker_root":
        raise UsageError(f"{store}: a broker store root; build into its index directory "
                         f"({t.index_dir or store / 'index'}), not the root")
    raise UsageError(f"{store}: {t.detail or t.kind}; build writes index files into a new, "
                     "empty or index directory")


def cmd_build(args: argparse.Namespace) -> int:
    """Build (or resume) a store.  A new store is built in a sibling staging folder and
    renamed into place when complete (a failure or kill -9 leaves no store, and the next
    run removes the folder); an existing store is appended in place, crash-consistently
    (an interrupted batch is rolled back to the header on the next open, and said)."""
    import os

    from rmqarrow._space import disk_full, is_disk_full
    from rmqarrow._staging import remove_path, sibling, stale_siblings
    from rmqarrow.errors import DiskFullError

    if args.batch_rows < 1:
        raise UsageError(f"--batch-rows must be >= 1, got {args.batch_rows}")
    if args.start_timestamp is not None and args.from_commitlog is None:
        raise UsageError("--start-timestamp goes with --from-commitlog")
    _check_build_output(Path(args.store))
    store = Path(args.store).absolute()
    for stale in stale_siblings(store, "build"):
        remove_path(stale)
        print(f"rmqarrow build: removed {stale} (left by a killed build)", file=sys.stderr)
    if store.exists() and not store.is_dir():
        raise UsageError(f"{args.store}: exists and is not a directory; give a store directory")
    fresh = not store.exists() or not any(store.iterdir())
    if fresh:
        from rmqarrow.converters.parquet.atomic import check_output_place

        check_output_place(store)
    elif args.source is not None:
        _validate_records(args.source, args.batch_rows)
    target = sibling(store, "build") if fresh else store
    try:
        summary = _build_into(args, target)
        if fresh:
            if store.exists():
                store.rmdir()  # it was empty
            os.rename(target, store)
    except OSError as exc:
        if fresh:
            remove_path(target)
        if is_disk_full(exc) and not isinstance(exc, DiskFullError):
            raise disk_full(args.store, None, exc) from None
        raise
    except BaseException as exc:
        if fresh:
            remove_path(target)
        import pyarrow as pa

        if isinstance(exc, pa.ArrowInvalid | pa.ArrowNotImplementedError) and args.source:
            raise _bad_record(args.source, exc) from None
        raise
    summary["store"] = str(args.store)
    if args.json:
        print_json(summary)
    else:
        print_kv(summary)
    return 0


def _build_into(args: argparse.Namespace, store: Path) -> dict[str, Any]:
    import time

    from rmqarrow._progress import Progress
    from rmqarrow.format.layout import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM
    from rmqarrow.index.service import IndexService

    if args.source is not None:
        batches, total = _record_batches(args.source, args.batch_rows)
        unit = "records"
    else:
        from rmqarrow.commitlog import CommitLogReader, index_records

        say: list[str] = []
        commitlog = require_commitlog(args.from_commitlog, say=say)
        _notes(say)
        start = args.start_offset
        if args.start_timestamp is not None:
            start = CommitLogReader(commitlog).recover_start_offset(
                parse_time(args.start_timestamp, "--start-timestamp"))
        batches = index_records(commitlog, start_offset=start,
                                batch_rows=args.batch_rows)
        total, unit = None, "records"
    service = IndexService(
        store,
        DEFAULT_HASH_SLOT_NUM if args.hash_slot_num is None else args.hash_slot_num,
        DEFAULT_INDEX_NUM if args.index_num is None else args.index_num,
        checkpoint_path=args.checkpoint,
    )
    started = time.monotonic()
    records = 0
    with service:
        service.load()
        for note in service.repairs:
            print(f"rmqarrow build: {note}", file=sys.stderr)
        files_before = len(service.files)
        with Progress(total, "building", unit) as progress:
            for batch in batches:
                service.build_index_batch(batch)
                records += batch.num_rows
                progress.advance(batch.num_rows)
        service.flush()
        return {
            "store": str(store),
            "records": records,
            "files": len(service.files),
            "new_files": len(service.files) - files_before,
            "entries": sum(f.entry_count for f in service.files),
            "repaired": len(service.repairs),
            "seconds": round(time.monotonic() - started, 3),
        }
