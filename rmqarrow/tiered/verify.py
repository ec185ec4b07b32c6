"""``verify`` for tiered index files: every engine's answers against the native tiered lookup.

The native engine (:func:`rmqarrow.tiered.answer_queries`) is the reference; DuckDB and
Spark (:mod:`rmqarrow.tiered.duckdb`, :mod:`rmqarrow.tiered.spark`)
answer the same queries over the files or an exported tiered dataset, and every answer must
equal the native one item for item (a failing read must fail too).  The report reuses the
agreement table of :mod:`rmqarrow.verify.run` (:class:`~rmqarrow.verify.run.EngineResult`).
For a local (unsealed) file it also lists the queries whose RocketMQ answer changes when
the file is uploaded (:func:`rmqarrow.tiered.form_differences`).

Queries come from a list or are sampled from the stored items: probe keys with the items'
hashes (the key text is not stored), windows around their times, and absent keys.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqarrow.engines import answer_with_engine, parse_engines
from rmqarrow.errors import EngineUnavailableError, RmqArrowError
from rmqarrow.format.java import JAVA_LONG_MAX, JAVA_LONG_MIN
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.tiered import (
    FormDifference,
    TieredAnswer,
    TieredIndexFile,
    TieredQuery,
    answer_queries,
    form_differences,
    open_tiered,
)
from rmqarrow.tiered.arrow.tables import tiered_tables
from rmqarrow.verify.run import EngineResult, print_engine_table
from rmqarrow.verify.sampling import probe_key

__all__ = [
    "TieredMismatch",
    "TieredVerifyReport",
    "format_tiered_report",
    "sample_tiered_queries",
    "verify_tiered",
]

_MAX_COUNTS = (1, 2, 4, 16, 64, 1000)


def describe(answer: TieredAnswer) -> str:
    """An answer in one line: item count and the first (queueId, offset) pairs, or the error."""
    if isinstance(answer, Exception):
        return f"error: {type(answer).__name__}"
    pairs = ", ".join(f"({i.queue_id},{i.offset})" for i in answer[:6])
    more = f", ... {len(answer) - 6} more" if len(answer) > 6 else ""
    return f"{len(answer)} items [{pairs}{more}]"


def _same(a: TieredAnswer, b: TieredAnswer) -> bool:
    if isinstance(a, Exception) or isinstance(b, Exception):
        return isinstance(a, Exception) and isinstance(b, Exception)
    return a == b


@dataclass
class TieredMismatch:
    """One query on which an engine differs from the native tiered lookup."""

    engine: str
    index: int
    query: TieredQuery
    native: TieredAnswer
    got: TieredAnswer

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "query_index": self.index,
            "query": list(self.query),
            "native": describe(self.native),
            "got": describe(self.got),
        }


@dataclass
class TieredVerifyReport:
    """What :func:`verify_tiered` found; ``ok`` when every engine agrees."""

    target: str
    dataset: str | None
    query_source: str
    queries: list[TieredQuery]
    exact: bool
    engines: list[EngineResult]
    mismatches: list[TieredMismatch]
    form_differences: list[FormDifference] | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and all(e.error is None or e.skipped for e in self.engines)

    def to_dict(self) -> dict[str, Any]:
        diffs = self.form_differences
        return {
            "ok": self.ok,
            "target": self.target,
            "dataset": self.dataset,
            "query_source": self.query_source,
            "queries": len(self.queries),
            "exact": self.exact,
            "engines": [
                {
                    "engine": e.engine,
                    "target": e.target,
                    "status": e.status,
                    "queries": e.queries,
                    "items_compared": e.offsets_compared,
                    "mismatches": e.mismatches,
                    "seconds": round(e.seconds, 3),
                    "error": e.error,
                }
                for e in self.engines
            ],
            "mismatches": [m.to_dict() for m in self.mismatches],
            "form_differences": None
            if diffs is None
            else [
                {
                    "query_index": d.index,
                    "local": describe(d.local),
                    "compacted": describe(d.compacted),
                    "reason": d.reason(),
                }
                for d in diffs
            ],
            "seconds": round(self.seconds, 3),
        }


def sample_tiered_queries(
    target: str | os.PathLike[str],
    n: int,
    seed: int = 0,
    geometry: GeometryHint = GeometryHint.NONE,
) -> list[TieredQuery]:
    """``n`` queries: 3 in 4 for stored hashes (probe keys), the rest for absent keys."""
    rng = random.Random(seed)
    items = tiered_tables(target, geometry).items
    hashes = items.column("hash_code").to_pylist()
    times = items.column("store_time").to_pylist()
    out: list[TieredQuery] = []
    for _ in range(n):
        if hashes and rng.random() < 0.75:
            i = rng.randrange(len(hashes))
            h, t = hashes[i], times[i]
            if h < 0:  # Integer.MIN_VALUE: no probe key; ask for an absent one instead
                h = rng.randrange(1 << 31)
        else:
            h, t = rng.randrange(1 << 31), None
        key = probe_key(h, "verify#probe-")[len("verify#") :]
        if t is None or rng.random() < 0.4:
            begin, end = JAVA_LONG_MIN, JAVA_LONG_MAX
        else:
            width = rng.choice((0, 1000, 60_000, 3_600_000))
            begin, end = max(t - width, JAVA_LONG_MIN), min(t + width, JAVA_LONG_MAX)
        out.append(TieredQuery("verify", key, rng.choice(_MAX_COUNTS), begin, end))
    return out


def verify_tiered(
    target: str | os.PathLike[str],
    *,
    engines: Sequence[str] = ("native", "duckdb", "spark"),
    queries: Sequence[Sequence[object]] | None = None,
    sample: int = 200,
    seed: int = 0,
    dataset: str | os.PathLike[str] | None = None,
    exact: bool = False,
    master: str | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    required: Sequence[str] = ("duckdb",),
) -> TieredVerifyReport:
    """Answer the queries with each engine and compare with the native tiered lookup.

    An engine that cannot start is an error when named in ``required``, else skipped.
    The geometry is ``geometry`` or ``hash_slot_num``/``index_num`` (not both forms);
    what is not given is found from the files by the tiered rules.
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    started = time.monotonic()
    parse_engines(",".join(engines), "engines")  # unknown names refused up front
    if queries is None:
        qs = sample_tiered_queries(target, sample, seed, hint)
        source = f"{sample} sampled (seed {seed})"
    else:
        qs = [TieredQuery(*q) for q in queries]  # type: ignore[arg-type]
        source = f"{len(qs)} given"
    t0 = time.monotonic()
    native = answer_queries(target, qs, exact=exact, geometry=hint)
    results = [
        EngineResult(
            "native",
            str(target),
            len(qs),
            sum(len(a) for a in native if isinstance(a, list)),
            0,
            time.monotonic() - t0,
        )
    ]
    mismatches: list[TieredMismatch] = []
    for name in [e for e in engines if e != "native"]:
        src = Path(dataset) if dataset is not None else Path(target)
        res = EngineResult(name, str(src), len(qs))
        t0 = time.monotonic()
        try:
            got = answer_with_engine(
                name,
                src,
                qs,
                fmt="tiered",
                exact=exact,
                master=master,
                geometry=hint,
            )
        except (ImportError, EngineUnavailableError) as exc:
            res.error, res.skipped = f"unavailable: {exc}", name not in required
            results.append(res)
            continue
        except RmqArrowError as exc:
            res.error = str(exc)
            results.append(res)
            continue
        res.seconds = time.monotonic() - t0
        for i, (a, b) in enumerate(zip(native, got, strict=True)):
            res.offsets_compared += len(a) if isinstance(a, list) else 0
            if not _same(a, b):
                res.mismatches += 1
                mismatches.append(TieredMismatch(name, i, qs[i], a, b))
        results.append(res)
    diffs = None
    opened, _ = open_tiered(target, hint)
    with opened:
        if isinstance(opened, TieredIndexFile):
            diffs = form_differences(opened, qs)
    return TieredVerifyReport(
        str(target),
        None if dataset is None else str(dataset),
        source,
        qs,
        exact,
        results,
        mismatches,
        diffs,
        time.monotonic() - started,
    )


