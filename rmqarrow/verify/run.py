"""``verify``: the same queries through every engine, checked against the native lookup.

The native chained lookup (:func:`rmqarrow.answer_queries`) is the reference.  Each other
engine (DuckDB, Spark SQL, or any :class:`EngineUnderTest` a caller supplies) answers the same
queries; every answer must equal the native one offset for offset, in order.  Each
mismatch is reported with the query, both answers and, where the index tells it, why
(:func:`rmqarrow.verify.diagnose.explain`: out-of-order store times cutting the native chain
early, the file-stop rule, a damaged chain; plus a stale dataset, from the manifest).

Queries come from a list (``queries=``, e.g. a golden ``queries.tsv``) or are sampled
(:mod:`rmqarrow.verify.sampling`): keys present in the index, from ``keys=`` when given, else as
probe keys with the sampled hashes; absent keys; random windows and ``max_num``.

With ``dataset=`` the SQL engines read that exported dataset instead of the store, and
the dataset itself is checked against the native files (:mod:`rmqarrow.verify.dataset_check`).
Whole files are also scanned for damaged chains (:func:`rmqarrow.verify.diagnose.check_chains`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rmqarrow._text import print_table
from rmqarrow.engines import SNAPSHOT_ENGINES, answer_with_engine
from rmqarrow.errors import (
    EngineUnavailableError,
    StoreNotFoundError,
    UsageError,
)
from rmqarrow.format.layout import (
    HEADER_DTYPE,
    Geometry,
    GeometryHint,
    HeaderState,
    StoreSnapshot,
    as_hint,
    geometry_hint,
)
from rmqarrow.format.naming import list_index_files
from rmqarrow.format.queries import Query
from rmqarrow.index.health import expired_during_run
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService, open_healthy
from rmqarrow.kernels.lookup import answer_queries
from rmqarrow.verify.dataset_check import DatasetSourceCheck, check_dataset
from rmqarrow.verify.diagnose import ChainDamage, check_chains, explain, trace_query
from rmqarrow.verify.sampling import sample_queries

__all__ = ["EngineResult", "EngineUnderTest", "Mismatch", "VerifyReport", "format_report", "verify"]

#: Engines reachable by name.

Answerer = Callable[[list[Query]], list[list[int]]]


@dataclass(frozen=True)
class EngineUnderTest:
    """An engine under test: a name and a function answering a list of queries."""

    name: str
    answer: Answerer
    target: str = ""
    #: answers as of the run's pinned snapshot, so a file expired meanwhile can be
    #: compared again over the files left
    pinned: bool = False


@dataclass
class EngineResult:
    """One row of the agreement table."""

    engine: str
    target: str
    queries: int = 0
    offsets_compared: int = 0
    mismatches: int = 0
    seconds: float = 0.0
    error: str | None = None
    skipped: bool = False  # unavailable and not explicitly asked for

    @property
    def status(self) -> str:
        if self.engine == "native":
            return "reference"
        if self.skipped:
            return "skipped"
        if self.error is not None:
            return "error"
        return "ok" if self.mismatches == 0 else "MISMATCH"


@dataclass
class Mismatch:
    """One query on which an engine's answer differs from the native one."""

    engine: str
    index: int
    query: Query
    native: list[int]
    got: list[int]
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "query_index": self.index,
            "key": self.query.key,
            "max_num": self.query.max_num,
            "begin": self.query.begin,
            "end": self.query.end,
            "native": self.native,
            "got": self.got,
            "reasons": self.reasons,
        }


@dataclass
class VerifyReport:
    """Everything ``verify`` found; ``ok`` when every engine agrees and every check passes."""

    store: str
    dataset: str | None
    query_source: str
    queries: list[Query]
    engines: list[EngineResult]
    mismatches: list[Mismatch]
    chain_damage: list[ChainDamage]
    dataset_check: DatasetSourceCheck | None
    seconds: float = 0.0
    #: files of the snapshot the broker expired (deleted) during the run: left out
    expired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            not self.mismatches
            and all(e.error is None or e.skipped for e in self.engines)
            and (self.dataset_check is None or self.dataset_check.ok)
            and not self.chain_damage
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "store": self.store,
            "dataset": self.dataset,
            "query_source": self.query_source,
            "queries": len(self.queries),
            "engines": [
                {
                    "engine": e.engine,
                    "target": e.target,
                    "status": e.status,
                    "queries": e.queries,
                    "offsets_compared": e.offsets_compared,
                    "mismatches": e.mismatches,
                    "seconds": round(e.seconds, 3),
                    "error": e.error,
                }
                for e in self.engines
            ],
            "mismatches": [m.to_dict() for m in self.mismatches],
            "chain_damage": [d.describe() for d in self.chain_damage],
            "dataset_check": None if self.dataset_check is None else self.dataset_check.to_dict(),
            "seconds": round(self.seconds, 3),
            "expired_during_run": list(self.expired),
        }


