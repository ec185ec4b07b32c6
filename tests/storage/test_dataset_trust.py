"""Paths are literal, datasets are checked, not trusted.

Before: a dataset at ``g/ds[12]`` made DuckDB read the sibling ``g/ds1``; an ``entries/``
folder with a copied part made every DuckDB answer come back twice (exit 0); ``verify
--dataset`` passed datasets ``import`` rejected.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from legacy_dataset import legacy_layout
from rmqarrow.converters.duckdb import sql as duckdb_sql
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.importer import import_dataset
from rmqarrow.converters.parquet.manifest import read_manifest
from storage.storage_helpers import GEO, INDEX, SLOTS, cli, one_line_error, records, write_csv

from rmqarrow.errors import DatasetError
from rmqarrow.format.queries import Query
from rmqarrow.index.service import answer_queries

QUERIES = [Query(f"T#k{k}", 1000) for k in range(7)] + [Query("T#u5", 10)]


def _store(tmp_path: Path, name: str, n: int) -> Path:
    store = tmp_path / name
    cli(
        "build", store, "--from", write_csv(tmp_path / f"{name}.csv", records(n)), *GEO
    ).check_returncode()
    return store


@pytest.mark.parametrize("name", ["ds[12]", "ds*", "ds?", "d{s,t}", "d s'q\"", "ds]"])
def test_glob_characters_in_paths_duckdb(tmp_path: Path, name: str) -> None:
    small, big = _store(tmp_path, "small", 20), _store(tmp_path, "big", 120)
    g = tmp_path / "g"
    g.mkdir()
    # siblings every pattern would match if read as a glob
    for sibling in ("ds1", "dsx", "ds", "ds2", "ds1]"):
        export_store(small, g / sibling, hash_slot_num=SLOTS, index_num=INDEX)
    export_store(big, g / name, hash_slot_num=SLOTS, index_num=INDEX)
    want = answer_queries(big, QUERIES, hash_slot_num=SLOTS, index_num=INDEX)
    assert duckdb_sql.answer_queries(g / name, QUERIES) == want
    done = cli(
        "query", g / name, "--engine", "duckdb", "--key", "T#k3", "--max-num", "1000", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert str(want[3][0]) in done.stdout


def _dataset(tmp_path: Path, delta: bool = True) -> Path:
    ds = tmp_path / "ds"
    store = _store(tmp_path, "store", 120)
    export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    return ds if delta else legacy_layout(ds)


@pytest.mark.parametrize("delta", [True, False], ids=["delta", "manifest"])
@pytest.mark.parametrize("change", ["extra", "missing", "changed"])
def test_parts_not_matching_the_manifest_are_refused(
    tmp_path: Path, change: str, monkeypatch: pytest.MonkeyPatch, delta: bool
) -> None:
    ds = _dataset(tmp_path, delta)
    other, part = sorted((ds / "entries").glob("*.parquet"))[:2]
    if change == "extra":
        shutil.copy(part, ds / "entries" / f"{part.stem} (copy).parquet")
        if delta:  # a Delta table's readers read the files its log lists, never the folder
            answers = duckdb_sql.answer_queries(ds, QUERIES[:1])
            assert answers[0] and len(answers[0]) == len(set(answers[0]))
            return
    elif change == "missing":
        part.unlink()
    else:
        shutil.copy(other, part)
    with pytest.raises(DatasetError, match="manifest"):
        duckdb_sql.connect(ds)
    for args in (
        ["sql", ds, "SELECT count(*) FROM entries"],
        ["query", ds, "--engine", "duckdb", "--key", "T#k1"],
        ["import", ds, tmp_path / "out"],
    ):
        done = cli(*args)
        assert done.returncode == 1, (args, done.stdout)
        assert "manifest" in one_line_error(done)
    assert not (tmp_path / "out").exists()
    done = cli(
        "verify",
        tmp_path / "store",
        "--dataset",
        ds,
        "--engines",
        "native,duckdb",
        "--sample",
        "20",
        *GEO,
    )
    assert done.returncode == 1 and "parts:" in done.stdout + done.stderr, done.stdout
    # asked to skip the check, the engines read it (and import's own checks still run)
    monkeypatch.setenv("RMQARROW_TRUST_DATASET", "1")
    duckdb_sql.connect(ds).close()
    if change == "extra":  # every answer twice: why the check exists
        answers = duckdb_sql.answer_queries(ds, QUERIES[:1])
        assert len(answers[0]) > len(set(answers[0]))


def test_checksum_catches_a_same_size_change(tmp_path: Path) -> None:
    """A byte flipped inside a data page: same size, same footer; the full checksum of
    import and verify sees it."""
    ds = _dataset(tmp_path)
    part = sorted((ds / "slots").glob("*.parquet"))[1]
    data = bytearray(part.read_bytes())
    data[40] ^= 0xFF  # inside the first column chunk, far from the footer
    part.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match="checksum differs"):
        import_dataset(ds, tmp_path / "out")
    done = cli(
        "verify", tmp_path / "store", "--dataset", ds, "--engines", "native", "--sample", "20", *GEO
    )
    assert done.returncode == 1 and "checksum" in done.stdout + done.stderr, done.stdout


def test_manifest_lists_every_part(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    parts = read_manifest(ds)["parts"]
    on_disk = sorted(p.relative_to(ds).as_posix() for p in ds.rglob("*.parquet"))
    assert sorted(p["path"] for p in parts) == on_disk
    assert all(p["rows"] >= 0 and len(p["sha256"]) == 64 for p in parts)


def test_null_and_nan_print_as_json_null(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    done = cli("sql", ds, "SELECT 'nan'::DOUBLE AS x, NULL::DOUBLE AS y", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == [{"x": None, "y": None}]
