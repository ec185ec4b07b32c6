"""Every Spark entry point on a real standalone cluster: two workers, separate executors.

Two applications run on the session's cluster (``conftest.py``): the *main* one, whose
executors use this venv's Python, runs the CLI's ``query``/``sql``/``verify``/``export``
with ``--engine spark --master spark://...``, the ``rocketmq-index`` data source and
``bulk_lookup`` and the CommitLog paths (``build --from-commitlog --engine spark``, ``export
--commitlog``, ``stats --engine spark``), with store paths relative to the driver's working
directory; the *bare*
one gives executors a Python without rmqarrow (shipped by the driver) that cannot see
one directory (a path only the driver sees).  Answers are compared with the native
engine and the golden expectations; the executor logs show both workers ran tasks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cluster.conftest import GOLDEN, run_driver
from cluster.launcher import executor_logs
from golden_data import golden_set
from rmqarrow.converters.arrow.tables import store_tables
from rmqarrow.converters.parquet import export
from rmqarrow.converters.parquet.manifest import read_manifest

from rmqarrow.engines import answer_with_engine
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import Geometry
from rmqarrow.format.queries import Query

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

_ROLLING = ["--hash-slot-num", "16", "--index-num", "32"]


def _query_step(master: str) -> dict[str, Any]:
    return {
        "name": "query_rel",
        "kind": "cli",
        "argv": [
            "query",
            "rolling",
            "--engine",
            "spark",
            "--master",
            master,
            "--queries",
            "rolling.queries.tsv",
            *_ROLLING,
        ],
    }


_STORE1 = ["--hash-slot-num", "64", "--index-num", "256"]


def _generated_geometry(generated: Any) -> list[str]:
    return [
        "--hash-slot-num",
        str(generated.hash_slot_num),
        "--index-num",
        str(generated.index_num),
    ]


@pytest.fixture(scope="module")
def main_run(
    spark_cluster: Any, generated: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cluster-main")
    m = spark_cluster.master_url
    g = golden_set("rolling")
    keys = sorted({q.key for q in g.queries})
    steps = [
        _query_step(m),
        {
            "name": "sql",
            "kind": "cli",
            "argv": [
                "sql",
                "basic",
                "SELECT count(*) AS n, count(DISTINCT file_name) AS f FROM entries",
                "--engine",
                "spark",
                "--master",
                m,
                "--json",
                "--hash-slot-num",
                "100",
                "--index-num",
                "400",
            ],
        },
        {
            "name": "verify",
            "kind": "cli",
            "argv": [
                "verify",
                "collisions",
                "--engines",
                "native,spark",
                "--master",
                m,
                "--queries",
                "collisions.queries.tsv",
                "--hash-slot-num",
                "7",
                "--index-num",
                "64",
                "--json",
            ],
        },
        {
            "name": "export",
            "kind": "cli",
            "argv": [
                "export",
                "rolling",
                str(tmp / "spark-export"),
                "--engine",
                "spark",
                "--master",
                m,
                *_ROLLING,
            ],
        },
        {
            "name": "source",
            "kind": "source",
            "path": "random_public",
            "hash_slot_num": 1000,
            "index_num": 4000,
            "piece_rows": 700,
            "out": str(tmp / "source.parquet"),
        },
        {
            "name": "bulk",
            "kind": "bulk",
            "path": "rolling",
            "hash_slot_num": 16,
            "index_num": 32,
            "keys": keys,
            "max_num": 64,
        },
        {
            "name": "messages",
            "kind": "messages",
            "path": "commitlog/store1/commitlog",
            "out": str(tmp / "messages.parquet"),
        },
        # the CommitLog paths: relative to the driver's cwd, decoded by the executors
        {
            "name": "build_golden",
            "kind": "cli",
            "argv": [
                "build",
                str(tmp / "build-golden"),
                "--from-commitlog",
                "commitlog/store1",
                "--engine",
                "spark",
                "--master",
                m,
                *_STORE1,
            ],
        },
        {
            "name": "build_generated",
            "kind": "cli",
            "argv": [
                "build",
                str(tmp / "build-generated"),
                "--from-commitlog",
                str(generated.root / "commitlog"),
                "--engine",
                "spark",
                "--master",
                m,
                *_generated_geometry(generated),
            ],
        },
        {
            "name": "export_messages",
            "kind": "cli",
            "argv": [
                "export",
                "commitlog_store1",
                str(tmp / "export-messages"),
                "--commitlog",
                "commitlog/store1/commitlog",
                "--engine",
                "spark",
                "--master",
                m,
                *_STORE1,
            ],
        },
        {
            "name": "log_check",
            "kind": "cli",
            "argv": [
                "stats",
                "commitlog_store1",
                "--commitlog",
                "commitlog/store1/commitlog",
                "--engine",
                "spark",
                "--master",
                m,
                "--json",
                "--top",
                "2",
                *_STORE1,
            ],
        },
    ]
    result = run_driver(
        spark_cluster, tmp, "rmqarrow-cluster-main", steps, {"spark.pyspark.python": sys.executable}
    )
    result["tmp"] = str(tmp)
    result["keys"] = keys
    return result


def _ok(result: dict[str, Any], name: str) -> dict[str, Any]:
    step: dict[str, Any] = result[name]
    assert "exception" not in step, step.get("traceback")
    if "rc" in step:
        assert step["rc"] == 0, step["stderr"]
    return step


def _answers(stdout: str) -> str:
    """``query --queries`` output (``KEY<TAB>offsets`` lines) without the key column."""
    return "".join(line.split("\t", 1)[1] + "\n" for line in stdout.split("\n")[:-1])


def test_tasks_ran_on_both_workers(main_run: dict[str, Any], spark_cluster: Any) -> None:
    assert main_run["master"] == spark_cluster.master_url
    logs = executor_logs(spark_cluster, main_run["app_id"])
    finished = {
        n: sum(p.read_text(errors="replace").count("Finished task") for p in paths)
        for n, paths in logs.items()
    }
    print(f"cluster app {main_run['app_id']}: tasks finished per worker {finished}")
    assert set(finished) == {1, 2}
    assert all(count > 0 for count in finished.values()), finished


def test_query_relative_store_path(main_run: dict[str, Any]) -> None:
    step = _ok(main_run, "query_rel")
    assert _answers(step["stdout"]) == golden_set("rolling").expected_text


def test_sql(main_run: dict[str, Any]) -> None:
    step = _ok(main_run, "sql")
    g = golden_set("basic")
    assert json.loads(step["stdout"])["rows"] == [{"n": len(g.puts), "f": len(g.files)}]


def test_verify(main_run: dict[str, Any]) -> None:
    report = json.loads(_ok(main_run, "verify")["stdout"])
    assert report["ok"] is True


def test_export_equals_local_export(main_run: dict[str, Any], tmp_path: Path) -> None:
    _ok(main_run, "export")
    g = golden_set("rolling")
    export.export_store(g.store_dir, tmp_path / "local", hash_slot_num=16, index_num=32)
    dist = Path(main_run["tmp"]) / "spark-export"
    for table in ("files", "slots", "entries"):
        for part in sorted((tmp_path / "local" / table).glob("*.parquet")):
            assert pq.read_table(dist / table / part.name).equals(pq.read_table(part))

    def names(d: Path) -> list[str]:
        return sorted(p.relative_to(d).as_posix() for p in d.rglob("*"))

    def core(d: Path) -> dict[str, Any]:
        return {k: v for k, v in read_manifest(d).items() if k not in ("writer", "created_at")}

    assert names(dist) == names(tmp_path / "local")
    assert core(dist) == core(tmp_path / "local")


def test_data_source_equals_native(main_run: dict[str, Any]) -> None:
    step = _ok(main_run, "source")
    assert step["partitions"] > 2
    got = pq.read_table(Path(main_run["tmp"]) / "source.parquet")
    want = store_tables(GOLDEN / "random_public", 1000, 4000).entries
    order = [("file_name", "ascending"), ("position", "ascending")]
    assert got.num_rows == want.num_rows == len(golden_set("random_public").puts)
    assert got.sort_by(order).cast(want.schema).equals(want.sort_by(order))


def test_bulk_lookup(main_run: dict[str, Any]) -> None:
    step = _ok(main_run, "bulk")
    g = golden_set("rolling")
    queries = [Query(k, 64, 0, JAVA_LONG_MAX) for k in main_run["keys"]]
    want = answer_with_engine("native", g.store_dir, queries, geometry=Geometry(16, 32))
    assert step["offsets"] == want


# -- an executor Python without rmqarrow, and a path only the driver sees -------------


@pytest.fixture(scope="module")
def bare_run(
    spark_cluster: Any, bare_python: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    wrapper, hidden = bare_python
    tmp = tmp_path_factory.mktemp("cluster-bare")
    shutil.copytree(GOLDEN / "rolling", hidden / "rolling")
    m = spark_cluster.master_url
    steps = [
        _query_step(m),
        {
            "name": "source_rel",
            "kind": "source",
            "path": "rolling",
            "hash_slot_num": 16,
            "index_num": 32,
            "out": str(tmp / "source.parquet"),
        },
        {
            "name": "driver_only",
            "kind": "cli",
            "argv": [
                "export",
                str(hidden / "rolling"),
                str(tmp / "never"),
                "--engine",
                "spark",
                "--master",
                m,
                *_ROLLING,
            ],
        },
        {
            "name": "driver_only_source",
            "kind": "source",
            "path": str(hidden / "rolling"),
            "hash_slot_num": 16,
            "index_num": 32,
            "out": str(tmp / "never.parquet"),
        },
    ]
    result = run_driver(
        spark_cluster,
        tmp,
        "rmqarrow-cluster-bare",
        steps,
        {"spark.pyspark.python": str(wrapper), "spark.task.maxFailures": "2"},
    )
    result["tmp"] = str(tmp)
    return result


def test_bare_python_really_lacks_rmqarrow(bare_python: tuple[Path, Path]) -> None:
    wrapper, hidden = bare_python
    (hidden / "seen-by-driver").write_text("x")
    probe = f"import os, sys, pyarrow, numpy\nprint(os.listdir({str(hidden)!r}))\nimport rmqarrow\n"
    proc = subprocess.run(
        [str(wrapper), "-c", probe], capture_output=True, text=True, cwd="/", check=False
    )
    assert proc.stdout.strip() == "[]"  # the executors' view of the driver-only directory
    assert "No module named 'rmqarrow'" in proc.stderr
    (hidden / "seen-by-driver").unlink()


def test_bare_executors_work_thanks_to_shipping(bare_run: dict[str, Any]) -> None:
    step = _ok(bare_run, "query_rel")
    assert _answers(step["stdout"]) == golden_set("rolling").expected_text
    _ok(bare_run, "source_rel")
    got = pq.read_table(Path(bare_run["tmp"]) / "source.parquet")
    want: pa.Table = store_tables(GOLDEN / "rolling", 16, 32).entries
    order = [("file_name", "ascending"), ("position", "ascending")]
    assert got.sort_by(order).cast(want.schema).equals(want.sort_by(order))


def test_driver_only_path_gives_one_clear_line(bare_run: dict[str, Any]) -> None:
    step = bare_run["driver_only"]
    assert step.get("rc") == 1, step
    lines = step["stderr"].strip().splitlines()
    assert len(lines) == 1, step["stderr"]
    line = lines[0]
    assert line.startswith("rmqarrow export: error: ")
    assert "rolling" in line and "executor" in line
    assert "same absolute path" in line
    assert "Traceback" not in line and "\tat " not in line
    assert not (Path(bare_run["tmp"]) / "never").exists()


def test_driver_only_path_in_the_data_source(bare_run: dict[str, Any]) -> None:
    text = bare_run["driver_only_source"]["exception"]
    assert text.startswith("StoreNotFoundError: "), text
    assert "\n" not in text and "Traceback" not in text
    # planning runs in Spark's Python (spark.pyspark.python) on the driver's machine
    assert "rolling" in text and "the driver sees this path" in text
    assert "same absolute path" in text


def test_commitlog_messages_decoded_by_the_executors(main_run: dict[str, Any]) -> None:
    from rmqarrow.converters.arrow.messages import messages_table

    step = _ok(main_run, "messages")
    log = GOLDEN / "commitlog" / "store1" / "commitlog"
    assert step["partitions"] == len([p for p in log.iterdir() if p.is_file()]) > 1
    got = pq.read_table(Path(main_run["tmp"]) / "messages.parquet").sort_by("physical_offset")
    want = messages_table(log)
    assert got.cast(want.schema).equals(want)


def _store_bytes(store: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(store.iterdir())]


def test_build_from_commitlog_on_the_cluster_is_byte_identical(
    main_run: dict[str, Any], generated: Any, tmp_path: Path
) -> None:
    from rmqarrow.cli import main

    _ok(main_run, "build_golden")
    built = Path(main_run["tmp"]) / "build-golden"
    assert _store_bytes(built) == [
        p.read_bytes() for p in golden_set("commitlog_store1").file_paths
    ]
    _ok(main_run, "build_generated")
    local = tmp_path / "local"
    assert (
        main(
            [
                "build",
                str(local),
                "--from-commitlog",
                str(generated.root / "commitlog"),
                *_generated_geometry(generated),
            ]
        )
        == 0
    )
    dist = _store_bytes(Path(main_run["tmp"]) / "build-generated")
    assert dist == _store_bytes(local) and len(dist) > 1


def test_export_messages_and_log_check_on_the_cluster(main_run: dict[str, Any]) -> None:
    from rmqarrow.converters.arrow.messages import messages_table
    from rmqarrow.converters.duckdb.sql import check_against_log, connect

    _ok(main_run, "export_messages")
    log = GOLDEN / "commitlog" / "store1" / "commitlog"
    got = pq.read_table(Path(main_run["tmp"]) / "export-messages" / "messages")
    want = messages_table(log)
    assert got.sort_by("physical_offset").cast(want.schema).equals(want)
    spark_check = json.loads(_ok(main_run, "log_check")["stdout"])["log_check"]
    con = connect(GOLDEN / "commitlog_store1", hash_slot_num=64, index_num=256, commitlog=log)
    try:
        assert spark_check == check_against_log(con, examples=2)
    finally:
        con.close()