def _named_engine(
    name: str,
    store: Path,
    dataset: Path | None,
    master: str | None,
    geometry: GeometryHint,
    snapshot: Callable[[], StoreSnapshot] | None = None,
) -> EngineUnderTest:
    """A named engine of :mod:`rmqarrow.engines`; one that can answers as of
    ``snapshot()`` (the run's pinned headers, read at each call)."""
    ds = None if name == "native" else dataset
    pin = snapshot is not None and ds is None and ("index", name) in SNAPSHOT_ENGINES

    def answer(queries: list[Query]) -> list[list[int]]:
        return answer_with_engine(
            name,
            store,
            queries,
            dataset=ds,
            master=master,
            geometry=geometry,
            snapshot=dict(snapshot()) if pin and snapshot is not None else None,
        )

    target = f"dataset {ds}" if ds is not None else f"store {store}"
    return EngineUnderTest(name, answer, target, pinned=pin)


def verify(
    store: str | os.PathLike[str],
    *,
    dataset: str | os.PathLike[str] | None = None,
    engines: Sequence[str | EngineUnderTest] = ("native", "duckdb"),
    queries: Sequence[Query] | None = None,
    keys: Sequence[str] | None = None,
    sample: int = 200,
    seed: int = 0,
    master: str | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    required: Sequence[str] | None = None,
    explain_limit: int = 50,
    check_dataset_sample: int = 200,
    chain_check: bool = True,
) -> VerifyReport:
    """Run the same queries through ``engines`` and compare each with the native answer.

    ``queries`` are used as given; otherwise ``sample`` queries are drawn (``seed``),
    using ``keys`` (full index keys) when given.  An engine named in ``engines`` but not in
    ``required`` (default: all of them) that turns out unavailable (no pyspark, no Java)
    is reported as skipped instead of failing the run.  At most ``explain_limit``
    mismatches are traced for an explanation.  ``chain_check`` scans every file for damaged
    chains (one sort per file: about a second for a full default-geometry file).
    The geometry is ``geometry`` (a :class:`~rmqarrow.GeometryHint` or a complete
    :class:`~rmqarrow.Geometry`) or ``hash_slot_num``/``index_num`` (not both forms);
    what is not given is fitted from the files.
    """
    hint = geometry_hint(geometry, hash_slot_num, index_num)
    started = time.monotonic()
    store_path = Path(store)
    ds_path = None if dataset is None else Path(dataset)
    if all((store_path / t).is_dir() for t in ("files", "slots", "entries")):
        raise UsageError(
            f"{store_path}: is a Parquet dataset; verify needs the native store as the "
            f"reference: rmqarrow verify STORE --dataset {store_path}"
        )
    service = _open_service(store_path, hint)
    expired: list[str] = []
    with service:
        # the snapshot every engine answers as of: each file's header pinned once
        files = list(service.files)
        snapshot = {f.name: f.pin() for f in files}
        if not files:
            raise StoreNotFoundError(f"{store_path}: no index files to verify")
        for _attempt in range(_ROUNDS):
            try:
                if queries is not None:
                    qs = list(queries)
                    source = f"{len(qs):,} given queries"
                else:
                    qs = sample_queries(files, sample, seed=seed, keys=keys)
                    kind = "keys from the key list" if keys is not None else "probe keys"
                    source = (
                        f"{len(qs):,} sampled queries (seed {seed}; {kind} for sampled "
                        "entries, absent keys, random windows)"
                    )
                chain_damage = check_chains(files) if chain_check else []
                ds_check = None
                if ds_path is not None:
                    ds_check = check_dataset(
                        ds_path, store_path, files, sample=check_dataset_sample, seed=seed
                    )
                t0 = time.monotonic()
                native = _native_answers(files, qs)
                break
            except FileNotFoundError:
                left = _drop_expired(files, snapshot, expired)
                if len(left) == len(files):
                    raise  # not a file of the store expiring
                files = left
        else:
            raise StoreNotFoundError(
                f"{store_path}: index files expired under every one of {_ROUNDS} tries; "
                "verify a copy of the store"
            )
        fitted = as_hint(hint.or_else(files[-1].geometry))
        results = [
            EngineResult(
                "native",
                f"store {store_path}",
                len(qs),
                sum(len(a) for a in native),
                0,
                time.monotonic() - t0,
            )
        ]
        mismatches: list[Mismatch] = []
        explained = 0
        want = (
            set(required)
            if required is not None
            else {e if isinstance(e, str) else e.name for e in engines}
        )
        for spec in engines:
            if spec == "native" or (isinstance(spec, EngineUnderTest) and spec.name == "native"):
                continue
            engine = (
                spec
                if isinstance(spec, EngineUnderTest)
                else _named_engine(spec, store_path, ds_path, master, fitted, lambda: snapshot)
            )
            result = EngineResult(engine.name, engine.target, len(qs))
            results.append(result)
            t0 = time.monotonic()
            try:
                answers = engine.answer(list(qs))
                reference = native
                bad = _differing(native, answers)
                # a file the broker expired while the engine read: compare the queries
                # that differ again over the files left, both sides as of the snapshot
                for _attempt in range(_ROUNDS):
                    if not (bad and engine.pinned):
                        break
                    left = _drop_expired(files, snapshot, expired)
                    if len(left) == len(files):
                        break
                    files = left
                    again = [qs[i] for i in bad]
                    fresh = _native_answers(files, again)
                    redo = engine.answer(again)
                    reference = list(reference)
                    answers = list(answers)
                    for i, a, b in zip(bad, fresh, redo, strict=True):
                        reference[i], answers[i] = a, b
                    bad = _differing(reference, answers)
            except EngineUnavailableError as exc:
                result.error = str(exc)
                result.skipped = engine.name not in want
                continue
            except Exception as exc:  # any engine failure is a finding, reported
                result.error = f"{type(exc).__name__}: {exc}"
                continue
            result.seconds = time.monotonic() - t0
            if len(answers) != len(qs):
                result.error = f"returned {len(answers)} answers for {len(qs)} queries"
                continue
            changed = None if engine.pinned else _changed_since(files, snapshot, store_path)
            for i, (q, a, b) in enumerate(zip(qs, reference, answers, strict=True)):
                got = [int(o) for o in b]
                result.offsets_compared += max(len(a), len(got))
                if a == got:
                    continue
                result.mismatches += 1
                reasons: list[str] = []
                if explained < explain_limit:
                    explained += 1
                    try:
                        trace = trace_query(files, q)
                    except StoreNotFoundError as exc:  # the broker expired a file since
                        reasons = [f"not traced: {exc} (expired during the run)"]
                    else:
                        reasons = explain(trace, got)
                        if trace.answer != a:
                            reasons.insert(
                                0,
                                f"the native bulk lookup gave {a} but the scalar "
                                f"chained walk gives {trace.answer}: a native bug",
                            )
                if changed and engine.target.startswith("store"):
                    reasons.insert(
                        0,
                        f"the store changed during the run ({changed}) and the "
                        f"{engine.name} engine reads it as it is, not as of the run's "
                        "snapshot (duckdb does): compare it over an export (--dataset)",
                    )
                if ds_check is not None and ds_check.stale and engine.target.startswith("dataset"):
                    reasons.insert(
                        0,
                        "stale dataset: the store changed after the export ("
                        + "; ".join(ds_check.stale[:3])
                        + ")",
                    )
                mismatches.append(Mismatch(engine.name, i, q, list(a), got, reasons))
    return VerifyReport(
        str(store_path),
        None if ds_path is None else str(ds_path),
        source,
        qs,
        results,
        mismatches,
        chain_damage,
        ds_check,
        time.monotonic() - started,
        expired,
    )


