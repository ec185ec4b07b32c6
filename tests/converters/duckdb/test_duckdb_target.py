"""TARGET detection: dataset, store, single file, and clear errors otherwise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from golden_data import golden_set
from rmqarrow.converters.duckdb import sql as duckdb_sql

from rmqarrow.errors import DatasetError, RmqArrowError, StoreNotFoundError
from rmqarrow.format.detect import require_index_source


def test_store_and_single_file() -> None:
    g = golden_set("collisions")
    assert require_index_source(g.store_dir).kind == "index_dir"
    assert require_index_source(g.file_paths[0]).kind == "index_file"
    with duckdb_sql.connect(
        g.file_paths[0], hash_slot_num=g.hash_slot_num, index_num=g.index_num
    ) as con:
        assert con.execute("SELECT count(*) FROM files").fetchall() == [(1,)]


def test_views_have_the_converters_schema(make_dataset: Callable[..., Path]) -> None:
    from rmqarrow.converters.schema import SCHEMAS

    g = golden_set("basic")
    for target in (g.store_dir, make_dataset(g.store_dir, g.hash_slot_num, g.index_num)):
        with duckdb_sql.connect(
            target, hash_slot_num=g.hash_slot_num, index_num=g.index_num
        ) as con:
            for name, schema in SCHEMAS.items():
                got = con.sql(f"SELECT * FROM {name}").to_arrow_table()
                assert got.column_names == schema.names
                assert [f.type for f in got.schema] == [f.type for f in schema]


def test_missing_target(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError, match="no such"):
        duckdb_sql.connect(tmp_path / "nope")


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="neither a dataset"):
        duckdb_sql.connect(tmp_path)


def test_incomplete_dataset(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "entries").mkdir()
    with pytest.raises(DatasetError, match="missing slots"):
        duckdb_sql.connect(tmp_path)


def test_dataset_without_parquet(tmp_path: Path) -> None:
    for name in ("files", "slots", "entries"):
        (tmp_path / name).mkdir()
    with pytest.raises(DatasetError, match=r"no \.parquet files"):
        duckdb_sql.connect(tmp_path)


def test_not_an_index_file(tmp_path: Path) -> None:
    (tmp_path / "garbage").write_bytes(b"not an index file")
    with pytest.raises(RmqArrowError):
        duckdb_sql.connect(tmp_path)


@pytest.fixture
def own_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file in parts of its own (as full files are exported; small ones share)."""
    from rmqarrow.converters.parquet import export

    monkeypatch.setattr(export, "GROUP_ENTRIES", 0)


@pytest.mark.usefixtures("own_parts")
def test_exported_dataset_reads_ranks_without_names(tmp_path: Path) -> None:
    from rmqarrow.converters.parquet.export import export_store

    g = golden_set("rolling")
    out = tmp_path / "ds"
    export_store(g.store_dir, out, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    with duckdb_sql.connect(out) as con:
        sql = con.execute(
            "SELECT sql FROM duckdb_views() WHERE view_name = '_rmq_entries'"
        ).fetchall()[0][0]
        assert "file_name" not in sql  # one constant rank per part, names never read
        assert duckdb_sql.answer_queries(con, g.queries) == g.expected


@pytest.mark.usefixtures("own_parts")
def test_parts_naming_a_file_the_files_table_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq
    from rmqarrow.converters.parquet.export import export_store

    g = golden_set("rolling")
    out = tmp_path / "ds"
    export_store(g.store_dir, out, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    files = pq.read_table(out / "files")
    pq.write_table(files.slice(1), next((out / "files").glob("*.parquet")))
    with pytest.raises(DatasetError, match="changed since export"):  # the part check
        duckdb_sql.connect(out)
    monkeypatch.setenv("RMQARROW_TRUST_DATASET", "1")  # past the part check: still refused
    with pytest.raises(DatasetError, match="does not list"):
        duckdb_sql.connect(out)
