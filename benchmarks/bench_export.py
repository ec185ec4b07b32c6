"""Export benchmarks: native file -> Parquet dataset, next to pyarrow writing the same columns.

One index file is generated with :func:`rmqarrow.testing.stores.write_random_file` (numpy
straight into the layout views; cached in ``workdir``): by default 500,000 slots x
2,000,000 positions (1,999,999 entries), with ``--full`` RocketMQ's default geometry
(5,000,000 x 20,000,000: 19,999,999 entries, 480 MB).  Then, in one run:

``export`` (items = entries)
- ``pyarrow write_table, defaults (baseline)``: the entries columns already decoded in
  memory, written by ``pyarrow.parquet.write_table`` with its defaults;
- ``export_store``: the whole export (map, check, decode, sort, write files/slots/entries,
  manifest, atomic rename);
- ``scan_store entries (stream)``: the streaming reader drained, no writing;
- ``import_dataset (round trip)``: the dataset back to a native file, checked byte-identical.

``layout write`` / ``lookup ...`` (the layout choice of rmqarrow.converters.parquet.export): the
same entries
written in several layouts (baseline: position order, 1 Mi-row row groups; all with the
export's encodings: no compression, DELTA_BINARY_PACKED integers; only the write is timed,
the sort is done before), then point
lookups of existing keys: DuckDB ``WHERE slot = s AND key_hash = h`` (the chain walk's
predicate), DuckDB ``WHERE slot = s`` (the whole chain: what the exact walk needs to find
where a chain breaks on time), DuckDB ``WHERE key_hash = h``, and pyarrow
``read_table(filters=...)`` on ``slot`` and ``key_hash``.  Lookup items are queries;
vs_baseline is the queries/s ratio.

Run alone: ``python benchmarks/bench_export.py [--full] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))

from _data import reset_peak, rss_mb
from _report import print_rows
from rmqarrow.converters.arrow.scan import scan_store
from rmqarrow.converters.parquet.export import PARQUET_OPTIONS, ROW_GROUP_ROWS, export_store
from rmqarrow.converters.parquet.importer import import_dataset

from rmqarrow import Geometry
from rmqarrow.testing.stores import write_random_file

MB = 1_000_000


def _file(workdir: Path, full: bool) -> tuple[Path, Geometry, float | None]:
    geometry = Geometry() if full else Geometry(500_000, 2_000_000)
    store = workdir / f"export-store-{geometry.hash_slot_num}x{geometry.index_num}"
    path = store / "20231114221320000"
    if path.exists():
        return path, geometry, None
    store.mkdir(parents=True, exist_ok=True)
    tmp = store / ".gen.tmp"
    tmp.unlink(missing_ok=True)
    t = time.perf_counter()
    write_random_file(tmp, geometry, geometry.index_num - 1, seed=1)
    seconds = time.perf_counter() - t
    tmp.rename(path)
    return path, geometry, seconds


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    gc.collect()
    reset_peak()
    t = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t
    return seconds, rss_mb()[1], result


def _row(
    bench: str,
    variant: str,
    items: int,
    seconds: float,
    base_rate: float | None,
    peak: float | None = None,
    note: str = "",
) -> dict[str, Any]:
    rate = items / seconds
    row: dict[str, Any] = {
        "benchmark": bench,
        "variant": variant,
        "items": items,
        "seconds": round(seconds, 4),
        "per_s": round(rate),
        "vs_baseline": 1.0 if base_rate is None else round(rate / base_rate, 4),
    }
    if peak is not None:
        row["peak_rss_mb"] = round(peak, 1)
    if note:
        row["note"] = note
    return row


def _size(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / MB
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / MB


def _layouts(table: pa.Table, work: Path, full: bool) -> list[dict[str, Any]]:
    """Write the entries in several layouts and time point lookups on each."""
    import duckdb

    rows: list[dict[str, Any]] = []
    n = table.num_rows
    rng = np.random.default_rng(5)
    picks = rng.integers(0, n, 12 if full else 20)
    key_hash = table.column("key_hash").to_numpy()
    slot = table.column("slot").to_numpy()
    queries = [(int(key_hash[i]), int(slot[i])) for i in picks]

    numeric = {name: table.column(name).to_numpy() for name in table.schema.names[1:]}

    def order_by(col: np.ndarray) -> Callable[[], pa.Table]:
        """The export's sort: one int64 sort of col << 32 | row, then numpy gathers."""

        def sort() -> pa.Table:
            key = (col.astype(np.int64) << 32) | np.arange(n, dtype=np.int64)
            key.sort()
            idx = key & 0xFFFFFFFF
            arrays = [table.column("file_name")]  # one file: every value is the same
            arrays += [pa.array(np.take(v, idx)) for v in numeric.values()]
            return pa.Table.from_arrays(arrays, schema=table.schema)

        return sort

    options = {
        k: v
        for k, v in PARQUET_OPTIONS.items()
        if k not in ("write_page_index", "bloom_filter_options")
    }
    variants: list[tuple[str, Callable[[], pa.Table], dict[str, Any]]] = [
        (
            "position order, 1 Mi rg (baseline)",
            lambda: table,
            {**options, "row_group_size": 1 << 20},
        ),
        (
            "position order, 1 Mi rg, bloom key_hash",
            lambda: table,
            {
                **options,
                "row_group_size": 1 << 20,
                "bloom_filter_options": {"key_hash": {"ndv": 1 << 20, "fpp": 0.05}},
            },
        ),
        (
            "key_hash sorted, 128 Ki rg, page index",
            order_by(key_hash),
            {**options, "row_group_size": 1 << 17, "write_page_index": True},
        ),
        (
            "slot sorted, 1 Mi rg, page index",
            order_by(slot),
            {**options, "row_group_size": 1 << 20, "write_page_index": True},
        ),
        (
            "slot sorted, 128 Ki rg, page index",
            order_by(slot),
            {**options, "row_group_size": ROW_GROUP_ROWS, "write_page_index": True},
        ),
        (
            "slot sorted, 128 Ki rg, page index, bloom key_hash (export)",
            order_by(slot),
            {**PARQUET_OPTIONS, "row_group_size": ROW_GROUP_ROWS},
        ),
    ]
    con = duckdb.connect()
    con.execute("SET threads = 2")
    base: dict[str, float] = {}
    for label, make, opts in variants:
        path = work / f"layout-{len(rows)}.parquet"
        ordered = make()
        seconds, _, _ = _timed(
            lambda ordered=ordered, opts=opts, path=path: pq.write_table(ordered, path, **opts)
        )
        del ordered
        rows.append(
            _row(
                "layout write",
                label,
                n,
                seconds,
                base.get("write"),
                note=f"{_size(path):.0f} MB on disk; write only (sorted before)",
            )
        )
        base.setdefault("write", n / seconds)
        lookups: list[tuple[str, Callable[[int, int], int]]] = [
            (
                "lookup duckdb slot+key_hash",
                lambda h, s, p=path: len(
                    con.execute(
                        f"SELECT phy_offset FROM read_parquet('{p}') WHERE slot = {s} "
                        f"AND key_hash = {h}"
                    ).fetchall()
                ),
            ),
            (
                "lookup duckdb slot (whole chain)",
                lambda h, s, p=path: len(
                    con.execute(
                        f"SELECT position, key_hash, store_timestamp FROM read_parquet('{p}') "
                        f"WHERE slot = {s}"
                    ).fetchall()
                ),
            ),
            (
                "lookup duckdb key_hash",
                lambda h, s, p=path: len(
                    con.execute(
                        f"SELECT phy_offset FROM read_parquet('{p}') WHERE key_hash = {h}"
                    ).fetchall()
                ),
            ),
            (
                "lookup pyarrow slot+key_hash",
                lambda h, s, p=path: (
                    pq.read_table(
                        p, columns=["phy_offset"], filters=[("slot", "=", s), ("key_hash", "=", h)]
                    ).num_rows
                ),
            ),
        ]
        for bench, fn in lookups:

            def go(fn: Callable[[int, int], int] = fn) -> int:
                return sum(fn(h, s) for h, s in queries)

            fn(*queries[0])  # warm the page cache and DuckDB's metadata
            seconds, _, found = _timed(go)
            if found < len(queries):
                raise RuntimeError(f"{bench} {label}: {found} rows for {len(queries)} keys")
            rows.append(
                _row(
                    bench,
                    label,
                    len(queries),
                    seconds,
                    base.get(bench),
                    note=f"{seconds / len(queries) * 1000:.1f} ms a lookup",
                )
            )
            base.setdefault(bench, len(queries) / seconds)
        path.unlink()
    return rows


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    """The benchmark rows (see the module doc)."""
    path, geometry, gen_seconds = _file(workdir, full)
    store = path.parent
    geo = {"hash_slot_num": geometry.hash_slot_num, "index_num": geometry.index_num}
    work = workdir / "export-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    rows: list[dict[str, Any]] = []
    try:
        table = scan_store(store, "entries", **geo).read_all()
        n = table.num_rows
        seconds, peak, _ = _timed(lambda: pq.write_table(table, work / "baseline.parquet"))
        base = n / seconds
        rows.append(
            _row(
                "export",
                "pyarrow write_table, defaults (baseline)",
                n,
                seconds,
                None,
                peak,
                f"{_size(work / 'baseline.parquet'):.0f} MB; columns in memory",
            )
        )
        (work / "baseline.parquet").unlink()
        del table
        seconds, peak, _ = _timed(lambda: export_store(store, work / "ds", **geo))
        rows.append(
            _row(
                "export",
                "export_store",
                n,
                seconds,
                base,
                peak,
                f"{_size(work / 'ds'):.0f} MB dataset; target <= 10 s (--full)",
            )
        )
        seconds, peak, count = _timed(
            lambda: sum(b.num_rows for b in scan_store(store, "entries", **geo))
        )
        rows.append(_row("export", "scan_store entries (stream)", count, seconds, base, peak))
        seconds, peak, paths = _timed(lambda: import_dataset(work / "ds", work / "native"))
        same = _same_bytes(paths[0], path)
        rows.append(
            _row(
                "export",
                "import_dataset (round trip)",
                n,
                seconds,
                base,
                peak,
                "byte-identical" if same else "DIFFERENT BYTES",
            )
        )
        if not same:
            raise RuntimeError("import_dataset did not reproduce the file")
        shutil.rmtree(work / "native")
        shutil.rmtree(work / "ds")
        if gen_seconds is not None:
            rows.append(
                _row(
                    "export",
                    "write_random_file (generation)",
                    n,
                    gen_seconds,
                    base,
                    note="numpy straight into the layout views",
                )
            )
        table = scan_store(store, "entries", **geo).read_all()
        rows.extend(_layouts(table, work, full))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _same_bytes(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 24), fb.read(1 << 24)
            if x != y:
                return False
            if not x:
                return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--full", action="store_true", help="RocketMQ's default geometry (19,999,999 entries)"
    )
    parser.add_argument("--workdir", type=Path, help="where the generated file is kept")
    args = parser.parse_args(argv)
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            print_rows(run(args.full, Path(tmp)))
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        print_rows(run(args.full, args.workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
