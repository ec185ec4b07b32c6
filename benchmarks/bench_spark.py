"""Spark benchmarks (``local[2]``): bulk lookup with native semantics, and the native data
source's read speed, each next to a baseline measured in the same run.

One index file is generated with :func:`rmqarrow.testing.stores.write_random_file` (random
key hashes, valid chains) and exported with the local exporter
(:func:`rmqarrow.converters.parquet.export.export_store`).  ``--full``: one full default-geometry
file
(5,000,000 slots, 19,999,999 entries) and 1,000,000 keys; default: 50,000 x 199,999 and
20,000 keys.  Data is kept in ``workdir`` and reused between runs.  Every action writes to
Spark's ``noop`` sink, so all rows and columns are computed and nothing is collected.

Rows (``vs_baseline`` = the row's per_s divided by its benchmark's baseline per_s):

``bulk lookup``  baseline: a plain broadcast hash join of the query hashes with ``entries``
                 over Parquet (``key_hash`` equal, no semantics); ``native semantics``:
                 :func:`rmqarrow.converters.spark.sql.lookup` (files newest first, chain cut at the
                 first entry older than begin, max_num) on hashes of stored entries (every
                 query hits); ``bulk_lookup string keys``: :func:`bulk_lookup` from string
                 keys, the hash computed in the JVM, answers joined back to the keys.
                 Target: <= 20 s for 1 M keys (--full).
``read entries`` baseline: Spark's Parquet reader over the exported entries; ``rocketmq-index
                 data source``: the Python data source over the native file (Arrow
                 batches).  Target: >= 5 M rows/s (--full).

``one-key query`` (``--pushdown``, its own run): a ``key_hash = h`` query through the
                 ``rocketmq-index`` data source over ``--pushdown-files`` (default 3) full
                 default-geometry files (~420 MB each, written to a temporary directory
                 and deleted after), without pushdown (baseline: every entry decoded, Spark
                 filters) and with it (the slot's chain in each file).  Target: >= 50x
                 faster and < 5 s on local[2].

Run alone: ``python benchmarks/bench_spark.py [--full] [--workdir DIR] [--pushdown]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from _report import print_rows, row, set_ratios
from rmqarrow.converters.parquet.export import export_store

from rmqarrow import Geometry
from rmqarrow.testing.stores import write_random_file

MASTER = "local[2]"


SIZES = {  # name: (geometry, keys)
    "small": (Geometry(50_000, 200_000), 20_000),
    "medium": (Geometry(1_250_000, 5_000_000), 250_000),
    "full": (Geometry(), 1_000_000),
}


def _prepare(workdir: Path, tag: str) -> tuple[Path, Path, Geometry]:
    geometry = SIZES[tag][0]
    store = workdir / f"spark-{tag}-store"
    dataset = workdir / f"spark-{tag}-dataset"
    if not store.exists():
        tmp = workdir / f".spark-{tag}-store.tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        for p in tmp.iterdir():
            p.unlink()
        write_random_file(tmp / "20240101000000000", geometry, geometry.index_num - 1, seed=5)
        tmp.rename(store)
    if not dataset.exists():
        export_store(
            store, dataset, hash_slot_num=geometry.hash_slot_num, index_num=geometry.index_num
        )
    return store, dataset, geometry


def _timed_noop(df: Any) -> float:
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def run(full: bool, workdir: Path, size: str | None = None) -> list[dict[str, Any]]:
    """The benchmark rows; ``size`` (small/medium/full) overrides ``full`` for tuning."""
    tag = size or ("full" if full else "small")
    from pyspark.sql import functions as F
    from rmqarrow.converters.arrow.tables import file_tables
    from rmqarrow.converters.spark import sql as spark_sql
    from rmqarrow.converters.spark.session import get_spark
    from rmqarrow.converters.spark.source import FORMAT, register

    store, dataset, geometry = _prepare(workdir, tag)
    n_keys = SIZES[tag][1]
    full = tag != "small"
    spark = get_spark(
        MASTER,
        app_name="rmqarrow-bench-spark",
        conf={
            "spark.driver.memory": "6g" if full else "2g",
            "spark.sql.shuffle.partitions": "8" if full else "2",
            "spark.sql.autoBroadcastJoinThreshold": str(256 << 20),
            "spark.ui.enabled": "false",
        },
    )
    register(spark)
    rows: list[dict[str, Any]] = []
    kw = {"hash_slot_num": geometry.hash_slot_num, "index_num": geometry.index_num}

    # -- read entries ------------------------------------------------------------------
    n_entries = geometry.index_num - 1
    parquet = spark.read.parquet(str(dataset / "entries"))
    _timed_noop(parquet.limit(10))  # warm the session
    seconds = _timed_noop(parquet)
    rows.append(row("read entries", "spark parquet reader", n_entries, seconds, "baseline"))
    native = (
        spark.read.format(FORMAT)
        .option("hash_slot_num", geometry.hash_slot_num)
        .option("index_num", geometry.index_num)
        .load(str(store))
    )
    _timed_noop(native.where("position < 0"))  # warm the Python workers (a full pass)
    seconds = _timed_noop(native)
    rows.append(
        row(
            "read entries",
            "rocketmq-index data source",
            n_entries,
            seconds,
            "target >= 5 M rows/s (--full)",
        )
    )

    # -- bulk lookup -------------------------------------------------------------------
    spark_sql.register_tables(spark, dataset)
    entries_hashes = file_tables(next(store.iterdir()), **kw).entries.column("key_hash")
    rng = np.random.default_rng(3)
    picked = entries_hashes.to_numpy()[rng.integers(0, n_entries, n_keys)]
    queries = spark.createDataFrame(
        pa.table(
            {
                "qid": pa.array(np.arange(n_keys, dtype=np.int64)),
                "key_hash": pa.array(picked, pa.int32()),
                "max_num": pa.array(np.full(n_keys, 64, dtype=np.int64)),
                "begin_ms": pa.array(np.zeros(n_keys, dtype=np.int64)),
                "end_ms": pa.array(np.full(n_keys, 2**63 - 1, dtype=np.int64)),
            }
        )
    ).cache()
    queries.count()
    entries = spark.table("entries")
    plain = entries.join(F.broadcast(queries.select("key_hash")), "key_hash").select(
        "key_hash", "phy_offset"
    )
    seconds = _timed_noop(plain)
    rows.append(
        row("bulk lookup", "plain broadcast hash join (no semantics)", n_keys, seconds, "baseline")
    )
    seconds = _timed_noop(spark_sql.lookup(spark, queries))
    rows.append(
        row(
            "bulk lookup",
            "native semantics, stored hashes (all hit)",
            n_keys,
            seconds,
            "target <= 20 s for 1 M keys (--full)",
        )
    )
    key_table = pa.table({"key": pa.array([f"TopicTest#KEY-{i}" for i in range(n_keys)])})
    keys = spark.createDataFrame(key_table).cache()
    keys.count()
    seconds = _timed_noop(spark_sql.bulk_lookup(spark, keys))
    rows.append(
        row(
            "bulk lookup",
            "bulk_lookup string keys, JVM hash",
            n_keys,
            seconds,
            "hashing + join back to keys",
        )
    )
    queries.unpersist()
    keys.unpersist()
    return set_ratios(rows)


def run_pushdown(workdir: Path, files: int = 3, repeat: int = 3) -> list[dict[str, Any]]:
    """One-key query with vs without pushdown over ``files`` full default-geometry files."""
    import os

    from rmqarrow.converters.spark.session import get_spark
    from rmqarrow.converters.spark.source import FORMAT, register

    geometry = Geometry()
    store = workdir / "pushdown-store"
    store.mkdir(parents=True, exist_ok=True)
    n = geometry.index_num - 1
    for i in range(files):
        name = f"2024010{i + 1}000000000"
        write_random_file(
            store / name,
            geometry,
            n,
            seed=11 + i,
            begin_timestamp=1_700_000_000_000 + i * 86_400_000,
        )
    from rmqarrow.converters.arrow.tables import file_tables

    first = sorted(store.iterdir())[0]
    hashes = file_tables(first, geometry.hash_slot_num, geometry.index_num).entries
    key_hash = int(hashes.column("key_hash")[12345].as_py())
    del hashes
    spark = get_spark(
        MASTER,
        app_name="rmqarrow-bench-pushdown",
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    register(spark)

    def query(push: bool) -> tuple[float, int]:
        df = (
            spark.read.format(FORMAT)
            .option("pushdown", str(push).lower())
            .option("hash_slot_num", geometry.hash_slot_num)
            .option("index_num", geometry.index_num)
            .load(str(store))
            .where(f"key_hash = {key_hash}")
        )
        t0 = time.perf_counter()
        got = df.toArrow()
        return time.perf_counter() - t0, got.num_rows

    query(True)  # warm the Python workers
    with_push = [query(True) for _ in range(repeat)]
    without = [query(False)]
    assert {r for _, r in with_push} == {without[0][1]}, (with_push, without)
    load = os.getloadavg()[0]
    rows = [
        row(
            "one-key query",
            f"no pushdown: scan {files} x {n:,} entries",
            1,
            min(t for t, _ in without),
            f"baseline; {without[0][1]} rows; load {load:.2f}",
        ),
        row(
            "one-key query",
            "pushdown: the slot's chain per file",
            1,
            min(t for t, _ in with_push),
            "target >= 50x faster, < 5 s",
        ),
    ]
    for path in store.iterdir():
        path.unlink()
    store.rmdir()
    return set_ratios(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="full default-geometry file, 1 M keys")
    parser.add_argument("--size", choices=sorted(SIZES), help="override: small/medium/full")
    parser.add_argument("--workdir", type=Path, default=None, help="keep generated data here")
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    parser.add_argument(
        "--pushdown",
        action="store_true",
        help="only the one-key query with vs without pushdown (3 full files)",
    )
    parser.add_argument("--pushdown-files", type=int, default=3)
    args = parser.parse_args(argv)
    if args.pushdown:
        with tempfile.TemporaryDirectory(prefix="bench_pushdown_") as tmp:
            rows = run_pushdown(Path(tmp), args.pushdown_files)
    elif args.workdir is None:
        with tempfile.TemporaryDirectory(prefix="bench_spark_") as tmp:
            rows = run(args.full, Path(tmp), args.size)
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = run(args.full, args.workdir, args.size)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print_rows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
