"""Readers that never heard of rmqarrow read a Delta dataset after several incremental runs
and give rmqarrow's answers: the rows of a fresh full export of the store, and the same
lookups (the entries of a key hash, rows per table, entries joined with files); the
dataset and the expected answers are :mod:`delta_lake`'s.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from delta_lake import TABLES, Lake, build_lake
from legacy_dataset import legacy_layout

import rmqarrow
from rmqarrow.errors import InvalidValueError


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    return build_lake(tmp_path_factory.mktemp("foreign"))


def test_polars_scan_delta_answers_as_rmqarrow(lake: Lake) -> None:
    import polars as pl

    ctx = pl.SQLContext({t: pl.scan_delta(str(lake.ds / t)) for t in TABLES})
    got = {name: ctx.execute(sql).collect().rows() for name, sql in lake.statements.items()}
    assert got == lake.want
    # an older version is the export, before the runs
    old = pl.scan_delta(str(lake.ds / "entries"), version=0).select(pl.len()).collect().item()
    assert old == lake.first_entries


def test_parts_are_the_pinned_snapshot_not_the_folder(lake: Lake, tmp_path: Path) -> None:
    """``DatasetStore.parts``: what a reader without Delta support reads; the folder holds
    more (the parts the runs replaced), and an older version is the export's."""
    store = rmqarrow.open(lake.ds)
    parts = store.parts("entries")
    folder = sorted((lake.ds / "entries").glob("*.parquet"))
    assert set(parts) < set(folder)  # replaced parts stay until a vacuum
    assert sum(pq.read_metadata(p).num_rows for p in parts) == lake.want["rows_entries"][0][0]
    old = store.parts("entries", as_of=0)
    assert sum(pq.read_metadata(p).num_rows for p in old) == lake.first_entries
    with pytest.raises(InvalidValueError, match="keeps no versions"):
        rmqarrow.open(legacy_layout(shutil.copytree(lake.fresh, tmp_path / "m"))).parts(
            "entries", as_of=0
        )
    with pytest.raises(InvalidValueError, match="unknown table"):
        store.parts("entry")


@pytest.mark.spark
def test_spark_without_delta_reads_the_snapshot_file_list(lake: Lake, spark: Any) -> None:
    store = rmqarrow.open(lake.ds)
    for t in TABLES:
        spark.read.parquet(*(str(p) for p in store.parts(t))).createOrReplaceTempView(t)
    got = {
        name: [tuple(r) for r in spark.sql(sql).collect()] for name, sql in lake.statements.items()
    }
    assert got == lake.want
    old = spark.read.parquet(*(str(p) for p in store.parts("entries", as_of=0))).count()
    assert old == lake.first_entries
    # the folder is not the table: read whole, it counts the replaced parts too
    assert spark.read.parquet(str(lake.ds / "entries")).count() > lake.want["rows_entries"][0][0]


# DuckDB's delta extension cannot be installed into the DuckDB rmqarrow uses (its extension
# site is not reachable from here, and no package ships it for DuckDB 2.0); PyPI ships it
# built for DuckDB 1.4.4.  That DuckDB gets its own virtualenv, made once and cached.
DUCKDB_DELTA = ("duckdb==1.4.4", "duckdb-ext-delta==1.4.4.20260205")

_DELTA_SCAN = """
import json, sys
from pathlib import Path
import duckdb, duckdb_ext

ds, statements = Path(sys.argv[1]), json.loads(sys.argv[2])
extensions = Path(duckdb_ext.__path__[0]) / "extensions"
con = duckdb.connect(config={"extension_directory": str(extensions)})
con.execute("LOAD delta")
for t in ("files", "slots", "entries"):
    con.execute(f"CREATE VIEW {t} AS SELECT * FROM delta_scan('{ds / t}')")
out = {"version": duckdb.__version__}
out.update({name: con.sql(sql).fetchall() for name, sql in statements.items()})
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def duckdb_delta_python() -> Path:
    """The python of a cached virtualenv holding DuckDB 1.4.4 and its delta extension
    (``~/.cache/rmqarrow/duckdb-delta-1.4.4``), made under a lock; a stamp written last
    tells a whole one from what a killed install left, which is made again."""
    cache = Path.home() / ".cache" / "rmqarrow"
    home = cache / "duckdb-delta-1.4.4"
    stamp = home / "installed.txt"
    # the pins and the interpreter the venv was made from: either changed, it is made again
    made = " ".join(DUCKDB_DELTA) + f" from {sys.executable} {sys.version.split()[0]}"
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / "duckdb-delta-1.4.4.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.is_file() and stamp.read_text(encoding="utf-8") == made):
            shutil.rmtree(home, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
            done = subprocess.run(
                [home / "bin" / "python", "-m", "pip", "install", "-q", *DUCKDB_DELTA],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                pytest.fail(f"pip install {' '.join(DUCKDB_DELTA)}: {done.stderr[-2000:]}")
            stamp.write_text(made, encoding="utf-8")
    return home / "bin" / "python"


@pytest.mark.slow
def test_duckdb_delta_extension_answers_as_rmqarrow(lake: Lake, duckdb_delta_python: Path) -> None:
    done = subprocess.run(
        [duckdb_delta_python, "-c", _DELTA_SCAN, str(lake.ds), json.dumps(lake.statements)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got.pop("version") == "1.4.4"
    assert {name: [tuple(r) for r in rows] for name, rows in got.items()} == lake.want