def format_tiered_report(
    report: TieredVerifyReport, out: Any = None, *, max_mismatches: int = 50
) -> None:
    """The agreement table, the mismatches and the form differences, as text."""
    out = out or sys.stdout
    print(f"tiered target: {report.target}", file=out)
    if report.dataset:
        print(f"dataset: {report.dataset}", file=out)
    print(f"queries: {report.query_source}{' (exact mode)' if report.exact else ''}", file=out)
    print(file=out)
    print_engine_table(report.engines, "items compared", out)
    for m in report.mismatches[:max_mismatches]:
        print(f"\nmismatch #{m.index} ({m.engine}): {list(m.query)}", file=out)
        print(f"  native: {describe(m.native)}", file=out)
        print(f"  {m.engine}: {describe(m.got)}", file=out)
    if report.form_differences is not None:
        d = report.form_differences
        print(
            f"\nlocal vs uploaded form: {len(d)} of {len(report.queries)} queries get a "
            "different RocketMQ answer once this file is uploaded",
            file=out,
        )
        for x in d[:10]:
            print(
                f"  #{x.index}: local {describe(x.local)}, uploaded {describe(x.compacted)}"
                f" ({x.reason()})",
                file=out,
            )
    verdict = "OK: every engine agrees with the native tiered lookup" if report.ok else "FAILED"
    print(f"\n{verdict} ({report.seconds:.1f} s)", file=out)
