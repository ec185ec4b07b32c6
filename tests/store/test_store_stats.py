"""``Store.stats``: one verb for a native store and its dataset, the same figures; the
CommitLog that comes with a broker's store root; what the verb refuses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_error, run
from golden_data import golden_set

import rmqarrow
from rmqarrow.errors import InvalidValueError, UnsupportedOperationError, UsageError
from rmqarrow.store import StatsReport

G = golden_set("commitlog_store1")
LOG = Path(__file__).resolve().parents[1] / "golden" / "commitlog" / "store1" / "commitlog"
TIERED = Path(__file__).resolve().parents[1] / "legacy" / "tiered_basic"  # a tiered dataset
GEO = {"hash_slot_num": G.hash_slot_num, "index_num": G.index_num}


def _same(a: Any, b: Any) -> None:
    """Equal, floats to the last few bits (DuckDB sums in parallel, in no fixed order)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-12)
    else:
        assert a == b


def _broker_root(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(G.store_dir, root / "index")
    shutil.copytree(LOG, root / "commitlog")
    return root


def test_a_store_root_and_its_dataset_give_the_same_figures(tmp_path: Path) -> None:
    root = _broker_root(tmp_path)
    with rmqarrow.open(root, **GEO) as store:
        assert store.kind == "broker_root"
        native = store.stats(top=5, between=(0, 2**62), limit=7)
        store.export(tmp_path / "ds")
    assert isinstance(native, StatsReport)
    # the store root's own CommitLog was read: the index was built from it, in order
    assert native.log_check is not None and native.log_failure is None
    assert native.log_check["dangling"] == 0 and native.log_check["missing"] == 0
    assert native.figures.summary["entries"] == len(G.puts)
    with rmqarrow.open(tmp_path / "ds") as ds:
        exported = ds.stats(top=5, between=(0, 2**62), limit=7, commitlog=root / "commitlog")
        _same(exported.figures.to_json(), native.figures.to_json())
        assert exported.log_check == native.log_check
        assert ds.stats().log_check is None  # a dataset has no CommitLog of its own
    assert native.check is None


def test_with_check_carries_the_verdict_on_the_files(tmp_path: Path) -> None:
    with rmqarrow.open(G.store_dir, **GEO) as store:
        report = store.stats(with_check=True)
        assert report.check == store.check().to_dict()
        assert report.log_check is None


def test_a_damaged_log_fails_when_asked_for_and_warns_when_it_came_with_the_root(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _broker_root(tmp_path)
    for f in (root / "commitlog").iterdir():
        f.write_bytes(b"\xff" * f.stat().st_size)  # no message where the index points
    with rmqarrow.open(root, **GEO) as store:
        with caplog.at_level("WARNING", logger="rmqarrow"):
            implicit = store.stats()
        assert implicit.log_check is None and implicit.log_failure
        assert "not checked against its CommitLog" in caplog.text
        assert implicit.figures.summary["entries"] == len(G.puts)
        asked = store.stats(commitlog=root / "commitlog")  # the figures stand, the log fails
        _same(asked.figures.to_json(), implicit.figures.to_json())
        assert asked.log_check is None and asked.log_failure == implicit.log_failure
        with pytest.raises(rmqarrow.RmqArrowError):
            asked.raise_for_log()
        implicit.raise_for_log()  # the store root's own log is only warned about


def test_what_stats_refuses(tmp_path: Path) -> None:
    with rmqarrow.open(G.store_dir, **GEO) as store:
        with pytest.raises(InvalidValueError, match="top must be an int >= 0, got -1"):
            store.stats(top=-1)
        with pytest.raises(InvalidValueError, match="the first time is later"):
            store.stats(between=(5, 4))
        with pytest.raises(UsageError, match="unknown stats engine 'presto'"):
            store.stats(engine="presto")
        with pytest.raises(UsageError, match="against the log: give commitlog=DIR"):
            store.stats(engine="spark")  # a folder of index files has no CommitLog
    with (
        rmqarrow.open(TIERED) as tiered,
        pytest.raises(UnsupportedOperationError, match="stats is not available"),
    ):
        tiered.stats()


def test_the_command_line_prints_the_figures_before_a_log_it_was_given_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _broker_root(tmp_path)
    bad = tmp_path / "bad-commitlog"
    shutil.copytree(LOG, bad)
    for f in bad.iterdir():
        f.write_bytes(b"\xff" * f.stat().st_size)
    geo = ["--hash-slot-num", str(G.hash_slot_num), "--index-num", str(G.index_num)]
    status, out, err = run(capsys, "stats", str(root), "--commitlog", str(bad), "--json", *geo)
    assert status != 0 and json.loads(out)["summary"]["entries"] == len(G.puts)
    one_error(err)
    # the store root's own log, damaged: a warning, and the run succeeds
    shutil.rmtree(root / "commitlog")
    shutil.copytree(bad, root / "commitlog")
    status, out, err = run(capsys, "stats", str(root), "--json", *geo)
    assert status == 0 and "log_check" not in json.loads(out)
    assert "warning: the index was not checked against its CommitLog" in err
