"""Export to the Parquet dataset: schema, values, layout, manifest, atomicity."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import rmqarrow.converters.parquet.export as export_mod
from golden_data import GoldenSet
from rmqarrow.converters.arrow.tables import store_tables
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.parquet.export import (
    GROUP_ENTRIES,
    entry_count,
    export_store,
    plan_groups,
)
from rmqarrow.converters.parquet.manifest import read_manifest, stale_reasons
from rmqarrow.converters.schema import SCHEMA_VERSION, SCHEMAS

from rmqarrow import Geometry
from rmqarrow.errors import CorruptIndexError, OutputExistsError, StoreNotFoundError
from rmqarrow.format.layout import map_regions
from rmqarrow.testing.stores import write_random_store

TABLES = ("files", "slots", "entries")
SORT = {
    "files": [("file_name", "ascending")],
    "slots": [("file_name", "ascending"), ("slot", "ascending")],
    "entries": [("file_name", "ascending"), ("position", "ascending")],
}


def _geo(g: GoldenSet) -> dict[str, int]:
    return {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num}


def test_golden_export_schema_and_values(golden: GoldenSet, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    manifest = export_store(golden.store_dir, out, **_geo(golden))
    ref = store_tables(golden.store_dir, golden.hash_slot_num, golden.index_num)
    for table in TABLES:
        got = pq.read_table(out / table)
        assert got.schema.equals(SCHEMAS[table], check_metadata=True)
        want = getattr(ref, table)
        assert got.sort_by(SORT[table]).equals(want.sort_by(SORT[table]))
        assert manifest["tables"][table]["rows"] == want.num_rows
    assert read_manifest(out) == manifest
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert [f["file_name"] for f in manifest["source"]["files"]] == list(golden.files)
    assert {f["hash_slot_num"] for f in manifest["source"]["files"]} == {golden.hash_slot_num}
    assert stale_reasons(out) == []


def test_layout_parts_entries_sorted(golden: GoldenSet, tmp_path: Path) -> None:
    """Small files share parts, oldest first, each file's entries in (slot, position)
    order; the newest file and large ones have parts of their own."""
    out = tmp_path / "ds"
    export_store(golden.store_dir, out, **_geo(golden))
    assert sorted(p.name for p in (out / "files").glob("*.parquet")) == ["part-00000.parquet"]
    counts = [entry_count(p) for p in golden.file_paths]
    groups = plan_groups(counts)
    assert groups[-1] == range(len(counts) - 1, len(counts))  # the newest alone
    manifest = read_manifest(out)
    for table in ("slots", "entries"):
        parts = sorted((out / table).glob("*.parquet"))
        assert [p.name for p in parts] == [f"part-{g.start:05d}.parquet" for g in groups]
        for part, g in zip(parts, groups, strict=True):
            t = pq.read_table(part)
            names = t.column("file_name").to_pylist()
            members = [golden.files[i] for i in g]
            assert set(names) <= set(members)
            assert names == sorted(names, key=members.index)  # file after file
            if table == "entries" and t.num_rows:
                keys = list(
                    zip(
                        names,
                        t.column("slot").to_pylist(),
                        t.column("position").to_pylist(),
                        strict=True,
                    )
                )
                assert keys == sorted(keys, key=lambda k: (members.index(k[0]), k[1], k[2]))
                md = pq.ParquetFile(part).metadata.row_group(0)
                assert bool(md.sorting_columns) == (len(g) == 1)
            for i in g:  # the manifest names each file's parts
                (info,) = [
                    f for f in manifest["source"]["files"] if f["file_name"] == golden.files[i]
                ]
                assert f"{table}/{part.name}" in info["parts"]


def test_plan_groups() -> None:
    big = GROUP_ENTRIES
    assert plan_groups([]) == []
    assert plan_groups([5]) == [range(0, 1)]
    assert plan_groups([5, 5, 5]) == [range(0, 2), range(2, 3)]
    # a large file alone; groups never pass GROUP_ENTRIES
    assert plan_groups([1, big, 1, 1, 1]) == [
        range(0, 1),
        range(1, 2),
        range(2, 4),
        range(4, 5),
    ]
    assert plan_groups([big - 1, 2, 1, 0, 7]) == [range(0, 1), range(1, 4), range(4, 5)]
    every = plan_groups([3] * 10_000)
    assert [i for g in every for i in g] == list(range(10_000))
    assert all(3 * len(g) <= big for g in every)


def test_export_one_file(golden: GoldenSet, tmp_path: Path) -> None:
    path = golden.file_paths[-1]
    export_store(path, tmp_path / "ds", **_geo(golden))
    got = pq.read_table(tmp_path / "ds" / "entries")
    assert set(got.column("file_name").to_pylist()) <= {path.name}
    assert pq.read_table(tmp_path / "ds" / "files").column("file_name").to_pylist() == [path.name]


def test_empty_store_exports_empty_tables(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    export_store(tmp_path / "store", tmp_path / "ds")
    for table in TABLES:
        t = pq.read_table(tmp_path / "ds" / table)
        assert t.num_rows == 0 and t.schema.equals(SCHEMAS[table], check_metadata=True)


def test_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        export_store(tmp_path / "nope", tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_never_replaces_its_own_source(golden: GoldenSet, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    for p in golden.file_paths:
        (store / p.name).write_bytes(p.read_bytes())
    for target in (store, tmp_path, store / golden.files[0]):
        source = store / golden.files[0] if target.is_file() else store
        with pytest.raises(OutputExistsError, match="source"):
            export_store(source, target, overwrite=True, **_geo(golden))
    assert sorted(p.name for p in store.iterdir()) == list(golden.files)


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_no_overwrite_without_flag(golden: GoldenSet, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    out.mkdir()
    (out / "precious").write_text("keep")
    with pytest.raises(OutputExistsError):
        export_store(golden.store_dir, out, **_geo(golden))
    assert [p.name for p in out.iterdir()] == ["precious"]
    # --overwrite replaces only an rmqarrow dataset, never a folder of documents
    with pytest.raises(OutputExistsError, match="not an rmqarrow dataset"):
        export_store(golden.store_dir, out, overwrite=True, **_geo(golden))
    assert [p.name for p in out.iterdir()] == ["precious"]
    (out / "precious").unlink()
    out.rmdir()
    export_store(golden.store_dir, out, **_geo(golden))
    export_store(golden.store_dir, out, overwrite=True, **_geo(golden))
    assert is_delta_dataset(out) and read_manifest(out)["delta"]["version"] == 1
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("exc", [RuntimeError("disk full"), KeyboardInterrupt()])
@pytest.mark.parametrize("overwrite", [False, True])
def test_interrupted_export_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exc: BaseException, overwrite: bool
) -> None:
    store = tmp_path / "store"
    write_random_store(store, Geometry(16, 64), [40, 40, 10], seed=3)
    out = tmp_path / "ds"
    if overwrite:
        export_store(store, out, hash_slot_num=16, index_num=64)
        before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    calls: list[Path] = []
    real = pq.ParquetWriter.write_table  # write_batch writes through it too

    def flaky(self: pq.ParquetWriter, table: pa.Table, *a: object, **k: object) -> None:
        calls.append(Path(self.where))
        if len(calls) == 4:  # midway: after some parts are complete
            raise exc
        real(self, table, *a, **k)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", flaky)
    with pytest.raises(type(exc)):
        export_store(store, out, overwrite=overwrite, hash_slot_num=16, index_num=64)
    assert len(calls) == 4
    assert _leftovers(tmp_path) == []
    if overwrite:
        after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        assert after == before
    else:
        assert not out.exists()


def test_before_write_hook_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    write_random_store(store, Geometry(16, 64), [10, 10], seed=4)

    def stop(table: str, path: Path) -> None:
        if table == "entries" and path.name == "part-00001.parquet":
            raise KeyboardInterrupt

    monkeypatch.setattr(export_mod, "_before_write", stop)
    with pytest.raises(KeyboardInterrupt):
        export_store(store, tmp_path / "ds", hash_slot_num=16, index_num=64)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def _one_file_store(tmp_path: Path, n: int = 20) -> Path:
    store = tmp_path / "store"
    write_random_store(store, Geometry(8, 32), [n], seed=5)
    return store


def test_exports_as_of_the_header_count(tmp_path: Path) -> None:
    """Entries past the header's count are a batch not committed yet (a live broker, a
    killed build): export snapshots the file at its count, so the dataset is consistent."""
    store = _one_file_store(tmp_path)
    path = next(store.iterdir())
    before = path.read_bytes()
    m = map_regions(path, Geometry(8, 32), writable=True)
    m.entries["phy_offset"][25] = 7
    m.close()
    export_store(store, tmp_path / "ds", hash_slot_num=8, index_num=32)
    from rmqarrow.converters.parquet.importer import import_dataset

    (back,) = import_dataset(tmp_path / "ds", tmp_path / "back")
    assert back.read_bytes() == before


def test_refuses_position_zero_data(tmp_path: Path) -> None:
    store = _one_file_store(tmp_path)
    m = map_regions(next(store.iterdir()), Geometry(8, 32), writable=True)
    m.entries["key_hash"][0] = 1
    m.close()
    with pytest.raises(CorruptIndexError, match="position 0"):
        export_store(store, tmp_path / "ds", hash_slot_num=8, index_num=32)


def test_slot_head_past_index_count_is_an_empty_slot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """RocketMQ reads a slot whose head is past indexCount as empty: so does the export
    (named in a warning), rather than refusing the store."""
    store = _one_file_store(tmp_path)
    m = map_regions(next(store.iterdir()), Geometry(8, 32), writable=True)
    slot = int(np.flatnonzero(m.slots)[0])
    m.slots[slot] = 30
    m.close()
    with caplog.at_level("WARNING", logger="rmqarrow"):
        export_store(store, tmp_path / "ds", hash_slot_num=8, index_num=32)
    assert any(f"slot {slot} holds 30" in r.getMessage() for r in caplog.records)
    assert slot not in pq.read_table(tmp_path / "ds" / "slots").column("slot").to_pylist()


def test_stale_reasons(tmp_path: Path) -> None:
    store = tmp_path / "store"
    paths = write_random_store(store, Geometry(8, 32), [5, 5], seed=6)
    export_store(store, tmp_path / "ds", hash_slot_num=8, index_num=32)
    assert stale_reasons(tmp_path / "ds") == []
    st = paths[0].stat()
    os.utime(paths[0], ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert stale_reasons(tmp_path / "ds") == []  # same bytes: a new mtime is no change
    m = map_regions(paths[0], Geometry(8, 32), writable=True)
    m.header["end_timestamp"] += 1  # as a put would
    m.close()
    paths[1].unlink()
    reasons = stale_reasons(tmp_path / "ds", store)
    assert any("modified" in r and paths[0].name in r for r in reasons)
    assert any("gone" in r and paths[1].name in r for r in reasons)


def test_read_dataset_equals_reference(golden: GoldenSet, tmp_path: Path) -> None:
    import pyarrow.compute as pc
    from rmqarrow.converters.parquet.dataset import open_dataset, read_dataset

    export_store(golden.store_dir, tmp_path / "ds", **_geo(golden))
    ref = store_tables(golden.store_dir, golden.hash_slot_num, golden.index_num)
    got = read_dataset(tmp_path / "ds")
    for table in TABLES:
        assert getattr(got, table).equals(getattr(ref, table)), table
        assert getattr(got, table).schema.equals(SCHEMAS[table], check_metadata=True)
    h = ref.entries.column("key_hash")[0].as_py()
    s = ref.entries.column("slot")[0].as_py()
    hits = open_dataset(tmp_path / "ds", "entries").to_table(
        filter=(pc.field("slot") == s) & (pc.field("key_hash") == h)
    )
    assert hits.num_rows == pc.sum(pc.equal(ref.entries.column("key_hash"), h)).as_py()


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1.5"])
def test_a_bad_thread_count_is_one_clear_error(
    golden: GoldenSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from rmqarrow.errors import InvalidValueError

    monkeypatch.setenv("RMQARROW_EXPORT_THREADS", value)
    out = tmp_path / "ds"
    with pytest.raises(InvalidValueError, match="RMQARROW_EXPORT_THREADS must be a positive"):
        export_store(
            golden.store_dir, out, hash_slot_num=golden.hash_slot_num, index_num=golden.index_num
        )
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


def test_one_export_thread_gives_the_same_dataset(
    golden: GoldenSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files exported two at a time (forced on these small files) or one at a time: the
    same parts."""
    monkeypatch.setattr(export_mod, "PARALLEL_ENTRIES", 1)
    kwargs = {"hash_slot_num": golden.hash_slot_num, "index_num": golden.index_num}
    export_store(golden.store_dir, tmp_path / "two", **kwargs)
    monkeypatch.setenv("RMQARROW_EXPORT_THREADS", "1")
    export_store(golden.store_dir, tmp_path / "one", **kwargs)
    for table in ("files", "slots", "entries"):
        parts = sorted(p.name for p in (tmp_path / "two" / table).glob("*.parquet"))
        assert parts == sorted(p.name for p in (tmp_path / "one" / table).glob("*.parquet"))
        for part in parts:
            one = pq.read_table(tmp_path / "one" / table / part)
            assert one.equals(pq.read_table(tmp_path / "two" / table / part)), (table, part)


