"""Costs that must stay linear: ``import`` by file count, and the
DuckDB ``index_key_hash`` macro by key length.

    python benchmarks/bench_storage.py

``import`` used to scan every part once per file (quadratic: 400 files took 129 s against
1.6 s to export them); the macro took a ``substring`` per character (quadratic: 320 k
characters, 89 s).  Each row's ``vs_baseline`` is its time per item relative to the
smallest size of the same benchmark in this run: near 1.0 means linear.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from _report import print_rows


def _store(root: Path, files: int) -> Path:
    import pyarrow as pa

    from rmqarrow.index.service import IndexService

    store = root / f"store{files}"
    n = files * 5  # 5 entries a file (index_num 6)
    s = IndexService(store, 16, 6, 64)
    s.build_index_batch(
        pa.table(
            {
                "topic": ["T"] * n,
                "keys": pa.nulls(n, pa.string()),
                "uniq_key": [f"u{i}" for i in range(n)],
                "commit_log_offset": pa.array(range(1000, 1000 + n), pa.int64()),
                "store_timestamp": pa.array([1_700_000_000_000 + i for i in range(n)], pa.int64()),
                "sys_flag": pa.array([0] * n, pa.int32()),
            }
        )
    )
    s.close()
    return store


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    import duckdb
    from rmqarrow.converters.duckdb.walk import HASH_MACROS_SQL
    from rmqarrow.converters.parquet.export import export_store
    from rmqarrow.converters.parquet.importer import import_dataset

    rows: list[dict[str, Any]] = []
    load = (
        " ".join(Path("/proc/loadavg").read_text().split()[:3])
        if os.path.exists("/proc/loadavg")
        else "?"
    )
    base = None
    for files in (100, 400, 1600) if full else (100, 400):
        store = _store(workdir, files)
        export_store(store, workdir / f"ds{files}", hash_slot_num=16, index_num=6)
        t = time.perf_counter()
        import_dataset(workdir / f"ds{files}", workdir / f"out{files}")
        seconds = time.perf_counter() - t
        per = seconds / files
        base = base or per
        rows.append(
            {
                "benchmark": "import by file count",
                "variant": f"{files} files",
                "items": files,
                "seconds": round(seconds, 3),
                "per_s": round(files / seconds, 1),
                "vs_baseline": round(per / base, 3),
                "note": f"loadavg {load}",
            }
        )
    con = duckdb.connect()
    con.execute(HASH_MACROS_SQL)
    base = None
    for length in (20_000, 80_000, 320_000) if full else (20_000, 80_000):
        key = "k" * length
        t = time.perf_counter()
        con.execute("SELECT index_key_hash(?)", [key]).fetchone()
        seconds = time.perf_counter() - t
        per = seconds / length
        base = base or per
        rows.append(
            {
                "benchmark": "duckdb index_key_hash by key length",
                "variant": f"{length} chars",
                "items": length,
                "seconds": round(seconds, 3),
                "per_s": round(length / seconds, 1),
                "vs_baseline": round(per / base, 3),
                "note": f"loadavg {load}",
            }
        )
    return rows


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        print_rows(run(False, Path(d)))
