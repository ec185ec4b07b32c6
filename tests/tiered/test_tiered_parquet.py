"""Tiered export -> import: byte-identical on every golden file and a two-form store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tiered_golden_data import TieredSet

from rmqarrow.errors import DatasetError, OutputExistsError
from rmqarrow.tiered import segment_file_name
from rmqarrow.tiered.parquet.export import export_tiered
from rmqarrow.tiered.parquet.importer import import_tiered, read_tiered_dataset


def store(ts: TieredSet, root: Path) -> Path:
    """A broker folder: the local file and its uploaded segment."""
    (root / "tiered_index_file").mkdir(parents=True)
    shutil.copyfile(ts.dir / "unsealed.bin", root / "tiered_index_file" / str(ts.file_timestamp))
    shutil.copyfile(ts.dir / "compacted.bin", root / segment_file_name(0))
    return root


@pytest.mark.parametrize("form", ["unsealed.bin", "compacted.bin"])
def test_file_round_trip(tiered_set: TieredSet, tmp_path: Path, form: str) -> None:
    manifest = export_tiered(tiered_set.dir / form, tmp_path / "ds")
    assert manifest["tables"]["tiered_files"]["rows"] == 1
    paths = import_tiered(tmp_path / "ds", tmp_path / "out")
    assert [p.name for p in paths] == [form]
    assert paths[0].read_bytes() == (tiered_set.dir / form).read_bytes()


def test_store_round_trip_and_columns(tiered_set: TieredSet, tmp_path: Path) -> None:
    root = store(tiered_set, tmp_path / "broker")
    export_tiered(root, tmp_path / "ds")
    files, _slots, items = read_tiered_dataset(tmp_path / "ds")
    assert sorted(files.column("form").to_pylist()) == ["compacted", "unsealed"]
    # decoded store time and slot are what the rules say
    rows = items.to_pylist()
    begin = tiered_set.file_timestamp
    for r in rows[:200]:
        assert r["store_time"] == r["time_diff"] * 1000 + begin
    local = [r for r in rows if r["next_index"] is not None]
    assert all(
        r["slot"]
        == (abs(r["hash_code"]) % tiered_set.hash_slot_num) * (1 if r["hash_code"] >= 0 else -1)
        for r in local
    )
    comp = [r for r in rows if r["next_index"] is None]
    assert all(r["slot_rank"] is not None and r["slot_rank"] >= 0 for r in comp)
    paths = import_tiered(tmp_path / "ds", tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in paths) == sorted(
        [f"tiered_index_file/{tiered_set.file_timestamp}", segment_file_name(0)]
    )
    for p in paths:
        assert p.read_bytes() == (root / p.relative_to(tmp_path / "out")).read_bytes()


def test_import_never_overwrites_and_checks(tmp_path: Path) -> None:
    ts = TieredSet("tiered_basic")
    export_tiered(ts.dir / "unsealed.bin", tmp_path / "ds")
    with pytest.raises(OutputExistsError):
        export_tiered(ts.dir / "unsealed.bin", tmp_path / "ds")
    import_tiered(tmp_path / "ds", tmp_path / "out")
    with pytest.raises(OutputExistsError, match="never overwrites"):
        import_tiered(tmp_path / "ds", tmp_path / "out")
    # a damaged dataset: an item position outside the file
    part = tmp_path / "ds" / "tiered_items" / "part-00000.parquet"
    table = pq.read_table(part)
    import pyarrow as pa

    pos = table.column("position").to_pylist()
    pos[0] = 10**6
    table = table.set_column(1, table.schema.field("position"), pa.array(pos, pa.int32()))
    pq.write_table(table, part)
    with pytest.raises(DatasetError, match="positions outside"):
        import_tiered(tmp_path / "ds", tmp_path / "out2")
    assert not (tmp_path / "out2" / "unsealed.bin").exists()
    (tmp_path / "ds" / "_rmqarrow.json").write_text("{}")
    with pytest.raises(DatasetError, match="rmqarrow-tiered-dataset"):
        import_tiered(tmp_path / "ds", tmp_path / "out3")


def test_a_folder_of_one_file_answers_as_a_folder_from_its_dataset(tmp_path: Path) -> None:
    # a folder asks only the files whose begin lies in the window; one file is asked
    # whatever its begin: the dataset of a one-file folder must answer as the folder does
    import rmqarrow
    from rmqarrow.tiered import TieredIndexFile

    begin = 1_732_000_000_000
    folder = tmp_path / "tiered"
    (folder / "tiered_index_file").mkdir(parents=True)
    local = folder / "tiered_index_file" / str(begin)
    with TieredIndexFile.create(local, begin, hash_slot_num=100, index_num=400) as f:
        f.put_key("TopicA", 1, 0, ["order-1"], 4096, 512, begin + 1000)
    after_begin = [("TopicA", "order-1", 32, begin + 1000, begin + 1000)]
    for source, want in ((folder, 0), (local, 1)):
        export_tiered(source, tmp_path / source.name / "ds")
        with rmqarrow.open(source) as files:
            native = files.answers(after_begin)
        with rmqarrow.open(tmp_path / source.name / "ds") as dataset:
            assert dataset.answers(after_begin, engine="duckdb") == native
        assert len(native[0]) == want
