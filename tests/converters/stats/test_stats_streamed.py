"""The streamed stats figures of a dataset equal the SQL statements' on the same dataset.

``stats.collect(con, dataset=...)`` computes the figures over every entry in bounded
passes (:mod:`rmqarrow.converters.stats.streamed`); without ``dataset`` every figure
is its SQL statement.  Both run here on the same exported datasets, including ones that
force several slot ranges and spilled offset buckets, and damaged parts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from golden_data import golden_set
from legacy_dataset import legacy_layout
from rmqarrow.converters.duckdb import sql as duckdb_sql
from rmqarrow.converters.parquet import export as export_mod
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.parts import duckdb_literal, table_parts
from rmqarrow.converters.stats import sql as stats
from rmqarrow.converters.stats import streamed as passes

import rmqarrow
from rmqarrow.errors import DiskFullError
from rmqarrow.format.layout import Geometry
from rmqarrow.testing import write_random_store

GROUPED = export_mod.GROUP_ENTRIES


@pytest.fixture(autouse=True)
def _own_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file in parts of its own, as a store of full files is exported: the layout
    the streamed passes read (small files share parts, which the SQL answers)."""
    monkeypatch.setattr(export_mod, "GROUP_ENTRIES", 0)


def test_shared_parts_answered_by_sql_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    write_random_store(store, Geometry(64, 256), [200, 150, 0, 90, 120], seed=11)
    own = _export(store, tmp_path / "own", Geometry(64, 256))
    monkeypatch.setattr(export_mod, "GROUP_ENTRIES", GROUPED)
    shared = _export(store, tmp_path / "shared", Geometry(64, 256))
    assert len(table_parts(shared, "entries")) == 2  # four small files together, the newest
    assert passes.scan(shared) is None
    by_sql = stats.collect(duckdb_sql.connect(shared), dataset=shared)
    streamed = stats.collect(duckdb_sql.connect(own), dataset=own)
    for field in ("summary", "files", "slot_load", "chain_depth", "hot_keys", "chain_check"):
        _same(getattr(by_sql, field), getattr(streamed, field))


def _same(a: Any, b: Any) -> None:
    """Equal, floats to 1e-9 relative (DuckDB may add a sum's terms in any order)."""
    if isinstance(a, pa.Table):
        assert a.schema.equals(b.schema), (a.schema, b.schema)
        a, b = a.to_pylist(), b.to_pylist()
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (a, b)
    else:
        assert a == b


def _both(con: duckdb.DuckDBPyConnection, dataset: Path, top: int = 10) -> None:
    figures = passes.scan(dataset, top=top)
    assert figures is not None, "the exporter's layout must take the streamed passes"
    streamed = stats.collect(con, dataset=dataset, top=top)
    by_sql = stats.collect(con, top=top)
    for field in (
        "summary",
        "files",
        "slot_load",
        "chain_depth",
        "hot_keys",
        "duplicates_summary",
        "duplicates",
        "chain_check",
    ):
        _same(getattr(streamed, field), getattr(by_sql, field))


