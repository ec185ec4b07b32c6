"""A Spark driver for the cluster tests: one application, many entry points, one process.

Run as ``python cluster_driver.py SPEC.json RESULT.json``.  Starting a driver and its
executors costs tens of seconds on a small machine, so each test application runs every
step of ``SPEC["steps"]`` on one session: CLI commands through ``rmqarrow.cli.main``
(which reuses the session, as under spark-submit) and the Python API.  Each step's
result (exit status and output, or the exception) is written to ``RESULT.json``; the
tests in this folder compare them with the native answers.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any


def _cli(argv: list[str]) -> dict[str, Any]:
    from rmqarrow.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _source(spark: Any, step: dict[str, Any]) -> dict[str, Any]:
    import pyarrow.parquet as pq
    from rmqarrow.converters.spark.errors import spark_errors
    from rmqarrow.converters.spark.source import FORMAT, register

    register(spark)
    reader = spark.read.format(FORMAT).option("table", step.get("table", "entries"))
    for key, name in (
        ("hash_slot_num", "hashSlotNum"),
        ("index_num", "indexNum"),
        ("piece_rows", "pieceRows"),
    ):
        if key in step:
            reader = reader.option(name, str(step[key]))
    # load() plans (a wrong path fails there, in Spark's Python), toArrow() reads
    with spark_errors():
        df = reader.load(step["path"])
        if "where" in step:
            df = df.where(step["where"])
        table = df.toArrow()
    pq.write_table(table, step["out"])
    return {"rows": table.num_rows, "partitions": df.rdd.getNumPartitions()}


def _bulk(spark: Any, step: dict[str, Any]) -> dict[str, Any]:
    from rmqarrow.converters.spark.sql import bulk_lookup, register_tables

    register_tables(
        spark, step["path"], hash_slot_num=step["hash_slot_num"], index_num=step["index_num"]
    )
    keys = spark.createDataFrame([(i, k) for i, k in enumerate(step["keys"])], "i INT, key STRING")
    rows = bulk_lookup(spark, keys, max_num=step["max_num"]).orderBy("i").collect()
    return {"offsets": [list(r["offsets"]) for r in rows]}


def _messages(spark: Any, step: dict[str, Any]) -> dict[str, Any]:
    import pyarrow.parquet as pq
    from rmqarrow.converters.spark.commitlog import messages_frame

    df = messages_frame(spark, step["path"])  # relative to the driver's cwd
    table = df.toArrow()
    pq.write_table(table, step["out"])
    return {"rows": table.num_rows, "partitions": df.rdd.getNumPartitions()}


def _parquet_sql(spark: Any, step: dict[str, Any]) -> dict[str, Any]:
    """Plain Spark, no rmqarrow: each table read from its list of Parquet files, then SQL."""
    for table, files in step["tables"].items():
        spark.read.parquet(*files).createOrReplaceTempView(table)
    return {
        name: [list(r) for r in spark.sql(sql).collect()]
        for name, sql in step["statements"].items()
    }


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    os.chdir(spec["cwd"])
    from rmqarrow.converters.spark.session import get_spark

    spark = get_spark(spec["master"], app_name=spec["app"], conf=spec.get("conf"))
    results: dict[str, Any] = {
        "app_id": spark.sparkContext.applicationId,
        "master": spark.sparkContext.master,
    }
    for step in spec["steps"]:
        try:
            if step["kind"] == "cli":
                res = _cli(step["argv"])
            elif step["kind"] == "source":
                res = _source(spark, step)
            elif step["kind"] == "bulk":
                res = _bulk(spark, step)
            elif step["kind"] == "messages":
                res = _messages(spark, step)
            elif step["kind"] == "parquet_sql":
                res = _parquet_sql(spark, step)
            else:
                raise ValueError(f"unknown step kind {step['kind']!r}")
        except Exception as exc:
            res = {
                "exception": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-3000:],
            }
        results[step["name"]] = res
    spark.stop()
    Path(sys.argv[2]).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
