"""A tiered dataset is Delta tables, one pinned run per export: every reader reads that run
(import byte for byte, queries, DuckDB, foreign readers), ``--overwrite`` is one more
version (killed at any step, the old export or the new is whole), and a dataset of the
older manifest layout is still read and converted in place."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from cli_run import run
from deltalake import DeltaTable
from golden_data import golden_set
from legacy_dataset import LEGACY, comparable, layout_files, manifest_layout
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.delta.run import open_snapshot
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.to_delta import convert_to_delta
from tiered_golden_data import ALL_TIERED

import rmqarrow
from rmqarrow.errors import DatasetError, InvalidValueError, OutputExistsError
from rmqarrow.format.detect import MANIFEST_NAME, TIERED_DATASET_FORMAT, detect
from rmqarrow.tiered.parquet.export import TIERED_TABLES, export_tiered
from rmqarrow.tiered.parquet.importer import import_tiered, read_tiered_manifest

BASIC = next(s for s in ALL_TIERED if s.name == "tiered_basic")
PIN = "tiered_files"
GOLDEN_INDEX = golden_set("rolling")


def _rows(ds: Path, **open_args: object) -> dict[str, int]:
    with rmqarrow.open(ds, **open_args) as store:  # type: ignore[arg-type]
        return {t: store.scan(t).read_all().num_rows for t in TIERED_TABLES}


def _imported(ds: Path, out: Path, **open_args: object) -> bytes:
    with rmqarrow.open(ds, **open_args) as store:  # type: ignore[arg-type]
        (path,) = store.import_files(out)
    return path.read_bytes()


def test_export_is_delta_tables_and_imports_byte_for_byte(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    manifest = export_tiered(BASIC.dir / "unsealed.bin", ds)
    assert not (ds / MANIFEST_NAME).exists()
    assert is_delta_dataset(ds, PIN) and detect(ds).kind == "tiered_dataset"
    assert manifest["format"] == TIERED_DATASET_FORMAT and "delta" in manifest
    snap = open_snapshot(ds, pin_table=PIN)
    assert set(snap.versions) == set(TIERED_TABLES)
    assert snap.pin.source["format"] == TIERED_DATASET_FORMAT
    for t in TIERED_TABLES:
        assert DeltaTable(str(ds / t)).version() == 0, t
    assert (
        import_tiered(ds, tmp_path / "out")[0].read_bytes()
        == (BASIC.dir / "unsealed.bin").read_bytes()
    )


def test_overwrite_is_a_new_version_and_as_of_reads_the_old(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = tmp_path / "ds"
    export_tiered(BASIC.dir / "unsealed.bin", ds)
    with pytest.raises(OutputExistsError):
        export_tiered(BASIC.dir / "compacted.bin", ds)
    export_tiered(BASIC.dir / "compacted.bin", ds, overwrite=True)
    assert open_snapshot(ds, pin_table=PIN).version == 1
    with rmqarrow.open(ds) as store:
        assert [v["version"] for v in store.versions()] == [0, 1]
        assert store.info().manifest["delta"]["version"] == 1
    golden = {f: (BASIC.dir / f).read_bytes() for f in ("unsealed.bin", "compacted.bin")}
    assert _imported(ds, tmp_path / "new") == golden["compacted.bin"]
    assert _imported(ds, tmp_path / "old", as_of=0) == golden["unsealed.bin"]
    with pytest.raises(InvalidValueError, match="no version 5"):
        rmqarrow.open(ds, as_of=5)
    # the CLI's versions, --as-of, and vacuum: as for a dataset of index files
    status, out, _ = run(capsys, "info", str(ds))
    assert status == 0 and "pinned version 1" in out
    q = BASIC.queries[0]
    for as_of, form in (("0", "unsealed"), ("1", "compacted")):
        status, out, _ = run(
            capsys,
            "query",
            str(ds),
            "--engine",
            "duckdb",
            "--as-of",
            as_of,
            "--topic",
            q.topic,
            "--key",
            q.key,
            "--max-num",
            str(q.max_count),
            "--json",
        )
        got = [(g["queue_id"], g["offset"]) for g in json.loads(out)["items"]]
        assert status == 0 and got == [(w[2], w[3]) for w in BASIC.expected[form][0].items]
    status, _, _ = run(capsys, "vacuum", str(ds), "--retention", "0", "--force")
    assert status == 0
    with rmqarrow.open(ds) as store:
        assert [v["readable"] for v in store.versions()] == [False, True]
    assert _imported(ds, tmp_path / "after") == golden["compacted.bin"]


def test_foreign_readers_count_what_rmqarrow_reads(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    export_tiered(BASIC.dir / "compacted.bin", ds)
    export_tiered(BASIC.dir / "unsealed.bin", ds, overwrite=True)  # old parts stay on disk
    ours = _rows(ds)
    snap = open_snapshot(ds, pin_table=PIN)
    for t in TIERED_TABLES:
        delta = DeltaTable(str(ds / t)).to_pyarrow_table()
        assert delta.num_rows == ours[t], t
        files = snap.files(t)
        con = duckdb.connect()
        assert con.sql(f"SELECT count(*) FROM read_parquet({files!r})").fetchall() == [(ours[t],)]
        con.register("delta_table", delta)  # Delta read by deltalake, counted by DuckDB
        assert con.sql("SELECT count(*) FROM delta_table").fetchall() == [(ours[t],)], t
        con.close()
    # the folders hold more rows than any reader of the pin counts
    assert len(list((ds / "tiered_files").glob("*.parquet"))) == 2


def test_the_older_layout_reads_and_converts_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = tmp_path / "ds"
    export_tiered(BASIC.dir / "unsealed.bin", ds)
    legacy = tmp_path / "legacy"
    written = manifest_layout(ds, legacy, TIERED_DATASET_FORMAT)
    # the helper makes what the older writer made (tests/legacy)
    real = LEGACY / "tiered_basic"
    assert layout_files(legacy) == layout_files(real)
    want = json.loads((real / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert comparable(written) == comparable(want)
    golden = (BASIC.dir / "unsealed.bin").read_bytes()
    for old in (legacy, real):
        assert detect(old).kind == "tiered_dataset" and not is_delta_dataset(old)
        assert _rows(old) == _rows(ds)
        assert _imported(old, tmp_path / f"{old.name}-out") == golden
        with pytest.raises(InvalidValueError, match="keeps no versions"):
            rmqarrow.open(old, as_of=0)
    before = {p: p.read_bytes() for p in legacy.rglob("*.parquet")}
    status, _, err = run(capsys, "convert", str(legacy))
    assert status == 0, err
    assert is_delta_dataset(legacy, PIN) and not (legacy / MANIFEST_NAME).exists()
    assert {p: p.read_bytes() for p in legacy.rglob("*.parquet")} == before  # nothing rewritten
    assert read_tiered_manifest(legacy)["tables"] == written["tables"]
    assert _imported(legacy, tmp_path / "converted") == golden
    assert not convert_to_delta(legacy)  # once is enough


_OVERWRITE = """
import sys
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.tiered.parquet.export import export_tiered
export_tiered(sys.argv[1], sys.argv[2], overwrite=True)
"""


@pytest.mark.slow  # a real kill -9 at each step: the full suite's, not the fast tier's
@pytest.mark.parametrize(
    "crash", ["export:manifest", "delta:replaced-parts", "delta:table", "delta:pinned"]
)
def test_an_overwrite_killed_at_every_step_leaves_one_whole_export(
    tmp_path: Path, crash: str
) -> None:
    ds = tmp_path / "ds"
    export_tiered(BASIC.dir / "unsealed.bin", ds)
    golden = {f: (BASIC.dir / f).read_bytes() for f in ("unsealed.bin", "compacted.bin")}
    env = {**os.environ, "RMQARROW_CRASH_AT": crash}
    done = subprocess.run(
        [sys.executable, "-c", _OVERWRITE, str(BASIC.dir / "compacted.bin"), str(ds)],
        env=env,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL
    landed = crash == "delta:pinned"
    want = golden["compacted.bin" if landed else "unsealed.bin"]
    assert _imported(ds, tmp_path / "after-kill") == want  # the old export whole, or the new
    export_tiered(BASIC.dir / "compacted.bin", ds, overwrite=True)  # the next run converges
    assert _imported(ds, tmp_path / "next") == golden["compacted.bin"]
    snap = open_snapshot(ds, pin_table=PIN)
    for t in TIERED_TABLES:  # nothing the kill left is visible to a plain Delta reader
        assert set(DeltaTable(str(ds / t)).file_uris()) == set(snap.files(t)), t
    assert _imported(ds, tmp_path / "first", as_of=0) == golden["unsealed.bin"]


@pytest.mark.spark
def test_spark_reads_the_pinned_run(tmp_path: Path, spark: object) -> None:
    from rmqarrow.tiered import answer_queries

    ds = tmp_path / "ds"
    export_tiered(BASIC.dir / "unsealed.bin", ds)
    export_tiered(BASIC.dir / "compacted.bin", ds, overwrite=True)
    queries = [(q.topic, q.key, q.max_count, q.begin, q.end) for q in BASIC.queries]

    def shown(answers: list[object]) -> list[object]:
        return [type(a).__name__ if isinstance(a, Exception) else a for a in answers]

    for as_of, form in ((0, "unsealed"), (None, "compacted")):
        with rmqarrow.open(ds, as_of=as_of) as store:
            got = store.answers(queries, engine="spark")
        want = answer_queries(BASIC.dir / f"{form}.bin", queries)
        assert shown(got) == shown(want), form


def test_overwrite_replaces_the_older_layout_and_refuses_another_kind(tmp_path: Path) -> None:
    """``--overwrite`` of a tiered dataset of the older layout replaces it by Delta tables;
    a dataset of Delta tables of another kind is refused, nothing of it touched."""
    old = tmp_path / "old"
    shutil.copytree(LEGACY / "tiered_basic", old)
    export_tiered(BASIC.dir / "unsealed.bin", old, overwrite=True)
    assert is_delta_dataset(old, PIN) and not (old / MANIFEST_NAME).exists()
    assert import_tiered(old, tmp_path / "out")[0].read_bytes() == (
        (BASIC.dir / "unsealed.bin").read_bytes()
    )
    index = tmp_path / "index-ds"
    rmqarrow.open(GOLDEN_INDEX.store_dir, hash_slot_num=16, index_num=32).export(index)
    before = layout_files(index)
    with pytest.raises(OutputExistsError, match="another kind"):
        export_tiered(BASIC.dir / "unsealed.bin", index, overwrite=True)
    assert layout_files(index) == before and is_delta_dataset(index, "files")
    # nor does an incremental export of index files take the tiered dataset
    tiered = layout_files(old)
    with pytest.raises(DatasetError, match="dataset of tiered files; an incremental export"):
        sync_store(GOLDEN_INDEX.store_dir, old, hash_slot_num=16, index_num=32)
    assert layout_files(old) == tiered
