"""Streaming scans equal the reference decoder (rmqarrow.converters.arrow.tables) on every store."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from golden_data import GoldenSet
from hypothesis import given, settings
from hypothesis import strategies as st
from rmqarrow.converters.arrow.scan import iter_file_batches, scan_file, scan_store, store_scanner
from rmqarrow.converters.arrow.tables import file_tables, store_tables
from rmqarrow.converters.schema import SCHEMAS

from rmqarrow import Geometry
from rmqarrow.errors import CorruptIndexError, StoreNotFoundError
from rmqarrow.testing.stores import write_random_store

TABLES = ("files", "slots", "entries")


@pytest.mark.parametrize("batch_rows", [1, 7, 1 << 20])
def test_scan_store_equals_reference(golden: GoldenSet, batch_rows: int) -> None:
    ref = store_tables(golden.store_dir, golden.hash_slot_num, golden.index_num)
    for table in TABLES:
        reader = scan_store(
            golden.store_dir,
            table,
            hash_slot_num=golden.hash_slot_num,
            index_num=golden.index_num,
            batch_rows=batch_rows,
        )
        assert reader.schema.equals(SCHEMAS[table], check_metadata=True)
        got = reader.read_all()
        assert got.equals(getattr(ref, table)), table
        assert got.schema.equals(SCHEMAS[table], check_metadata=True)


def test_batches_are_bounded(golden: GoldenSet) -> None:
    for path in golden.file_paths:
        batches = list(
            iter_file_batches(
                path,
                "entries",
                hash_slot_num=golden.hash_slot_num,
                index_num=golden.index_num,
                batch_rows=5,
            )
        )
        assert all(b.num_rows <= 5 for b in batches)
        ref = file_tables(path, golden.hash_slot_num, golden.index_num).entries
        assert sum(b.num_rows for b in batches) == ref.num_rows


def test_scan_file_and_scanner(golden: GoldenSet) -> None:
    first = golden.file_paths[0]
    geo = {"hash_slot_num": golden.hash_slot_num, "index_num": golden.index_num}
    ref = file_tables(first, **geo)
    assert scan_file(first, "slots", **geo).read_all().equals(ref.slots)
    h = ref.entries.column("key_hash")[0].as_py()
    got = store_scanner(
        golden.store_dir,
        "entries",
        columns=["position", "phy_offset"],
        filter=pc.field("key_hash") == h,
        **geo,
    ).to_table()
    want = store_tables(golden.store_dir, **geo).entries.filter(pc.field("key_hash") == h)
    assert got.column("phy_offset").equals(want.column("phy_offset"))


@settings(max_examples=15, deadline=None)
@given(
    counts=st.lists(st.integers(0, 60), min_size=0, max_size=3),
    slots=st.integers(1, 9),
    seed=st.integers(0, 1000),
    batch_rows=st.integers(1, 40),
)
def test_scan_random_stores(
    tmp_path_factory: pytest.TempPathFactory,
    counts: list[int],
    slots: int,
    seed: int,
    batch_rows: int,
) -> None:
    d = tmp_path_factory.mktemp("store")
    geometry = Geometry(slots, 64)
    write_random_store(d, geometry, counts, seed=seed, distinct_hashes=5)
    ref = store_tables(d, slots, 64)
    for table in TABLES:
        got = scan_store(d, table, hash_slot_num=slots, index_num=64, batch_rows=batch_rows)
        assert got.read_all().equals(getattr(ref, table))


def test_scan_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        scan_store(tmp_path / "missing", "entries")
    with pytest.raises(StoreNotFoundError):
        scan_file(tmp_path / "missing", "entries")
    with pytest.raises(ValueError, match="unknown table"):
        scan_store(tmp_path, "nope")
    with pytest.raises(ValueError, match="batch_rows"):
        scan_store(tmp_path, "entries", batch_rows=0)
    bad = tmp_path / "store"
    bad.mkdir()
    (bad / "00000").write_bytes(b"\0" * 13)
    with pytest.raises(CorruptIndexError):
        scan_store(bad, "entries", hash_slot_num=1, index_num=1).read_all()
    assert isinstance(scan_store(tmp_path, "entries"), pa.RecordBatchReader)


def test_duckdb_reads_the_stream(golden: GoldenSet) -> None:
    import duckdb

    geo = {"hash_slot_num": golden.hash_slot_num, "index_num": golden.index_num}
    reader = scan_store(golden.store_dir, "entries", batch_rows=16, **geo)
    con = duckdb.connect()
    con.register("entries", reader)
    got = con.execute(
        "SELECT file_name, count(*), sum(phy_offset) FROM entries GROUP BY 1 ORDER BY 1"
    ).fetchall()
    ref = store_tables(golden.store_dir, **geo).entries
    want = ref.group_by("file_name").aggregate([("position", "count"), ("phy_offset", "sum")])
    cols = ("file_name", "position_count", "phy_offset_sum")
    expected = sorted(zip(*(want.column(c).to_pylist() for c in cols), strict=True))
    assert sorted(got) == expected
