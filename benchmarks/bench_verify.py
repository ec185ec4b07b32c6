"""Verify benchmarks: what one ``verify`` run costs, stage by stage, next to the native answer.

A store is built from the demo's message stream (:mod:`rmqarrow.testing.stream`; cached in
``workdir``): 30,000 messages (~78,000 entries, 8 files) by default, 300,000 with
``--full``.  Then, for ``Q`` sampled queries (items = queries in every row, so ``per_s``
is queries per second and ``vs_baseline`` the speed relative to the native answer):

- ``native answer_queries (baseline)``: the reference answers alone;
- ``sample_queries``: drawing the queries (entries, shadowed entries, absent keys);
- ``check_chains``: the damaged-chain scan of every file;
- ``check_dataset``: the dataset against the native files;
- ``duckdb answer_queries (dataset)``: the DuckDB engine over the exported dataset;
- ``trace_query + explain``: the per-mismatch explanation (run on every query here);
- ``verify native+duckdb (total)``: the whole run, dataset given.

Run alone: ``python benchmarks/bench_verify.py [--full] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _report import print_rows, timed

from rmqarrow.demo.run import demo_geometry, read_index_records, write_demo_commitlog
from rmqarrow.format.layout import GeometryHint
from rmqarrow.index.service import IndexService, answer_queries, open_healthy


def _store(workdir: Path, messages: int) -> tuple[Path, Path, int, int]:
    root = workdir / f"verify-bench-{messages}"
    hsn, inum = demo_geometry(messages)
    store, dataset = root / "store", root / "dataset"
    if not (root / "done").exists():
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        commitlog, _ = write_demo_commitlog(root, messages, 42)
        with IndexService(store, hsn, inum) as service:
            service.build_index_batch(read_index_records(commitlog))
            service.flush()
        from rmqarrow.converters.parquet.export import export_store

        export_store(store, dataset, hash_slot_num=hsn, index_num=inum)
        (root / "done").touch()
    return store, dataset, hsn, inum


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    from rmqarrow.converters.duckdb.sql import answer_queries as duck_answers

    from rmqarrow.verify import verify
    from rmqarrow.verify.dataset_check import check_dataset
    from rmqarrow.verify.diagnose import check_chains, explain, trace_query
    from rmqarrow.verify.sampling import sample_queries

    messages = 300_000 if full else 30_000
    n = 5_000 if full else 1_000
    store, dataset, hsn, inum = _store(workdir, messages)
    service, _ = open_healthy(store, GeometryHint(hsn, inum))
    rows: list[dict[str, Any]] = []
    with service:
        files = service.files
        entries = sum(f.entry_count for f in files)
        queries = sample_queries(files, n, seed=1)  # warm-up (hash kernel)
        answer_queries(store, queries[:10], hash_slot_num=hsn, index_num=inum)
        stages: list[tuple[str, Callable[[], Any]]] = [
            (
                "native answer_queries (baseline)",
                lambda: answer_queries(store, queries, hash_slot_num=hsn, index_num=inum),
            ),
            ("sample_queries", lambda: sample_queries(files, n, seed=1)),
            ("check_chains", lambda: check_chains(files)),
            ("check_dataset", lambda: check_dataset(dataset, store, files)),
            ("duckdb answer_queries (dataset)", lambda: duck_answers(dataset, queries)),
            (
                "trace_query + explain",
                lambda: [explain(trace_query(files, q), []) for q in queries],
            ),
            (
                "verify native+duckdb (total)",
                lambda: verify(
                    store,
                    dataset=dataset,
                    engines=["native", "duckdb"],
                    sample=n,
                    seed=1,
                    hash_slot_num=hsn,
                    index_num=inum,
                ),
            ),
        ]
        base_rate = None
        for variant, fn in stages:
            seconds, _result = timed(fn)
            rate = n / seconds if seconds > 0 else float("inf")
            base_rate = base_rate or rate
            rows.append(
                {
                    "benchmark": "verify stages",
                    "variant": variant,
                    "items": n,
                    "seconds": round(seconds, 4),
                    "per_s": round(rate, 1),
                    "vs_baseline": round(rate / base_rate, 4),
                    "note": f"{len(files)} files, {entries:,} entries, {messages:,} messages",
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.gettempdir()) / "rmqarrow-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    print_rows(run(args.full, workdir))


if __name__ == "__main__":
    main()
