"""The optional extras are optional: the core works with none of them importable.

A subprocess blocks pyspark, numba, matplotlib, lz4 and zstandard at import time, then
builds, queries, exports and reads back a store, and checks each missing extra's error.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in {"pyspark", "numba", "matplotlib", "lz4", "zstandard"}:
                raise ImportError(f"blocked for the test: {name}")
            return None

    sys.meta_path.insert(0, Block())
    import tempfile
    from pathlib import Path

    import pyarrow as pa

    import rmqarrow
    from rmqarrow.converters import export_store, import_dataset
    from rmqarrow.converters.duckdb.sql import answer_queries as duck_answers
    from rmqarrow.cli import main
    from rmqarrow.kernels.hashing import kernel_name

    assert kernel_name() == "numpy", kernel_name()
    tmp = Path(tempfile.mkdtemp())
    with rmqarrow.IndexService(tmp / "store", 8, 32) as s:
        s.build_index_batch(pa.table({
            "topic": ["T"] * 40, "keys": [f"k{i % 5}" for i in range(40)],
            "uniq_key": [f"U{i}" for i in range(40)],
            "commit_log_offset": list(range(0, 4000, 100)),
            "store_timestamp": [1_700_000_000_000 + i for i in range(40)],
            "sys_flag": [0] * 40,
        }))
    queries = [rmqarrow.Query("T#k1", 64), rmqarrow.Query("T#U7", 64)]
    native = rmqarrow.answer_queries(tmp / "store", queries, hash_slot_num=8, index_num=32)
    assert native[0] == [3600, 3100, 2600, 2100, 1600, 1100, 600, 100], native
    export_store(tmp / "store", tmp / "ds", hash_slot_num=8, index_num=32)
    assert duck_answers(tmp / "ds", queries) == native
    import_dataset(tmp / "ds", tmp / "back")
    before = sorted(p.read_bytes() for p in (tmp / "store").iterdir())
    assert sorted(p.read_bytes() for p in (tmp / "back").iterdir()) == before
    assert main(["info", str(tmp / "store"), "--hash-slot-num", "8", "--index-num", "32"]) == 0
    from rmqarrow.converters.spark.session import get_spark

    for call in (get_spark,):
        try:
            call()
        except rmqarrow.EngineUnavailableError as exc:
            assert "rmqarrow[spark]" in str(exc), exc
        else:
            raise AssertionError("get_spark worked without pyspark")
    print("core ok without extras")
    """
)


def test_core_works_without_any_extra(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "core ok without extras" in done.stdout
