"""The distributed export writes the dataset the local exporter writes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from golden_data import golden_set
from legacy_dataset import legacy_layout
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet import export
from rmqarrow.converters.parquet.manifest import read_manifest
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.converters.spark import export as spark_export
from rmqarrow.converters.spark import sql as spark_sql

from rmqarrow.errors import CorruptIndexError, OutputExistsError, StoreLockedError, UsageError

pytestmark = pytest.mark.spark

_KEYS = {
    "files": ["file_name"],
    "slots": ["file_name", "slot"],
    "entries": ["file_name", "position"],
}


def _contents(dataset: Path) -> dict[str, pa.Table]:
    out = {}
    for table, keys in _KEYS.items():
        parts = sorted((dataset / table).glob("*.parquet"))
        t = pa.concat_tables([pq.read_table(p) for p in parts])
        assert t.schema.equals(SCHEMAS[table], check_metadata=True)
        out[table] = t.sort_by([(k, "ascending") for k in keys])
    return out


def _manifest_core(dataset: Path) -> dict[str, Any]:
    m = read_manifest(dataset)
    return {k: v for k, v in m.items() if k not in ("writer", "created_at")}


def test_equals_local_export(spark: Any, tmp_path: Path) -> None:
    g = golden_set("rolling")
    kw = {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num}
    export.export_store(g.store_dir, tmp_path / "local", **kw)
    spark_export.export_store(g.store_dir, tmp_path / "spark", **kw)
    local, dist = _contents(tmp_path / "local"), _contents(tmp_path / "spark")
    for table in _KEYS:
        assert dist[table].equals(local[table]), table
    assert _manifest_core(tmp_path / "spark") == _manifest_core(tmp_path / "local")
    names = lambda d: sorted(p.relative_to(d).as_posix() for p in d.rglob("*"))  # noqa: E731
    assert names(tmp_path / "spark") == names(tmp_path / "local")
    # and the Spark export answers every golden query
    assert spark_sql.answer_queries(tmp_path / "spark", g.queries) == g.expected


def test_never_overwrites_without_flag(spark: Any, tmp_path: Path) -> None:
    g = golden_set("time")
    kw = {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num}
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("user data")
    with pytest.raises(OutputExistsError):
        spark_export.export_store(g.store_dir, out, **kw)
    assert (out / "keep.txt").read_text() == "user data"
    # --overwrite replaces only an rmqarrow dataset, never user data
    with pytest.raises(OutputExistsError, match="not an rmqarrow dataset"):
        spark_export.export_store(g.store_dir, out, overwrite=True, **kw)
    assert (out / "keep.txt").read_text() == "user data"
    (out / "keep.txt").unlink()
    out.rmdir()
    spark_export.export_store(g.store_dir, out, **kw)
    assert is_delta_dataset(out)
    # Delta tables are not replaced by a rename: their versions would go
    with pytest.raises(UsageError, match="export with the local engine"):
        spark_export.export_store(g.store_dir, out, overwrite=True, **kw)
    legacy_layout(out)  # a dataset of the older layout is replaced, by Delta tables
    spark_export.export_store(g.store_dir, out, overwrite=True, **kw)
    assert is_delta_dataset(out)
    assert read_manifest(out)["tables"]["entries"]["rows"] == len(g.puts)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temp dirs left


_HOLDER = """
import sys
from pathlib import Path
from rmqarrow._lock import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_another_writer_refuses_or_is_waited_for(spark: Any, tmp_path: Path) -> None:
    g = golden_set("time")
    kw = {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num}
    out = tmp_path / "out"
    spark_export.export_store(g.store_dir, out, **kw)
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # the lock is asked for before the Delta check: a second writer is named either way
        for overwrite in (False, True):
            with pytest.raises(StoreLockedError, match=f"after waiting 0.2 s: pid {holder.pid}"):
                spark_export.export_store(g.store_dir, out, overwrite=overwrite, wait=0.2, **kw)
        # waited for: the holder lets go a second later, then the export decides (Delta
        # tables are not replaced by a rename), under the lock it took
        assert holder.stdin is not None
        threading.Timer(1.0, holder.stdin.close).start()
        with pytest.raises(UsageError, match="export with the local engine"):
            spark_export.export_store(g.store_dir, out, overwrite=True, wait=60, **kw)
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.communicate("", timeout=60)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_task_error_is_raised_as_rmqarrow_error(spark: Any, tmp_path: Path) -> None:
    g = golden_set("time")
    store = tmp_path / "store"
    store.mkdir()
    data = bytearray((g.store_dir / g.files[0]).read_bytes())
    # a byte in entry position 0, which RocketMQ never writes: the export would lose it
    # (bytes past indexCount are not: a file is exported as of its header)
    data[40 + 4 * g.hash_slot_num] = 7
    (store / g.files[0]).write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="position 0"):
        spark_export.export_store(
            store, tmp_path / "out", hash_slot_num=g.hash_slot_num, index_num=g.index_num
        )
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["store"]


@pytest.mark.slow
def test_spark_submit_entry_point(tmp_path: Path) -> None:
    """``spark-submit .../rmqarrow/converters/spark/export.py STORE OUT`` (its own JVM)."""
    from pyspark.find_spark_home import _find_spark_home

    g = golden_set("basic")
    script = Path(spark_export.__file__)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    submit = Path(_find_spark_home()) / "bin" / "spark-submit"
    cmd = [
        str(submit),
        "--master",
        "local[1]",
        str(script),
        str(g.store_dir),
        str(tmp_path / "out"),
        "--hash-slot-num",
        str(g.hash_slot_num),
        "--index-num",
        str(g.index_num),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "exported" in proc.stdout
    manifest = read_manifest(tmp_path / "out")
    assert manifest["tables"]["entries"]["rows"] == len(g.puts)
    assert "rmqarrow.converters.spark.export" in manifest["writer"]


def test_python_m_entry_point() -> None:
    """``python -m rmqarrow.converters.spark.export`` is the same program (no JVM for --help)."""
    proc = subprocess.run(
        [sys.executable, "-m", "rmqarrow.converters.spark.export", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "python -m rmqarrow.converters.spark.export" in proc.stdout