def _export(store: Path, out: Path, geometry: Geometry | None = None) -> Path:
    kw = (
        {}
        if geometry is None
        else {"hash_slot_num": geometry.hash_slot_num, "index_num": geometry.index_num}
    )
    export_store(store, out, **kw)
    return out


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several slot ranges and spilled offset buckets on a small dataset."""
    monkeypatch.setattr(passes, "CHUNK_ROWS", 700)
    monkeypatch.setattr(passes, "BUCKET_ROWS", 900)


@pytest.mark.parametrize("name", ["collisions", "commitlog_store1", "random_public", "rolling"])
def test_golden_sets(name: str, tmp_path: Path) -> None:
    g = golden_set(name)
    ds = _export(g.store_dir, tmp_path / "ds", Geometry(g.hash_slot_num, g.index_num))
    with duckdb_sql.connect(ds) as con:
        _both(con, ds)


def _repeating_store(root: Path) -> tuple[Path, Geometry]:
    """Four files (one empty) of keys from a pool of 300 and offsets from a pool of 1,000:
    offsets indexed several times within and across files, hot keys, repeated (key,
    offset) pairs, store times that sometimes go back."""
    geometry = Geometry(64, 2_000)
    store = root / "store"
    store.mkdir()
    rng = np.random.default_rng(7)
    for i, n in enumerate([1_500, 1_999, 0, 800]):
        base = 1_700_000_000_000 + i * 10_000_000
        with rmqarrow.IndexFile.create(store / f"20231114221320{i:03d}", 64, 2_000) as f:
            stamps = base + np.cumsum(rng.integers(-300, 2_000, n))
            for key, offset, stamp in zip(
                rng.integers(0, 300, n), rng.integers(0, 1_000, n), stamps, strict=True
            ):
                assert f.put_key(f"t#{key}", 100 * int(offset), max(int(stamp), base))
    return store, geometry


def test_repeated_offsets_and_keys_across_files(tmp_path: Path) -> None:
    store, geometry = _repeating_store(tmp_path)
    ds = _export(store, tmp_path / "ds", geometry)
    with duckdb_sql.connect(ds) as con:
        _both(con, ds, top=25)
        got = stats.collect(con, dataset=ds, top=25)
    assert got.duplicates_summary["offsets_with_several_entries"] > 0
    assert got.duplicates.num_rows == 25 and got.hot_keys.num_rows == 25


def test_several_ranges_and_spilled_buckets(small_ranges: None, tmp_path: Path) -> None:
    store, geometry = _repeating_store(tmp_path)
    ds = _export(store, tmp_path / "ds", geometry)
    spill = tmp_path / "spill"
    spill.mkdir()
    assert passes.scan(ds, spill_dir=spill) is not None
    assert list(spill.iterdir()) == []  # the buckets' directory is gone
    with duckdb_sql.connect(ds) as con:
        for top in (0, 1, 7, 1000):
            _both(con, ds, top=top)


def test_a_file_in_several_parts_takes_the_streamed_passes(
    small_ranges: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone large file's entries come as two parts (export_file_entries' split): the
    passes read both, and the figures equal the SQL's."""
    from rmqarrow.converters.parquet import export as export_mod

    monkeypatch.setattr(export_mod, "PARALLEL_ENTRIES", 1)
    monkeypatch.setattr(export_mod, "ROW_GROUP_ROWS", 128)
    store, geometry = _repeating_store(tmp_path)
    one = sorted(store.iterdir())[1]  # the 1,999-entry file alone
    ds = _export(one, tmp_path / "ds", geometry)
    assert len(table_parts(ds, "entries")) == 2
    assert passes.scan(ds) is not None
    with duckdb_sql.connect(ds) as con:
        _both(con, ds, top=25)


def test_out_of_order_and_duplicates_on_a_built_store(tmp_path: Path) -> None:
    store = tmp_path / "s"
    store.mkdir()
    base = 1_700_000_000_000
    with rmqarrow.IndexFile.create(store / "00000", 4, 32) as f:
        for key, off, ts in [
            ("t#a", 10, base),
            ("t#b", 10, base + 1000),
            ("t#a", 10, base + 2000),
            ("t#c", 20, base - 5000),
            ("t#c", 30, base + 500),
        ]:
            assert f.put_key(key, off, ts)
    ds = _export(store, tmp_path / "ds", Geometry(4, 32))
    with duckdb_sql.connect(ds) as con:
        _both(con, ds)
        got = stats.collect(con, dataset=ds)
    assert got.files.to_pylist()[0]["out_of_order"] == 2
    assert got.duplicates_summary["repeated_key_offset_pairs"] == 1


def _views(ds: Path) -> duckdb.DuckDBPyConnection:
    """A connection over the parts as they are (``connect`` refuses parts changed after
    the export; the passes read them as given)."""
    con = duckdb.connect()
    for table in ("files", "slots", "entries"):
        parts = ", ".join(f"'{duckdb_literal(p)}'" for p in table_parts(ds, table))
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{parts}])")
    return con


def _rewrite(part: Path, change: Any) -> None:
    t = pq.read_table(part)
    columns = {n: t.column(n).to_numpy().copy() for n in t.column_names if n != "file_name"}
    change(columns)
    out = pa.table({"file_name": t.column("file_name"), **columns}, schema=t.schema)
    pq.write_table(out, part, row_group_size=97)


def test_damaged_chains_are_counted_the_same(small_ranges: None, tmp_path: Path) -> None:
    store, geometry = _repeating_store(tmp_path)
    ds = _export(store, tmp_path / "ds", geometry)
    entries = table_parts(ds, "entries")

    def damage(c: dict[str, np.ndarray]) -> None:
        c["prev_index"][5] += 1
        c["time_diff"][7] = -3
        c["position"][[10, 11]] = c["position"][[11, 10]]  # rows out of (slot, position) order
        c["store_timestamp"][20] -= 10_000_000

    _rewrite(entries[0], damage)
    slots = table_parts(ds, "slots")

    def heads(c: dict[str, np.ndarray]) -> None:
        c["head"][3] += 1
        c["slot"][4] = 63 if c["slot"][4] != 63 else 62

    _rewrite(slots[1], heads)
    con = _views(ds)
    try:
        _both(con, ds)
        check = stats.collect(con, dataset=ds).chain_check
    finally:
        con.close()
    assert check["broken_links"] >= 1 and check["wrong_heads"] >= 2
    assert check["negative_time_diffs"] == 1