#: Tries before a store whose files keep expiring under the run is refused
_ROUNDS = 3


def _open_service(store: Path, geometry: GeometryHint) -> IndexService:
    """The healthy files, loaded; a file expired (deleted) between the listing and the
    load is not damage: the store is listed again."""
    for _attempt in range(_ROUNDS):
        try:
            service, _note = open_healthy(store, geometry)
            return service
        except FileNotFoundError as exc:
            if not store.exists():
                raise
            last = exc
    raise StoreNotFoundError(
        f"{store}: index files expired under every one of {_ROUNDS} loads ({last}); verify "
        "a copy of the store"
    )


def _drop_expired(
    files: list[IndexFile], snapshot: dict[str, HeaderState], expired: list[str]
) -> list[IndexFile]:
    """``files`` without those deleted since the snapshot (a broker expires its oldest
    files), each named once in a note; the snapshot loses them too."""
    left = []
    for f in files:
        if f.path.exists():
            left.append(f)
            continue
        expired.append(f.name)
        snapshot.pop(f.name, None)
        expired_during_run(f.path)
    if not left:
        raise StoreNotFoundError(
            f"{files[0].path.parent}: every index file expired during the run; nothing to verify"
        )
    return left


def _native_answers(files: Sequence[IndexFile], queries: Sequence[Query]) -> list[list[int]]:
    """The native lookup over ``files`` as of their pinned headers (no batch cap), each
    file's pages released once walked: memory flat in the number of files."""
    return answer_queries(files, queries, release=True)


