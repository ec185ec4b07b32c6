"""The CommitLog read in parallel on Spark (``local[2]``) next to the single-process reader.

A CommitLog of ``--gib`` GiB (default 2) is generated in ``workdir`` with
``bench_commitlog``'s generator (mixed topics, keys, bodies; ``--mapped-mib`` per file,
default 256, so local[2]'s two cores always have files to share) and kept between runs.
Rows, every ratio from this one run (``vs_baseline`` = the row's per_s over the baseline's):

``commitlog read``  baseline: :func:`rmqarrow.commitlog.index_records` in this process;
                    the ``rocketmq-commitlog`` source with ``table=index_records`` (a task
                    per file, written to Spark's ``noop`` sink: all decoded, nothing
                    collected); the files decoded by Spark tasks that send back only row
                    counts (the parallel decode without Spark's conversion of Arrow
                    batches into its rows); the same records handed to the driver in log order
                    (:func:`rmqarrow.converters.spark.records.ordered_index_records`, what
                    the build reads); the messages table both ways.  Target: >= 1.6x.
``build``           ``rmqarrow build --from-commitlog`` local (baseline) vs ``--engine
                    spark`` (default geometry; the files are checked byte-identical).

Run alone: ``python benchmarks/bench_spark_commitlog.py [--gib 2] [--workdir DIR]``
(``benchmarks/run.py`` runs it at 0.25 GiB, 2 GiB with ``--full``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import print_rows, row, set_ratios, timed
from bench_commitlog import _generate

from rmqarrow.commitlog import index_records

MIB = 1024 * 1024
MASTER = "local[2]"


def _ensure_log(workdir: Path, gib: float, mapped_mib: int) -> tuple[Path, int]:
    """The generated log (kept in ``workdir``) and its record count."""
    root = workdir / f"commitlog_{gib:g}g_{mapped_mib}m"
    marker = root / "generated.json"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        t = time.perf_counter()
        n = _generate(root / "commitlog", int(gib * 1024 * MIB), mapped_mib * MIB)
        marker.write_text(json.dumps({"records": n, "seconds": time.perf_counter() - t}))
    return root / "commitlog", int(json.loads(marker.read_text())["records"])


def _spark() -> Any:
    from rmqarrow.converters.spark.session import get_spark

    return get_spark(
        MASTER,
        app_name="rmqarrow-bench-commitlog",
        conf={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.python.worker.reuse": "true",
        },
    )


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def _decoded_by_tasks(spark: Any, log: Path, table: str) -> int:
    """Every file decoded by its own Spark task, only the row counts sent back: the
    parallel decode without Spark's conversion of Arrow batches into its own rows."""
    from rmqarrow.converters.spark.commitlog import file_batches, file_tasks

    tasks = file_tasks(log, table)
    rdd = spark.sparkContext.parallelize(tasks, len(tasks))
    return sum(rdd.map(lambda t: sum(b.num_rows for b in file_batches(t))).collect())


def _read_rows(spark: Any, log: Path, records: int) -> list[dict[str, Any]]:
    from rmqarrow.converters.arrow.messages import messages_reader
    from rmqarrow.converters.spark.commitlog import index_records_frame, messages_frame
    from rmqarrow.converters.spark.records import ordered_index_records

    size = sum(p.stat().st_size for p in log.iterdir()) / MIB
    files = len(list(log.iterdir()))
    note = f"{size:,.0f} MiB, {files} files"
    cases = [
        (
            "index_records, one process",
            "baseline",
            lambda: sum(b.num_rows for b in index_records(log)),
        ),
        (
            f"index_records, Spark {MASTER} (noop sink)",
            "",
            lambda: _noop(index_records_frame(spark, log)),
        ),
        (
            f"index_records, Spark {MASTER} tasks (decode only, counts back)",
            "",
            lambda: _decoded_by_tasks(spark, log, "index_records"),
        ),
        (
            f"index_records, Spark {MASTER}, ordered to the driver",
            "",
            lambda: sum(b.num_rows for b in ordered_index_records(spark, log)),
        ),
        ("messages table, one process", "", lambda: sum(b.num_rows for b in messages_reader(log))),
        (
            f"messages table, Spark {MASTER} (noop sink)",
            "",
            lambda: _noop(messages_frame(spark, log)),
        ),
        (
            f"messages table, Spark {MASTER} tasks (decode only, counts back)",
            "",
            lambda: _decoded_by_tasks(spark, log, "messages"),
        ),
    ]
    rows = []
    for variant, kind, fn in cases:
        seconds, _ = timed(fn)
        rows.append(
            row(
                "commitlog read",
                variant,
                records,
                seconds,
                f"{kind + ', ' if kind else ''}{note}, {size / seconds:,.0f} MiB/s",
            )
        )
    return rows


def _build_rows(log: Path, records: int, out: Path) -> list[dict[str, Any]]:
    from rmqarrow.cli import main

    rows = []
    stores = {}
    for engine, kind in (("local", "baseline"), ("spark", "")):
        store = out / f"build-{engine}"
        shutil.rmtree(store, ignore_errors=True)
        argv = ["build", str(store), "--from-commitlog", str(log), "--json", "--engine", engine]
        if engine == "spark":
            argv += ["--master", MASTER]
        with open(os.devnull, "w") as sink:
            stdout, sys.stdout = sys.stdout, sink
            try:
                seconds, status = timed(lambda argv=argv: main(argv))
            finally:
                sys.stdout = stdout
        if status != 0:
            raise RuntimeError(f"build --engine {engine} failed ({status})")
        stores[engine] = [p.read_bytes() for p in sorted(store.iterdir())]
        rows.append(
            row(
                "build --from-commitlog",
                f"--engine {engine}",
                records,
                seconds,
                f"{kind + ', ' if kind else ''}default geometry, "
                f"{len(stores[engine])} index file(s)",
            )
        )
        shutil.rmtree(store)
    if stores["spark"] != stores["local"]:
        raise RuntimeError("build --engine spark wrote other bytes than the local build")
    return rows


def run(
    full: bool, workdir: Path, gib: float | None = None, mapped_mib: int = 256
) -> list[dict[str, Any]]:
    """The rows; ``benchmarks/run.py`` passes only ``full`` (2 GiB, else 0.25 GiB)."""
    gib = gib if gib is not None else (2.0 if full else 0.25)
    log, records = _ensure_log(workdir, gib, mapped_mib)
    warm, _ = _ensure_log(workdir, 1 / 64, 4)
    spark = _spark()
    from rmqarrow.converters.spark.commitlog import index_records_frame, messages_frame
    from rmqarrow.converters.spark.records import ordered_index_records

    for _ in range(2):  # start the Python workers and load the compiled kernels first
        _noop(index_records_frame(spark, warm))
        _noop(messages_frame(spark, warm))
        sum(b.num_rows for b in ordered_index_records(spark, warm))
        sum(b.num_rows for b in index_records(warm))
    rows = _read_rows(spark, log, records) + _build_rows(log, records, workdir)
    return set_ratios(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="log size in GiB (default 2)")
    parser.add_argument(
        "--mapped-mib", type=int, default=256, help="CommitLog file size in MiB (default 256)"
    )
    parser.add_argument("--workdir", type=Path, help="where the generated log is kept")
    args = parser.parse_args(argv)
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            print_rows(run(True, Path(tmp), args.gib, args.mapped_mib))
    else:
        print_rows(run(True, args.workdir, args.gib, args.mapped_mib))
    print(f"load average (1, 5, 15 min): {os.getloadavg()}, cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
