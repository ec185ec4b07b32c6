"""The Delta benchmark (benchmarks/bench_delta.py) on tiny files: every step runs (the
local exports, the incremental run, a real S3 server started and killed by the harness,
the one rmqarrow.testing.s3_server chooses), each row's ratio is taken against the row it
names, and the store is left as it grew.  No timing is judged here: the figures are the
benchmark's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from rmqarrow import Geometry
from rmqarrow.format.layout import HEADER_DTYPE
from rmqarrow.testing.s3_server import chosen_server

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


def _bench_delta() -> ModuleType:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("bench_delta", BENCHMARKS / "bench_delta.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_delta_benchmark_measures_local_and_s3_exports(tmp_path: Path) -> None:
    bench = _bench_delta()
    g = Geometry(1_000, 4_000)
    rows = bench.run(False, tmp_path, reps=2, geometry=g, grow=300)
    by = {r["variant"]: r for r in rows}
    assert list(by) == [
        "delta export (baseline)",
        "delta incremental (+300 entries)",
        "s3 delta export",
        "s3 delta incremental (+300 entries)",
    ]
    entries = 6 * (g.index_num - 1)
    assert {r["items"] for r in rows} == {entries}
    delta = by["delta export (baseline)"]
    assert len(delta["runs"]) == 2 and delta["seconds"] == pytest.approx(
        sorted(delta["runs"])[0] / 2 + sorted(delta["runs"])[1] / 2, abs=2e-3
    )
    assert delta["cpu_s"] > 0  # this process's CPU time, every thread's
    inc = by["delta incremental (+300 entries)"]
    assert inc["vs"] == "delta export (baseline)" and inc["met"] is (inc["time_ratio"] <= 0.1)
    # both times are printed to the millisecond; the ratio was taken before that rounding
    half = 5e-4
    lo = (inc["seconds"] - half) / (delta["seconds"] + half) - half
    hi = (inc["seconds"] + half) / (delta["seconds"] - half) + half
    assert lo <= inc["time_ratio"] <= hi
    # the incremental dataset holds more parts than one export: it is at least as big
    assert inc["bytes"] >= delta["bytes"]
    s3 = by["s3 delta export"]
    assert {by[v].get("server") for v in by if v.startswith("s3 ")} == {chosen_server()}
    assert s3["vs"] == "delta export (baseline)" and s3["cpu_s"] > 0 and s3["server_cpu_s"] > 0
    assert s3["bytes"] == pytest.approx(delta["bytes"], rel=0.01)
    assert s3["size_ratio"] == pytest.approx(s3["bytes"] / delta["bytes"], abs=1e-4)
    assert s3["met"] is (
        s3["time_ratio"] <= bench.EXPORT_TARGET and s3["size_ratio"] <= bench.EXPORT_TARGET
    )
    s3_inc = by["s3 delta incremental (+300 entries)"]
    if s3_inc["seconds"] is None:  # refused by the library for a URI, in its words
        assert s3_inc["note"].startswith("refused: s3://") and s3_inc["met"] is None
    else:
        assert s3_inc["vs"] == "s3 delta export" and s3_inc["bytes"] > 0
    # the newest file's header holds every entry again; the datasets are gone
    newest = sorted((tmp_path / f"store-{g.hash_slot_num}x{g.index_num}").iterdir())[-1]
    header = np.memmap(newest, dtype=HEADER_DTYPE, mode="r", shape=(1,))
    assert int(header["index_count"][0]) == g.index_num
    assert not (tmp_path / "delta-work").exists()
    assert bench.summary(rows)["s3 delta export"]["time_ratio"] == s3["time_ratio"]