def _differing(reference: Sequence[Sequence[int]], answers: Sequence[Sequence[int]]) -> list[int]:
    if len(reference) != len(answers):
        return []
    return [
        i
        for i, (a, b) in enumerate(zip(reference, answers, strict=True))
        if list(a) != [int(o) for o in b]
    ]


def _changed_since(
    files: Sequence[IndexFile], snapshot: dict[str, HeaderState], store: Path
) -> str:
    """What changed in the store since the snapshot (grown or expired files, new ones),
    or nothing."""

    grown = gone = 0
    for f in files:
        pinned = snapshot.get(f.name)
        try:
            now = np.fromfile(f.path, dtype=HEADER_DTYPE, count=1)
        except FileNotFoundError:
            gone += 1
            continue
        if pinned is not None and now.size and int(now["index_count"][0]) != pinned.index_count:
            grown += 1
    try:
        names = {p.name for p in ([store] if store.is_file() else list_index_files(store))}
    except FileNotFoundError:
        names = set()
    born = len(names - set(snapshot))
    parts = [
        f"{n} {what}"
        for n, what in ((grown, "files grew"), (born, "files were born"), (gone, "expired"))
        if n
    ]
    return ", ".join(parts)


def print_engine_table(engines: Sequence[EngineResult], compared: str, out: Any) -> None:
    """The agreement table, one row an engine, then each engine's error or skip reason."""
    rows = [
        [
            e.engine,
            e.target,
            e.queries,
            e.offsets_compared,
            e.mismatches,
            e.status,
            round(e.seconds, 3),
        ]
        for e in engines
    ]
    print_table(
        rows, ["engine", "target", "queries", compared, "mismatches", "status", "seconds"], out
    )
    for e in engines:
        if e.error is not None:
            print(f"\n{e.engine}: {'skipped' if e.skipped else 'error'}: {e.error}", file=out)


def format_report(report: VerifyReport, out: Any = None, *, max_mismatches: int = 50) -> None:
    """Print the agreement table, every mismatch (up to ``max_mismatches``) and the checks."""
    out = out or sys.stdout
    print(f"store: {report.store}", file=out)
    if report.dataset:
        print(f"dataset: {report.dataset}", file=out)
    print(f"queries: {report.query_source}", file=out)
    if report.expired:
        print(
            f"expired during the run (deleted, as a broker expires its oldest files), "
            f"skipped: {', '.join(report.expired)}",
            file=out,
        )
    print(file=out)
    print_engine_table(report.engines, "offsets compared", out)
    if report.chain_damage:
        print("\ndamaged chains (prev_index / slot heads off the slots' entry order):", file=out)
        for d in report.chain_damage:
            print(f"  {d.describe()}", file=out)
    if report.dataset_check is not None:
        c = report.dataset_check
        print(
            f"\ndataset check: {c.files_checked} files rows, {c.entries_sampled} sampled "
            f"entries compared with the native files: {'ok' if c.ok else 'PROBLEMS'}",
            file=out,
        )
        for s in c.stale:
            print(f"  stale: {s}", file=out)
        for p in c.problems:
            print(f"  {p}", file=out)
    for m in report.mismatches[:max_mismatches]:
        q = m.query
        print(
            f"\nmismatch #{m.index} ({m.engine}): key {q.key!r} max_num {q.max_num} "
            f"begin {q.begin} end {q.end}",
            file=out,
        )
        print(f"  native: {m.native}", file=out)
        print(f"  {m.engine}: {m.got}", file=out)
        for r in m.reasons or ["(not traced; raise the explanation limit)"]:
            print(f"  why: {r}", file=out)
    if len(report.mismatches) > max_mismatches:
        print(f"\n... {len(report.mismatches) - max_mismatches} more mismatches", file=out)
    verdict = "OK: every engine agrees with the native lookup" if report.ok else "FAILED"
    print(f"\n{verdict} ({report.seconds:.1f} s)", file=out)
