"""DuckDB benchmarks: the SQL lookup (native semantics) over an exported file, next to the
native engine and a plain hash join.

One index file is generated with :func:`rmqarrow.testing.stores.write_random_file` (random
key hashes, valid chains) and exported with :func:`rmqarrow.converters.parquet.export.export_store`
(entries sorted by slot then position in 128 Ki-row groups, so one slot's rows sit in
one or two row groups).  ``--full``: one full default-geometry file (5,000,000
slots, 19,999,999 entries) and 1,000,000 bulk queries; default: 50,000 x 199,999 and
20,000 queries.  Both are kept in ``workdir`` and reused between runs.

Rows (``vs_baseline`` = the row's per_s divided by its benchmark's baseline per_s):

``single key``   baseline: the native engine (``IndexFile.select_phy_offsets``, file
                 open); ``duckdb index_lookup``: the SQL macro over the Parquet dataset,
                 one statement a key, bound parameters.  Target: <= 30 ms a key (--full).
``bulk``         baseline: a plain hash join of the query hashes with ``entries`` (no
                 semantics: ``key_hash`` equal, nothing else); ``duckdb lookup_table``: every
                 query with native semantics in one statement (precomputed hashes of stored
                 entries, so every query hits); ``duckdb lookup_table (string keys)``: the
                 same from string keys, hashing included (mostly misses); ``native bulk``:
                 ``rmqarrow.IndexFile.select_phy_offsets_many`` on the string keys.
                 Target: <= 2 s for 1 M keys (--full).

Run alone: ``python benchmarks/bench_duckdb.py [--full] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
from _report import peak_rss_mb, print_rows, set_ratios
from _report import row as _plain_row
from rmqarrow.converters.duckdb import sql as duckdb_sql
from rmqarrow.converters.parquet.export import export_store

from rmqarrow import Geometry, IndexFile
from rmqarrow.testing.stores import write_random_file

T = TypeVar("T")


def _prepare(workdir: Path, full: bool) -> tuple[Path, Path, Geometry]:
    geometry = Geometry() if full else Geometry(50_000, 200_000)
    tag = "full" if full else "small"
    store = workdir / f"duckdb-{tag}-store"
    dataset = workdir / f"duckdb-{tag}-dataset"
    if not store.exists():
        store.mkdir(parents=True)
        write_random_file(store / "20240101000000000", geometry, geometry.index_num - 1, seed=5)
    if not (dataset / "entries").exists():
        export_store(
            store, dataset, hash_slot_num=geometry.hash_slot_num, index_num=geometry.index_num
        )
    return store, dataset, geometry


def _best(fn: Callable[[], T], repeats: int) -> tuple[float, T]:
    """The fastest of ``repeats`` runs (the machine is shared) and the last result."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def _row(
    benchmark: str, variant: str, items: int, seconds: float, note: str = ""
) -> dict[str, Any]:
    """A result row with the process's peak RSS so far."""
    return _plain_row(benchmark, variant, items, seconds, note, peak_rss_mb=round(peak_rss_mb(), 1))


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    store, dataset, geometry = _prepare(workdir, full)
    index_file = next(p for p in store.iterdir() if not p.name.startswith("."))
    rng = np.random.default_rng(11)
    n_single = 200 if full else 100
    n_bulk = 1_000_000 if full else 20_000
    repeats = 3
    single_keys = [f"TopicTest#KEY-{i}-{rng.integers(1 << 40)}" for i in range(n_single)]
    rows: list[dict[str, Any]] = []
    best = f"best of {repeats}"

    # -- single key --------------------------------------------------------------------
    with IndexFile.open(index_file, geometry.hash_slot_num, geometry.index_num) as f:
        seconds, native_single = _best(
            lambda: [f.select_phy_offsets(k, 64, 0, 2**63 - 1) for k in single_keys], repeats
        )
    rows.append(_row("single key", "native select_phy_offsets", n_single, seconds, "baseline"))

    t0 = time.perf_counter()
    con = duckdb_sql.connect(dataset)
    connect_s = time.perf_counter() - t0
    stmt = "SELECT phy_offset FROM index_lookup(?, ?) ORDER BY ordinal"
    con.execute(stmt, [single_keys[0], 64]).fetchall()  # warm: footers, macros

    def singles() -> list[list[int]]:
        return [[r[0] for r in con.execute(stmt, [k, 64]).fetchall()] for k in single_keys]

    seconds, duck_single = _best(singles, repeats)
    assert duck_single == native_single
    rows.append(
        _row(
            "single key",
            "duckdb index_lookup (parquet)",
            n_single,
            seconds,
            f"{1000 * seconds / n_single:.1f} ms/key (target <= 30 ms); connect "
            f"{connect_s:.2f} s; {best}",
        )
    )

    # -- bulk ----------------------------------------------------------------------------
    sample = rng.integers(0, geometry.index_num - 1, size=n_bulk)
    stored = con.sql("SELECT key_hash FROM entries").to_arrow_table().column(0).to_numpy()
    hashes = pa.array(stored[sample], pa.int32())
    con.register("bench_q", pa.table({"h": hashes}))
    plain_sql = "SELECT count(*) FROM bench_q q JOIN entries e ON e.key_hash = q.h"
    seconds, plain = _best(lambda: con.sql(plain_sql).fetchall()[0][0], repeats)
    rows.append(
        _row(
            "bulk",
            "plain hash join (parquet)",
            n_bulk,
            seconds,
            f"baseline; {plain:,} rows, key_hash equal only; {best}",
        )
    )

    queries = pa.table({"key_hash": hashes})
    seconds, result = _best(lambda: duckdb_sql.lookup_table(con, queries), repeats)
    rows.append(
        _row(
            "bulk",
            "duckdb lookup_table, stored hashes (parquet)",
            n_bulk,
            seconds,
            f"{result.num_rows:,} offsets; native semantics (target <= 2 s); {best}",
        )
    )

    string_keys = pa.array([f"TopicTest#ORDER-{i:09d}" for i in range(n_bulk)], pa.large_string())
    seconds, by_key = _best(
        lambda: duckdb_sql.lookup_table(con, pa.table({"key": string_keys})), repeats
    )
    rows.append(
        _row(
            "bulk",
            "duckdb lookup_table, string keys (parquet)",
            n_bulk,
            seconds,
            f"{by_key.num_rows:,} offsets; hashing included; {best}",
        )
    )
    con.close()

    with IndexFile.open(index_file, geometry.hash_slot_num, geometry.index_num) as f:
        seconds, native = _best(lambda: f.select_phy_offsets_many(string_keys, 64), repeats)
    assert native.num_rows == by_key.num_rows
    rows.append(
        _row(
            "bulk",
            "native select_phy_offsets_many, string keys",
            n_bulk,
            seconds,
            f"{native.num_rows:,} offsets; {best}",
        )
    )
    return set_ratios(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="full default-geometry file, 1 M keys")
    parser.add_argument("--workdir", type=Path, default=None, help="keep generated data here")
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    args = parser.parse_args(argv)
    if args.workdir is None:
        with tempfile.TemporaryDirectory(prefix="bench_duckdb_") as tmp:
            rows = run(args.full, Path(tmp))
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = run(args.full, args.workdir)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print_rows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