@pytest.mark.parametrize("numba", ["0", "1"], ids=["numba", "numpy"])
def test_one_big_file_is_written_as_two_parts_that_import_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, numba: str
) -> None:
    """A store of one large file: its entries in two consecutive ranges of the (slot,
    position) order, written at once; together the rows of one part, and the dataset
    imports to the same bytes (with the manifest's checksums of both parts)."""
    from rmqarrow.converters.parquet.importer import import_dataset

    from rmqarrow.kernels import _compiled

    monkeypatch.setenv("RMQARROW_NO_NUMBA", numba)
    _compiled.reset()
    monkeypatch.setattr(export_mod, "PARALLEL_ENTRIES", 1)
    monkeypatch.setattr(export_mod, "ROW_GROUP_ROWS", 64)  # several row groups a part
    g = Geometry(97, 2_000)
    (path,) = write_random_store(tmp_path / "store", g, [1_500], seed=3)
    kwargs = {"hash_slot_num": 97, "index_num": 2_000}
    manifest = export_store(tmp_path / "store", tmp_path / "two", **kwargs)
    monkeypatch.setenv("RMQARROW_EXPORT_THREADS", "1")
    export_store(tmp_path / "store", tmp_path / "one", **kwargs)
    _compiled.reset()
    names = sorted(p.name for p in (tmp_path / "two" / "entries").glob("*.parquet"))
    assert names == ["part-00000-1.parquet", "part-00000.parquet"]
    first, second = (
        pq.read_table(tmp_path / "two" / "entries" / n)
        for n in ("part-00000.parquet", "part-00000-1.parquet")
    )
    assert first.num_rows > 0 and second.num_rows > 0
    assert first.num_rows % 64 == 0  # the split falls between row groups
    one = pq.read_table(tmp_path / "one" / "entries" / "part-00000.parquet")
    assert pa.concat_tables([first, second]).equals(one)
    assert {p["path"] for p in manifest["parts"]} >= {f"entries/{n}" for n in names}
    assert manifest["tables"]["entries"]["rows"] == 1_500
    (rebuilt,) = import_dataset(tmp_path / "two", tmp_path / "back")
    assert rebuilt.read_bytes() == path.read_bytes()


