"""A RocksDB-index dataset is Delta tables, one pinned run per export: every reader reads
that run (DuckDB's and Spark's answers, scans, foreign readers), ``--overwrite`` is one
more version (killed at any step, the old export or the new is whole), and a dataset of
the older manifest layout is still read and converted in place."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from cli_run import run
from deltalake import DeltaTable
from legacy_dataset import LEGACY, comparable, layout_files, manifest_layout
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.delta.run import open_snapshot
from rmqarrow.converters.parquet.to_delta import convert_to_delta
from rocksdb_golden_data import ALL_ROCKSDB, RocksDBSet
from tiered_golden_data import ALL_TIERED

import rmqarrow
from rmqarrow.errors import InvalidValueError, OutputExistsError
from rmqarrow.format.detect import MANIFEST_NAME, ROCKSDB_DATASET_FORMAT, detect
from rmqarrow.rocksdb._tsv import format_answer, read_expected, read_queries
from rmqarrow.rocksdb.parquet import ROCKSDB_TABLES, export_rocksdb
from rmqarrow.tiered.parquet.export import export_tiered

BASIC = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_basic")
TIERED = next(s for s in ALL_TIERED if s.name == "tiered_basic")
EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")
PIN = "rocksdb_records"


def _golden(ds: Path, s: RocksDBSet, engine: str = "duckdb", **open_args: Any) -> bool:
    """Whether the dataset answers every golden query of ``s`` as RocketMQ did."""
    with rmqarrow.open(
        ds, max_msgs_num_batch=s.max_msgs_num_batch, max_query_days=s.max_query_days, **open_args
    ) as store:
        got = store.answers(read_queries(s.dir / "queries.tsv"), engine=engine)
    return [format_answer(a) for a in got] == read_expected(s.dir / "expected.tsv")


def _rows(ds: Path, **open_args: Any) -> dict[str, int]:
    with rmqarrow.open(ds, **open_args) as store:
        return {t: store.scan(t).read_all().num_rows for t in ROCKSDB_TABLES}


def test_export_is_delta_tables_read_by_every_engine(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    manifest = export_rocksdb(BASIC.db, ds)
    assert not (ds / MANIFEST_NAME).exists()
    assert is_delta_dataset(ds, PIN) and detect(ds).kind == "rocksdb_dataset"
    assert manifest["format"] == ROCKSDB_DATASET_FORMAT and "delta" in manifest
    assert manifest["tables"]["rocksdb_records"]["rows"] == len(BASIC.pairs()["default"]) - 2
    snap = open_snapshot(ds, pin_table=PIN)
    assert set(snap.versions) == set(ROCKSDB_TABLES)
    for t in ROCKSDB_TABLES:
        assert DeltaTable(str(ds / t)).version() == 0, t
    assert _golden(ds, BASIC)
    with rmqarrow.open(ds) as store:
        assert not store.check().problems


def test_overwrite_is_a_new_version_and_as_of_reads_the_old(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = tmp_path / "ds"
    export_rocksdb(BASIC.db, ds)
    with pytest.raises(OutputExistsError):
        export_rocksdb(EDGE.db, ds)
    status, _, err = run(capsys, "export", str(EDGE.db), str(ds), "--overwrite")
    assert status == 0, err
    assert open_snapshot(ds, pin_table=PIN).version == 1
    assert _golden(ds, EDGE) and not _golden(ds, BASIC)
    assert _golden(ds, BASIC, as_of=0)
    assert _rows(ds, as_of=0)["rocksdb_records"] == len(BASIC.pairs()["default"]) - 2
    with pytest.raises(InvalidValueError, match="no version 3"):
        rmqarrow.open(ds, as_of=3)
    status, out, _ = run(capsys, "info", str(ds))
    assert status == 0 and "pinned version 1" in out
    status, out, _ = run(capsys, "info", str(ds), "--as-of", "0", "--json")
    assert json.loads(out)["delta"]["version"] == 0
    status, _, _ = run(capsys, "vacuum", str(ds), "--retention", "0", "--force")
    assert status == 0
    with rmqarrow.open(ds) as store:
        assert [v["readable"] for v in store.versions()] == [False, True]
    assert _golden(ds, EDGE)


def test_foreign_readers_count_what_rmqarrow_reads(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    export_rocksdb(EDGE.db, ds)
    export_rocksdb(BASIC.db, ds, overwrite=True)  # the replaced parts stay on disk
    ours = _rows(ds)
    snap = open_snapshot(ds, pin_table=PIN)
    for t in ROCKSDB_TABLES:
        delta = DeltaTable(str(ds / t)).to_pyarrow_table()
        assert delta.num_rows == ours[t], t
        con = duckdb.connect()
        files = snap.files(t)
        assert con.sql(f"SELECT count(*) FROM read_parquet({files!r})").fetchall() == [(ours[t],)]
        con.register("delta_table", delta)  # Delta read by deltalake, counted by DuckDB
        assert con.sql("SELECT count(*) FROM delta_table").fetchall() == [(ours[t],)], t
        con.close()
    assert len(list((ds / "rocksdb_records").glob("*.parquet"))) == 2


def test_the_older_layout_reads_and_converts_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = tmp_path / "ds"
    export_rocksdb(BASIC.db, ds)
    legacy = tmp_path / "legacy"
    written = manifest_layout(ds, legacy, ROCKSDB_DATASET_FORMAT)
    # the helper makes what the older writer made (tests/legacy)
    real = LEGACY / "rocksdb_basic"
    assert layout_files(legacy) == layout_files(real)
    want = json.loads((real / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert comparable(written) == comparable(want)
    for old in (legacy, real):
        assert detect(old).kind == "rocksdb_dataset" and not is_delta_dataset(old)
        assert _rows(old) == _rows(ds)
        assert _golden(old, BASIC)
        with pytest.raises(InvalidValueError, match="keeps no versions"):
            rmqarrow.open(old, as_of=0)
    before = {p: p.read_bytes() for p in legacy.rglob("*.parquet")}
    status, _, err = run(capsys, "convert", str(legacy))
    assert status == 0, err
    assert is_delta_dataset(legacy, PIN) and not (legacy / MANIFEST_NAME).exists()
    assert {p: p.read_bytes() for p in legacy.rglob("*.parquet")} == before  # nothing rewritten
    assert _golden(legacy, BASIC)
    with rmqarrow.open(legacy) as store:
        assert store.info().manifest["tables"] == written["tables"]
    assert not convert_to_delta(legacy)  # once is enough


_OVERWRITE = """
import sys
from rmqarrow.rocksdb.parquet import export_rocksdb
export_rocksdb(sys.argv[1], sys.argv[2], overwrite=True)
"""


@pytest.mark.slow  # a real kill -9 at each step: the full suite's, not the fast tier's
@pytest.mark.parametrize(
    "crash", ["export:manifest", "delta:replaced-parts", "delta:table", "delta:pinned"]
)
def test_an_overwrite_killed_at_every_step_leaves_one_whole_export(
    tmp_path: Path, crash: str
) -> None:
    ds = tmp_path / "ds"
    export_rocksdb(BASIC.db, ds)
    env = {**os.environ, "RMQARROW_CRASH_AT": crash}
    done = subprocess.run(
        [sys.executable, "-c", _OVERWRITE, str(EDGE.db), str(ds)], env=env, timeout=300
    )
    assert done.returncode == -signal.SIGKILL
    landed = crash == "delta:pinned"
    assert _golden(ds, EDGE if landed else BASIC)  # the old export whole, or the new one
    export_rocksdb(EDGE.db, ds, overwrite=True)  # the next run converges
    assert _golden(ds, EDGE)
    snap = open_snapshot(ds, pin_table=PIN)
    for t in ROCKSDB_TABLES:  # nothing the kill left is visible to a plain Delta reader
        assert set(DeltaTable(str(ds / t)).file_uris()) == set(snap.files(t)), t
    assert _golden(ds, BASIC, as_of=0)


@pytest.mark.spark
def test_spark_reads_the_pinned_run_not_the_folder(tmp_path: Path, spark: Any) -> None:
    ds = tmp_path / "ds"
    export_rocksdb(BASIC.db, ds)
    export_rocksdb(EDGE.db, ds, overwrite=True)  # both runs' parts are in the folder
    assert _golden(ds, EDGE, engine="spark")
    assert _golden(ds, BASIC, engine="spark", as_of=0)


def test_overwrite_replaces_the_older_layout_and_refuses_another_kind(tmp_path: Path) -> None:
    """``--overwrite`` of a RocksDB dataset of the older layout replaces it by Delta tables;
    a dataset of Delta tables of another kind (a tiered one) is refused, untouched."""
    old = tmp_path / "old"
    shutil.copytree(LEGACY / "rocksdb_basic", old)
    export_rocksdb(BASIC.db, old, overwrite=True)
    assert is_delta_dataset(old, "rocksdb_records") and not (old / MANIFEST_NAME).exists()
    assert _golden(old, BASIC)
    other = tmp_path / "tiered-ds"
    export_tiered(TIERED.dir / "unsealed.bin", other)
    before = layout_files(other)
    with pytest.raises(OutputExistsError, match="another kind"):
        export_rocksdb(BASIC.db, other, overwrite=True)
    assert layout_files(other) == before
