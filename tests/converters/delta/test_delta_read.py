"""rmqarrow's own readers over a dataset of Delta tables: they read the pinned snapshot's
files, never a listing of the folders, and answer as over the manifest layout.

A real export (manifest layout) is converted in place, then changed by real Delta commits;
lookups (DuckDB over the dataset), the table scans, ``check``, verify's comparison with
the store and ``import`` are compared with the native store's answers and with the
dataset before conversion.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_run import one_error, run
from deltalake import DeltaTable
from generated_store import GeneratedStore, build_generated
from legacy_dataset import legacy_export
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.delta.run import TableChange, commit_run, open_snapshot
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.manifest import MANIFEST_NAME, check_parts, read_manifest
from rmqarrow.converters.parquet.parts import table_parts
from rmqarrow.converters.parquet.to_delta import convert_to_delta, run_record

import rmqarrow
from rmqarrow.errors import DatasetError, InvalidValueError

MESSAGES = 600
TABLES = ("entries", "files", "slots")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("delta-read") / "g", MESSAGES)


def _export(g: GeneratedStore, ds: Path) -> None:
    """A dataset of the older manifest layout (the tests convert it)."""
    legacy_export(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)


def _queries(g: GeneratedStore) -> list[tuple[str, int, int, int]]:
    return [(k, 64, 0, 2**62) for k in sorted(set(g.keys))[:40]]


def _rows(ds: Path) -> dict[str, int]:
    store = rmqarrow.open(ds)
    return {t: store.scan(t).read_all().num_rows for t in TABLES}


def test_a_converted_dataset_answers_as_before(generated: GeneratedStore, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    _export(generated, ds)
    qs = _queries(generated)
    native = rmqarrow.open(generated.store).answers(qs)
    assert any(native)
    before = _rows(ds)
    before_manifest = read_manifest(ds)
    assert rmqarrow.open(ds).answers(qs) == native
    assert convert_to_delta(ds) is True
    assert not (ds / MANIFEST_NAME).exists() and is_delta_dataset(ds)
    assert convert_to_delta(ds) is False  # once
    manifest = read_manifest(ds)
    assert manifest["delta"]["version"] == 0
    assert manifest["tables"] == before_manifest["tables"]
    assert manifest["source"] == before_manifest["source"]
    assert {r["path"] for r in manifest["parts"]} == {r["path"] for r in before_manifest["parts"]}
    store = rmqarrow.open(ds)
    assert store.answers(qs) == native
    assert _rows(ds) == before
    assert store.check(full=True).ok
    # a foreign reader of the Delta tables counts the same rows
    for t in TABLES:
        assert DeltaTable(str(ds / t)).to_pyarrow_table().num_rows == before[t], t
    # import gives the store's files back, byte for byte
    out = tmp_path / "imported"
    written = store.import_files(out)
    for path in written:
        assert path.read_bytes() == (generated.store / path.name).read_bytes(), path.name


def test_readers_read_the_pin_not_the_folders(generated: GeneratedStore, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    _export(generated, ds)
    convert_to_delta(ds)
    before = _rows(ds)
    entries = table_parts(ds, "entries")
    assert len(entries) >= 2
    dropped = entries[0]
    gone_rows = pq.ParquetFile(dropped).metadata.num_rows
    # a run removes one entries part (it stays on disk until a vacuum) ...
    commit_run(
        ds,
        {"entries": TableChange(remove=[dropped.name])},
        app=("test-drop", 1),
        source=run_record(read_manifest(ds)) | {"run": 1},
    )
    assert dropped.exists()
    assert dropped not in table_parts(ds, "entries")
    assert _rows(ds)["entries"] == before["entries"] - gone_rows
    assert rmqarrow.open(ds).check(full=True).ok  # the removed part is no extra part
    # ... and a killed run's part, committed to entries but never pinned, is not read
    stray = ds / "entries" / "part-stray.parquet"
    shutil.copy(entries[1], stray)
    version = DeltaTable(str(ds / "entries")).version()
    from rmqarrow.converters.delta.commit import commit_table
    from rmqarrow.converters.delta.run import table_schema

    commit_table(ds / "entries", table_schema("entries"), add=[stray], base_version=version)
    assert stray not in table_parts(ds, "entries")
    assert _rows(ds)["entries"] == before["entries"] - gone_rows
    # the run before is still there to read, as of its version
    old = read_manifest(ds, as_of=0)
    assert str(dropped.relative_to(ds)) in {r["path"] for r in old["parts"]}
    assert table_parts(ds, "entries", old) == entries
    with pytest.raises(InvalidValueError, match="no version 9"):
        read_manifest(ds, as_of=9)


def test_as_of_on_the_manifest_layout_is_refused(generated: GeneratedStore, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    _export(generated, ds)
    with pytest.raises(InvalidValueError, match="keeps no versions"):
        read_manifest(ds, as_of=0)


def test_a_changed_part_of_a_delta_dataset_is_found(
    generated: GeneratedStore, tmp_path: Path
) -> None:
    ds = tmp_path / "ds"
    _export(generated, ds)
    convert_to_delta(ds)
    part = table_parts(ds, "slots")[0]
    shutil.copy(table_parts(ds, "entries")[0], part)  # another file under its name
    with pytest.raises(DatasetError, match="changed since export"):
        check_parts(ds)
    assert not rmqarrow.open(ds).check().ok
    part.unlink()
    with pytest.raises(DatasetError, match=r"listed in the manifest .* is missing"):
        table_parts(ds, "slots")


_CONVERT = """
import sys
from rmqarrow.converters.parquet.to_delta import convert_to_delta, run_record
convert_to_delta(sys.argv[1])
"""


@pytest.mark.parametrize("crash", ["delta:table", "delta:pinned", "convert:committed"])
def test_a_conversion_killed_at_every_step_reads_as_before_and_finishes(
    generated: GeneratedStore, tmp_path: Path, crash: str
) -> None:
    ds = tmp_path / "ds"
    _export(generated, ds)
    qs = _queries(generated)
    native = rmqarrow.open(generated.store).answers(qs)
    before = _rows(ds)
    env = {**os.environ, "RMQARROW_CRASH_AT": crash}
    done = subprocess.run([sys.executable, "-c", _CONVERT, str(ds)], env=env, timeout=300)
    assert done.returncode == -signal.SIGKILL
    assert (ds / MANIFEST_NAME).exists() and not is_delta_dataset(ds)
    assert rmqarrow.open(ds).answers(qs) == native
    assert _rows(ds) == before
    assert convert_to_delta(ds) is True
    assert is_delta_dataset(ds)
    assert rmqarrow.open(ds).answers(qs) == native
    assert _rows(ds) == before
    snap = open_snapshot(ds)
    for t in TABLES:  # every part committed once, nothing else
        assert len(snap.files(t)) == len(set(snap.files(t)))
        assert DeltaTable(str(ds / t)).to_pyarrow_table().num_rows == before[t], t


@pytest.mark.parametrize("table", ["files", "slots"])
@pytest.mark.parametrize("damage", ["garbage", "missing"])
def test_a_damaged_log_is_one_clear_error(
    generated: GeneratedStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    table: str,
    damage: str,
) -> None:
    ds = tmp_path / "ds"
    export_store(
        generated.store,
        ds,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    log = ds / table / "_delta_log"
    if damage == "garbage":
        (log / f"{0:020d}.json").write_text('{"trunc', encoding="utf-8")
    else:
        shutil.rmtree(log)
        log.mkdir()
    status, _, err = run(capsys, "sql", str(ds), "SELECT count(*) FROM slots")
    assert status == 1
    one_error(err, str(ds))
    assert "this is a bug" not in err