def test_a_slot_not_of_its_key_hash_leaves_the_figures_to_sql(tmp_path: Path) -> None:
    store, geometry = _repeating_store(tmp_path)
    ds = _export(store, tmp_path / "ds", geometry)

    def wrong_slot(c: dict[str, np.ndarray]) -> None:
        c["slot"][0] = (c["slot"][0] + 1) % 64

    _rewrite(table_parts(ds, "entries")[0], wrong_slot)
    assert passes.scan(ds) is None
    con = _views(ds)
    try:
        streamed = stats.collect(con, dataset=ds)
        _same(streamed.summary, stats.summary(con))
    finally:
        con.close()


def test_files_of_different_slot_counts_leave_the_figures_to_sql(tmp_path: Path) -> None:
    for name, geometry in (("a", Geometry(16, 100)), ("b", Geometry(32, 100))):
        write_random_store(tmp_path / name, geometry, [50 if name == "a" else 40], seed=len(name))
        export_store(
            tmp_path / name,
            tmp_path / f"ds-{name}",
            hash_slot_num=geometry.hash_slot_num,
            index_num=geometry.index_num,
        )
        legacy_layout(tmp_path / f"ds-{name}")  # a part put beside the others: plain folders
    ds = tmp_path / "ds-a"
    for table in ("files", "slots", "entries"):  # b's file beside a's, with a newer name
        t = pq.read_table(table_parts(tmp_path / "ds-b", table)[0])
        names = pa.array(["20991231000000000"] * t.num_rows, pa.string())
        pq.write_table(t.set_column(0, t.schema.field(0), names), ds / table / "part-09999.parquet")
    assert passes.scan(ds) is None
    con = _views(ds)
    try:
        _same(stats.collect(con, dataset=ds).summary, stats.summary(con))
        assert stats.summary(con)["files"] == 2
    finally:
        con.close()


def test_too_little_temporary_space_is_one_clear_error(
    small_ranges: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, geometry = _repeating_store(tmp_path)
    ds = _export(store, tmp_path / "ds", geometry)
    spill = tmp_path / "spill"
    spill.mkdir()
    real = passes.shutil.disk_usage

    def tiny(path: Any) -> Any:
        return real(path)._replace(free=1_000)

    monkeypatch.setattr(passes.shutil, "disk_usage", tiny)
    with pytest.raises(DiskFullError, match=r"stats needs [\d,]+ bytes of temporary space"):
        passes.scan(ds, spill_dir=spill)
    assert list(spill.iterdir()) == []


@pytest.mark.parametrize("positions", ["permutation", "gaps", "repeats"])
def test_out_of_order_counts_block_by_block(
    positions: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(passes, "_BLOCK", 7)
    rng = np.random.default_rng(5)
    n = 200
    position = {
        "permutation": rng.permutation(n) + 1,
        "gaps": rng.permutation(n) * 3 + 1,
        "repeats": rng.integers(1, n // 2, n),
    }[positions].astype(np.int32)
    stamp = rng.integers(0, 50, n).astype(np.int64)
    order = np.argsort(position, kind="stable")
    ordered = stamp[order]
    want = sum(int(ordered[i] < ordered[:i].max()) for i in range(1, n))
    assert passes._out_of_order(position, stamp) == want


def test_cli_exports_a_large_native_store_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Above STATS_EXPORT_ABOVE entries ``stats STORE`` reads a temporary export of the
    store (streamed passes), removed after; the figures are those of the store itself."""
    from rmqarrow.cli import main
    from rmqarrow.store import _stats

    store, geometry = _repeating_store(tmp_path)
    geom = ["--hash-slot-num", str(geometry.hash_slot_num), "--index-num", str(geometry.index_num)]
    argv = [
        "stats",
        str(store),
        *geom,
        "--json",
        "--top",
        "20",
        "--between",
        "1700000000000",
        "1700010000000",
    ]
    assert main(argv) == 0
    direct = capsys.readouterr()
    spill = tmp_path / "tmp"
    spill.mkdir()
    monkeypatch.setattr(_stats, "STATS_EXPORT_ABOVE", 1_000)
    monkeypatch.setattr(_stats.tempfile, "tempdir", str(spill))
    assert main(argv) == 0
    exported = capsys.readouterr()
    assert "exporting the store to a temporary dataset" in exported.err
    assert "exporting" not in direct.err
    assert list(spill.iterdir()) == []
    _same(json.loads(exported.out), json.loads(direct.out))


def test_an_unreadable_part_is_one_clear_error(tmp_path: Path) -> None:
    """A part whose pages are damaged after its footer was checked: a DatasetError naming
    the dataset, no Arrow traceback."""
    from rmqarrow.errors import DatasetError

    store, geometry = _repeating_store(tmp_path)
    ds = _export(store, tmp_path / "ds", geometry)
    part = table_parts(ds, "entries")[0]
    data = bytearray(part.read_bytes())
    data[4:4_000] = b"\xff" * 3_996  # the first pages, footer intact
    part.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match="a part cannot be read"):
        passes.scan(ds)