def _misread(path: Path, g: Geometry) -> None:
    """Give a file the header a broker writes when its clock steps back while the file
    fills: the end time before the begin time (RocketMQ still reads the file)."""
    m = map_regions(path, g, writable=True)
    try:
        m.header["end_timestamp"] = int(m.header["begin_timestamp"][0]) - 5000
    finally:
        m.close()


@pytest.mark.slow
def test_many_small_files_with_misread_headers_all_exported(tmp_path: Path) -> None:
    """More small files than a shared part gathers in one batch, some with headers
    RocketMQ misreads: every file and entry is in the dataset, its manifest counts the
    rows the tables hold, and import gives the store back byte for byte."""
    from rmqarrow.converters.parquet.importer import import_dataset

    import rmqarrow

    g = Geometry(2, 6)
    store, ds, back = tmp_path / "store", tmp_path / "ds", tmp_path / "back"
    paths = write_random_store(store, g, [5] * 600)
    for p in paths[::97]:
        _misread(p, g)
    with rmqarrow.open(store, hash_slot_num=2, index_num=6) as s:
        manifest = s.export(ds)
    tables = {t: pq.read_table(ds / t).num_rows for t in ("files", "slots", "entries")}
    assert tables["files"] == 600
    assert tables["entries"] == 600 * 5
    assert {t: manifest["tables"][t]["rows"] for t in tables} == tables
    assert len(manifest["source"]["files"]) == 600
    import_dataset(ds, back)
    assert {p.name: p.read_bytes() for p in back.iterdir()} == {
        p.name: p.read_bytes() for p in store.iterdir()
    }
