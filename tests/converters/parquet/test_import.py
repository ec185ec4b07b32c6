"""Import: byte-identical round trips, and clear errors for bad datasets (nothing written)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from golden_data import GoldenSet
from hypothesis import given, settings
from hypothesis import strategies as st
from legacy_dataset import legacy_export
from rmqarrow.converters.parquet.importer import import_dataset
from rmqarrow.converters.parquet.manifest import MANIFEST_NAME, part_records

from rmqarrow import Geometry, IndexFile
from rmqarrow.errors import DatasetError, OutputExistsError, StoreNotFoundError
from rmqarrow.testing.stores import write_random_store

# These tests look at the part files and the manifest of the older layout, which rmqarrow
# still reads; Delta tables commit the same parts (tests/converters/delta/ imports them
# byte-identical).
export_store = legacy_export


def _same_files(a: list[Path], b: list[Path]) -> None:
    assert [p.name for p in a] == [p.name for p in b]
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes(), x.name


def test_golden_round_trip(golden: GoldenSet, tmp_path: Path) -> None:
    export_store(
        golden.store_dir,
        tmp_path / "ds",
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    paths = import_dataset(tmp_path / "ds", tmp_path / "out")
    _same_files(paths, golden.file_paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "out"]
    for p, orig in zip(paths, golden.file_paths, strict=True):
        assert p.stat().st_mtime_ns == orig.stat().st_mtime_ns


@settings(max_examples=12, deadline=None)
@given(
    counts=st.lists(st.integers(0, 63), min_size=1, max_size=3),
    slots=st.integers(1, 20),
    seed=st.integers(0, 10_000),
)
def test_random_synthetic_round_trip(
    tmp_path_factory: pytest.TempPathFactory, counts: list[int], slots: int, seed: int
) -> None:
    d = tmp_path_factory.mktemp("rt")
    originals = write_random_store(
        d / "store", Geometry(slots, 64), counts, seed=seed, distinct_hashes=7
    )
    export_store(d / "store", d / "ds", hash_slot_num=slots, index_num=64)
    _same_files(import_dataset(d / "ds", d / "out"), originals)


@settings(max_examples=10, deadline=None)
@given(
    puts=st.lists(
        st.tuples(st.text(max_size=4), st.integers(0, 2**40), st.integers(-5_000, 10**7)),
        max_size=40,
    ),
    slots=st.integers(1, 6),
)
def test_random_indexfile_round_trip(
    tmp_path_factory: pytest.TempPathFactory, puts: list[tuple[str, int, int]], slots: int
) -> None:
    """Stores written by the native engine, put by put: rolling files, odd times, collisions."""
    d = tmp_path_factory.mktemp("native")
    store = d / "store"
    store.mkdir()
    names = iter(f"{i:05d}" for i in range(100))
    f = IndexFile.create(store / next(names), hash_slot_num=slots, index_num=8)
    for key, offset, ts in puts:
        if not f.put_key(key, offset, ts):
            end_phy, end_ts = f.end_phy_offset, f.end_timestamp
            f.close()
            f = IndexFile.create(
                store / next(names),
                hash_slot_num=slots,
                index_num=8,
                end_phy_offset=end_phy,
                end_timestamp=end_ts,
            )
            assert f.put_key(key, offset, ts)
    f.close()
    originals = sorted(store.iterdir())
    export_store(store, d / "ds", hash_slot_num=slots, index_num=8)
    _same_files(import_dataset(d / "ds", d / "out"), originals)


def test_import_into_existing_dir_never_overwrites(golden: GoldenSet, tmp_path: Path) -> None:
    export_store(
        golden.store_dir,
        tmp_path / "ds",
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "other").write_bytes(b"x")
    paths = import_dataset(tmp_path / "ds", out)
    _same_files(paths, golden.file_paths)
    victim = out / golden.files[-1]
    victim.write_bytes(b"mine")
    for p in paths[:-1]:
        p.unlink()
    with pytest.raises(OutputExistsError, match=golden.files[-1]):
        import_dataset(tmp_path / "ds", out)
    assert victim.read_bytes() == b"mine"
    assert sorted(p.name for p in out.iterdir()) == sorted(["other", golden.files[-1]])


# -- bad datasets -----------------------------------------------------------------------


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    write_random_store(tmp_path / "store", Geometry(8, 32), [20, 25], seed=11, distinct_hashes=6)
    export_store(tmp_path / "store", tmp_path / "ds", hash_slot_num=8, index_num=32)
    return tmp_path / "ds"


def _rewrite(
    ds: Path,
    table: str,
    part: int,
    change: Callable[[pa.Table], pa.Table],
    *,
    fix_manifest: bool = True,
) -> None:
    path = ds / table / f"part-{part:05d}.parquet"
    before = pq.read_table(path)
    after = change(before)
    pq.write_table(after, path)
    if fix_manifest:
        mpath = ds / MANIFEST_NAME
        m = json.loads(mpath.read_text())
        m["tables"][table]["rows"] += after.num_rows - before.num_rows
        # a manifest that lists the altered parts: the deeper checks must still refuse
        m["parts"] = part_records(ds)
        mpath.write_text(json.dumps(m))


def _set(t: pa.Table, column: str, row: int, value: object) -> pa.Table:
    values = t.column(column).to_pylist()
    values[row] = value
    i = t.schema.get_field_index(column)
    return t.set_column(i, t.schema.field(i), pa.array(values, t.schema.field(i).type))


def _expect(ds: Path, match: str) -> None:
    out = ds.parent / "out"
    with pytest.raises(DatasetError, match=match):
        import_dataset(ds, out)
    assert not out.exists()
    assert not [p for p in ds.parent.iterdir() if p.name.startswith(".")]


def test_missing_files_row(dataset: Path) -> None:
    _rewrite(dataset, "files", 0, lambda t: t.slice(1))
    _expect(dataset, "missing files row for 20231114221320000")


def test_rows_without_files_row(dataset: Path) -> None:
    m = json.loads((dataset / MANIFEST_NAME).read_text())
    m["source"]["files"] = m["source"]["files"][1:]
    (dataset / MANIFEST_NAME).write_text(json.dumps(m))
    _rewrite(dataset, "files", 0, lambda t: t.slice(1))
    _expect(dataset, "file_name '20231114221320000' without a files row")


def test_gap_in_positions(dataset: Path) -> None:
    _rewrite(dataset, "entries", 1, lambda t: t.filter(pc.field("position") != 7))
    _expect(dataset, "file 20231114221320001: 24 entries .* position 7 is missing")


def test_duplicate_entry_row(dataset: Path) -> None:
    _rewrite(dataset, "entries", 0, lambda t: pa.concat_tables([t, t.slice(3, 1)]))
    _expect(dataset, "duplicate rows for position")


def test_row_count_differs_from_manifest(dataset: Path) -> None:
    _rewrite(dataset, "entries", 0, lambda t: t.slice(1), fix_manifest=False)
    _expect(dataset, "changed since export")  # the manifest's part check sees it first
    m = json.loads((dataset / MANIFEST_NAME).read_text())
    del m["parts"]  # a manifest from before parts were recorded: the row counts still catch it
    (dataset / MANIFEST_NAME).write_text(json.dumps(m))
    _expect(dataset, "manifest says 45")


def test_position_out_of_range(dataset: Path) -> None:
    _rewrite(dataset, "entries", 0, lambda t: _set(t, "position", 0, 21))
    _expect(dataset, r"position 21 out of range 1\.\.20")


def test_slot_pointing_past_index_count(dataset: Path) -> None:
    _rewrite(dataset, "slots", 0, lambda t: _set(t, "head", 0, 21))
    _expect(dataset, "head 21 points past the entries")


def test_duplicate_slot(dataset: Path) -> None:
    _rewrite(dataset, "slots", 0, lambda t: pa.concat_tables([t, t.slice(0, 1)]))
    _expect(dataset, "twice")


def test_mixed_geometries(dataset: Path) -> None:
    _rewrite(
        dataset,
        "files",
        0,
        lambda t: pa.concat_tables([t, _set(t, "hash_slot_num", 0, 9).slice(0, 1)]),
    )
    _expect(dataset, "mixed geometries")


def test_duplicate_files_row(dataset: Path) -> None:
    _rewrite(dataset, "files", 0, lambda t: pa.concat_tables([t, t.slice(0, 1)]))
    _expect(dataset, "duplicate files row")


def test_slot_column_from_other_geometry(dataset: Path) -> None:
    def change(t: pa.Table) -> pa.Table:
        kh = t.column("key_hash")[0].as_py()
        return _set(t, "slot", 0, (kh % 8 + 1) % 8)

    _rewrite(dataset, "entries", 0, change)
    _expect(dataset, "mixed geometries")


def test_store_timestamp_inconsistent(dataset: Path) -> None:
    _rewrite(
        dataset,
        "entries",
        0,
        lambda t: _set(t, "store_timestamp", 0, t.column("store_timestamp")[0].as_py() + 1),
    )
    _expect(dataset, "store_timestamp")


def test_wrong_schema(dataset: Path) -> None:
    _rewrite(
        dataset,
        "entries",
        0,
        lambda t: t.set_column(2, "key_hash", t.column("key_hash").cast(pa.int64())),
    )
    _expect(dataset, "wrong schema for table entries")


def test_nulls(dataset: Path) -> None:
    _rewrite(
        dataset,
        "entries",
        0,
        lambda t: t.cast(pa.schema([f.with_nullable(True) for f in t.schema])).set_column(
            5, "time_diff", pa.array([None] * t.num_rows, pa.int32())
        ),
    )
    _expect(dataset, "time_diff holds nulls")


def test_unsafe_file_name(dataset: Path) -> None:
    _rewrite(dataset, "files", 0, lambda t: _set(t, "file_name", 0, "../evil"))
    _expect(dataset, "not a safe index file name")


def test_missing_manifest_and_tables(dataset: Path) -> None:
    (dataset / MANIFEST_NAME).unlink()
    _expect(dataset, "missing; not an rmqarrow dataset")


def test_missing_table_dir(dataset: Path) -> None:
    for p in (dataset / "slots").iterdir():
        p.unlink()
    _expect(dataset, "no .parquet files")


def test_missing_dataset(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        import_dataset(tmp_path / "nope", tmp_path / "out")


def test_row_order_and_part_split_do_not_matter(tmp_path: Path) -> None:
    """Any writer's dataset (e.g. Spark's: several parts, rows in any order, files mixed in
    one part) imports to the same bytes: only the contract of rmqarrow.converters.parquet.export
    counts."""
    originals = write_random_store(tmp_path / "store", Geometry(8, 32), [20, 31, 0], seed=12)
    export_store(tmp_path / "store", tmp_path / "ds", hash_slot_num=8, index_num=32)
    rng = np.random.default_rng(1)
    for table in ("slots", "entries"):
        d = tmp_path / "ds" / table
        parts = sorted(d.iterdir())
        t = pa.concat_tables([pq.read_table(p) for p in parts])
        for p in parts:
            p.unlink()
        t = t.take(pa.array(rng.permutation(t.num_rows)))
        cut = t.num_rows // 3
        pq.write_table(t.slice(0, cut), d / "part-00000-a.snappy.parquet", compression="snappy")
        pq.write_table(t.slice(cut), d / "part-00001-b.parquet")
        (d / "_SUCCESS").write_bytes(b"")
        (d / ".part-00000-a.snappy.parquet.crc").write_bytes(b"junk")
    with pytest.raises(DatasetError, match="not in the manifest"):  # the parts changed
        import_dataset(tmp_path / "ds", tmp_path / "out")
    _same_files(import_dataset(tmp_path / "ds", tmp_path / "out", trust=True), originals)


def test_empty_store_round_trip(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    export_store(tmp_path / "store", tmp_path / "ds")
    assert import_dataset(tmp_path / "ds", tmp_path / "out") == []
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    table=st.sampled_from(["files", "slots", "entries"]),
    row=st.integers(0, 10_000),
    column=st.integers(1, 8),
    value=st.one_of(st.integers(-3, 70), st.integers(-(2**31), 2**31 - 1)),
)
def test_any_single_cell_change_is_caught_or_harmless(
    tmp_path_factory: pytest.TempPathFactory, table: str, row: int, column: int, value: int
) -> None:
    """Changing one value either imports (raw data such as phy_offset may be anything) or
    raises DatasetError; never another exception, never partial output."""
    d = tmp_path_factory.mktemp("mut")
    write_random_store(d / "store", Geometry(8, 32), [20, 25], seed=13, distinct_hashes=6)
    export_store(d / "store", d / "ds", hash_slot_num=8, index_num=32)
    path = d / "ds" / table / "part-00000.parquet"
    t = pq.read_table(path)
    col = column % t.num_columns or 1  # any column but file_name
    _rewrite(d / "ds", table, 0, lambda t: _set(t, t.schema.names[col], row % t.num_rows, value))
    try:
        paths = import_dataset(d / "ds", d / "out")
    except DatasetError:
        assert not (d / "out").exists()
    else:
        assert [p.name for p in paths] == sorted(p.name for p in (d / "store").iterdir())
