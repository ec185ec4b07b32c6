"""``rmqarrow demo``: the whole loop on a generated broker store, in about a minute.

1. a realistic message stream (:mod:`rmqarrow.testing.stream`) written as a real CommitLog
   (:class:`rmqarrow.commitlog.CommitLogWriter`), plus its index records as Parquet;
2. the native index built from the CommitLog as a broker does (``build_index_batch``),
   at a small geometry so that several files roll;
3. the store exported to a Parquet dataset
   (:func:`rmqarrow.converters.parquet.export.export_store`);
4. example questions in DuckDB and Spark SQL, SQL shown (:mod:`rmqarrow.demo.questions`);
5. one query where the native chained lookup and a plain filter disagree (out-of-order
   store times), answered by every engine;
6. :func:`rmqarrow.verify.verify` across the engines with the stream's real keys;
7. a summary of what is where and the commands to try next.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rmqarrow._text import print_table
from rmqarrow.commitlog import CommitLogWriter, Message, index_records
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.manifest import as_dataset_manifest
from rmqarrow.demo.questions import ask_duckdb, ask_spark
from rmqarrow.engines import answer_with_engine
from rmqarrow.errors import InvalidValueError, OutputExistsError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import Geometry, as_hint
from rmqarrow.format.queries import Query
from rmqarrow.format.records import MessageRecord, index_keys, is_rollback
from rmqarrow.index.service import IndexService, open_healthy
from rmqarrow.kernels.hashing import index_key_hashes
from rmqarrow.testing.stream import demo_messages
from rmqarrow.verify import format_report, verify
from rmqarrow.verify.diagnose import explain, set_answer, trace_query
from rmqarrow.verify.sampling import shadowed_entries

__all__ = [
    "SIZES",
    "DemoResult",
    "claim_new_dir",
    "demo_geometry",
    "find_semantics_case",
    "index_keys_of",
    "read_index_records",
    "remove_created",
    "run_demo",
    "write_demo_commitlog",
]

#: Messages per named size.
SIZES = {"small": 3_000, "medium": 30_000}
#: Largest ``--size``: a few GB of CommitLog and index, minutes per engine.
MAX_MESSAGES = 10_000_000
FILES_TARGET = 8  # roughly this many index files

Echo = Callable[[str], None]


@dataclass
class DemoResult:
    out: Path
    messages: int
    paths: dict[str, str]
    hash_slot_num: int
    index_num: int
    index_files: int
    entries: int
    seconds: dict[str, float] = field(default_factory=dict)
    questions: list[dict[str, Any]] = field(default_factory=list)
    semantics: dict[str, Any] | None = None
    verify: dict[str, Any] | None = None
    ok: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "out": str(self.out),
            "messages": self.messages,
            "paths": self.paths,
            "hash_slot_num": self.hash_slot_num,
            "index_num": self.index_num,
            "index_files": self.index_files,
            "entries": self.entries,
            "seconds": self.seconds,
            "questions": self.questions,
            "semantics": self.semantics,
            "verify": self.verify,
        }


def message_count(size: str | int) -> int:
    if isinstance(size, int) or str(size).isdigit():
        n = int(size)
        if not 100 <= n <= MAX_MESSAGES:
            raise InvalidValueError(
                f"demo size must be 100..{MAX_MESSAGES:,} messages, got {n}; the demo holds "
                "its answers in memory (build a larger store with rmqarrow build)"
            )
        return n
    try:
        return SIZES[str(size)]
    except KeyError:
        raise InvalidValueError(
            f"demo size must be {', '.join(SIZES)} or a number of messages, got {size!r}"
        ) from None


def demo_geometry(messages: int) -> tuple[int, int]:
    """A 1:4 geometry that rolls about :data:`FILES_TARGET` files (~2.6 keys a message)."""
    hash_slot_num = max(16, -(-int(messages * 2.6) // (4 * FILES_TARGET)))
    return hash_slot_num, 4 * hash_slot_num


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")


def _step(echo: Echo, n: int, title: str) -> None:
    echo(f"\n== {n}. {title} " + "=" * max(0, 70 - len(title)))


def write_demo_commitlog(out: Path, n: int, seed: int) -> tuple[Path, int]:
    commitlog = out / "commitlog"
    mapped = max(64 << 10, 1 << (max(n * 300 // 3, 1).bit_length()))  # ~3 files
    late = 0
    with CommitLogWriter(commitlog, mapped_file_size=mapped) as w:
        for m in demo_messages(n, seed=seed):
            late += m.out_of_order
            w.append(
                Message(
                    topic=m.topic,
                    body=m.body,
                    keys=m.keys,
                    tags=m.tags,
                    uniq_key=m.uniq_key,
                    sys_flag=m.sys_flag,
                    born_timestamp=m.born_timestamp,
                    store_timestamp=m.store_timestamp,
                )
            )
    return commitlog, late


def read_index_records(commitlog: Path) -> Any:
    return pa.Table.from_batches(list(index_records(commitlog)))


def index_keys_of(records: Any) -> list[str]:
    """Every full index key of the stream, in order of first appearance."""
    keys: dict[str, None] = {}
    for r in records.to_pylist():
        if is_rollback(r["sys_flag"]):
            continue
        for k in index_keys(MessageRecord(**r)):
            keys[k] = None
    return list(keys)


def _featured_key(records: Any) -> str:
    """An order key indexed under several topics (orders, payments, shipping)."""
    seen: Counter[str] = Counter()
    for r in records.to_pylist():
        if r["keys"] and not r["sys_flag"] & 0x8:
            for k in r["keys"].split():
                if k.startswith("ORD-"):
                    seen[k] += 1
    key = max(sorted(seen), key=lambda k: seen[k]) if seen else "ORD-000001"
    return f"payments#{key}"


def find_semantics_case(files: Sequence[Any], keys: list[str]) -> Query | None:
    """A query on which the native walk and a plain "hash and time" filter disagree."""
    by_hash = dict(zip(index_key_hashes(keys).tolist(), keys, strict=True)) if keys else {}
    rng = np.random.default_rng(0)
    for h, begin, _t in shadowed_entries(files, 200, rng):
        key = by_hash.get(h)
        if key is None:
            continue
        q = Query(key, 64, begin, JAVA_LONG_MAX)
        trace = trace_query(files, q)
        if set_answer(trace) != trace.answer:
            return q
    return None


def run_demo(
    out: str | Path,
    *,
    size: str | int = "medium",
    engines: Sequence[str] = ("native", "duckdb", "spark"),
    master: str | None = None,
    seed: int = 42,
    echo: Echo = print,
) -> DemoResult:
    """Run the demo into the new (or empty) directory ``out``; see the module doc.

    A demo that fails (an exception, Ctrl-C) removes what it created: everything it wrote
    into ``out``, and ``out`` itself when the demo made it.  A demo that completes keeps its
    output, also when a check disagreed (that output is the evidence).
    """
    out = Path(out)
    n = message_count(size)  # refuse a bad size before anything is written
    created = claim_new_dir(out, "the demo writes a new directory")
    try:
        return _run_demo(out, n, engines=engines, master=master, seed=seed, echo=echo)
    except BaseException:
        remove_created(out, created)
        raise


def claim_new_dir(out: Path, why: str) -> bool:
    """Make ``out`` or take it empty (anything in it is refused, never overwritten); whether
    it was made here, for :func:`remove_created`."""
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"{out}: exists and is not a directory; {why}")
    if out.exists() and any(out.iterdir()):
        raise OutputExistsError(f"{out}: exists and is not empty; {why}")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    return created


def remove_created(out: Path, created: bool) -> None:
    """Undo a failed demo: everything inside ``out`` (it was empty), and ``out`` if new."""
    for child in list(out.iterdir()) if out.is_dir() else []:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    if created:
        shutil.rmtree(out, ignore_errors=True)


def _run_demo(
    out: Path,
    n: int,
    *,
    engines: Sequence[str],
    master: str | None,
    seed: int,
    echo: Echo,
) -> DemoResult:
    hsn, inum = demo_geometry(n)
    geometry = Geometry(hsn, inum)
    spark = "spark" in engines
    times: dict[str, float] = {}
    t0 = time.monotonic()

    _step(echo, 1, "A message stream, written as a real CommitLog")
    commitlog, late = write_demo_commitlog(out, n, seed)
    records = read_index_records(commitlog)

    pq.write_table(records, out / "records.parquet")
    keys = index_keys_of(records)
    (out / "keys.txt").write_text("".join(k + "\n" for k in keys), encoding="utf-8")
    rollbacks = sum(1 for f in records.column("sys_flag").to_pylist() if f & 0xC == 0xC)
    echo(
        f"  {n:,} messages in 5 topics (orders, payments, shipping, inventory, audit), "
        f"{rollbacks} rollbacks, {late} stored out of order"
    )
    echo(f"  CommitLog: {commitlog} ({len(list(commitlog.iterdir()))} files)")
    echo(
        f"  index records: {out / 'records.parquet'}; {len(keys):,} distinct index keys "
        f"in {out / 'keys.txt'}"
    )
    times["stream"] = time.monotonic() - t0

    _step(echo, 2, "The native index, built from the CommitLog as the broker does")
    t = time.monotonic()
    store = out / "store"
    echo(
        f"  rmqarrow build {store} --from-commitlog {commitlog} "
        f"--hash-slot-num {hsn} --index-num {inum}"
    )
    with IndexService(store, geometry=geometry) as service:
        service.build_index_batch(records)
        service.flush()
    svc, _ = open_healthy(store, as_hint(geometry))
    with svc:
        files = list(svc.files)
        entries = sum(f.entry_count for f in files)
        echo(
            f"  {len(files)} index files of {hsn:,} slots x {inum:,} entries, "
            f"{entries:,} entries (UNIQ_KEY first, then each KEYS token; rollbacks skipped)"
        )
        times["build"] = time.monotonic() - t

        _step(echo, 3, "Exported to Parquet")
        t = time.monotonic()

        dataset = out / "dataset"
        manifest = export_store(store, dataset, geometry=geometry)
        rows = {k: v.rows for k, v in as_dataset_manifest(manifest, dataset).tables.items()}
        echo(f"  rmqarrow export {store} {dataset} --hash-slot-num {hsn} --index-num {inum}")
        echo(
            f"  tables: files {rows['files']:,} rows, slots {rows['slots']:,}, "
            f"entries {rows['entries']:,} (entries sorted by slot, position)"
        )
        times["export"] = time.monotonic() - t

        result = DemoResult(out, n, {}, hsn, inum, len(files), entries, times)
        featured = _featured_key(records)
        first_ts = files[0].begin_timestamp
        minute = first_ts - first_ts % 60_000 + 15 * 60_000

        _step(echo, 4, "Questions in DuckDB (over the Parquet dataset)")
        if "duckdb" in engines:
            t = time.monotonic()

            result.questions += ask_duckdb(dataset, featured, minute, echo)
            times["duckdb"] = time.monotonic() - t
        else:
            echo("  skipped: --engines leaves DuckDB out (add duckdb to run this step)")
        _step(echo, 5, "Questions in Spark SQL (over the same dataset)")
        if spark:
            t = time.monotonic()

            result.questions += ask_spark(dataset, featured, master, echo)
            times["spark"] = time.monotonic() - t
        else:
            echo("  skipped: --engines leaves Spark out (add spark to run this step)")

        _step(echo, 6, "Why the native semantics matter: out-of-order store times")
        t = time.monotonic()
        case = find_semantics_case(files, keys)
        if case is None:
            echo("  (no out-of-order entry shadows a key in this stream; try a larger --size)")
        else:
            trace = trace_query(files, case)
            naive = set_answer(trace)
            echo(
                f"  query: key {case.key!r}, begin {case.begin} ({_iso(case.begin)}), "
                "end Long.MAX: every offset stored since"
            )
            echo(f"  plain filter (hash equal, time in range): {naive}")
            echo(f"  native chained lookup:                    {trace.answer}")
            for r in explain(trace, naive):
                echo(f"  why: {r}")
            answers = _engine_answers(engines, store, dataset, case, master, geometry)
            for name, a in answers.items():
                echo(
                    f"  {name:<8} answers {a}: "
                    f"{'the native answer' if a == trace.answer else 'DIFFERENT'}"
                )
            result.semantics = {
                "key": case.key,
                "begin": case.begin,
                "native": trace.answer,
                "plain_filter": naive,
                "engines": answers,
            }
        times["semantics"] = time.monotonic() - t

    _step(echo, 7, "verify: every engine against the native lookup")
    t = time.monotonic()
    report = verify(
        store,
        dataset=dataset,
        engines=list(engines),
        keys=keys,
        sample=300,
        seed=seed,
        master=master,
        geometry=geometry,
    )

    buf = io.StringIO()
    format_report(report, buf)
    for line in buf.getvalue().rstrip("\n").split("\n"):
        echo(f"  {line}" if line else "")
    times["verify"] = time.monotonic() - t
    result.verify = report.to_dict()
    result.ok = report.ok and (
        result.semantics is None
        or all(a == result.semantics["native"] for a in result.semantics["engines"].values())
    )

    _step(echo, 8, "What is where, and what to try next")
    result.paths = {
        "commitlog": str(commitlog),
        "records": str(out / "records.parquet"),
        "keys": str(out / "keys.txt"),
        "store": str(store),
        "dataset": str(dataset),
    }

    buf = io.StringIO()
    print_table(
        [
            ["CommitLog (broker format)", commitlog],
            ["index records (Parquet)", out / "records.parquet"],
            ["every index key, one a line", out / "keys.txt"],
            ["native index store", store],
            ["Parquet dataset", dataset],
        ],
        ["what", "where"],
        buf,
    )
    for line in buf.getvalue().rstrip("\n").split("\n"):
        echo(f"  {line}")
    topic, _, key = featured.partition("#")
    echo("\n  Next:")
    for cmd in (
        f"rmqarrow info {store}",
        f"rmqarrow query {store} --topic {topic} --key {key}",
        f"rmqarrow query {store} --topic {topic} --key {key} --resolve {commitlog} --show",
        f"rmqarrow query {dataset} --engine duckdb --topic {topic} --key {key}",
        f'rmqarrow sql {dataset} "SELECT file_name, count(*) FROM entries GROUP BY 1"',
        # verify's default engines include Spark, whose JVM takes half a minute to start
        f"rmqarrow verify {store} --dataset {dataset} --keys {out / 'keys.txt'} "
        "--engines native,duckdb",
    ):
        echo(f"    {cmd}")
    echo("    (drop --engines to check Spark too: it starts a JVM, about 30 s)")
    times["total"] = time.monotonic() - t0
    echo(f"\n{'OK' if result.ok else 'FAILED'}: demo finished in {times['total']:.1f} s")
    return result


def _engine_answers(
    engines: Sequence[str],
    store: Path,
    dataset: Path,
    q: Query,
    master: str | None,
    geometry: Geometry,
) -> dict[str, list[int]]:
    answers = {}
    for name in engines:
        ds = None if name == "native" else dataset
        answers[name] = answer_with_engine(
            name, store, [q], dataset=ds, master=master, geometry=geometry
        )[0]
    return answers
