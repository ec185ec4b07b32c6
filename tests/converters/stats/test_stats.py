"""Stats figures equal a straightforward numpy/Python computation on small stores."""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from golden_data import golden_set
from rmqarrow.converters.arrow.tables import IndexTables, store_tables
from rmqarrow.converters.duckdb import sql as duckdb_sql
from rmqarrow.converters.stats import sql as stats

import rmqarrow

SETS = ["collisions", "commitlog_store1", "random_public"]


def _columns(tables: IndexTables) -> dict[str, np.ndarray]:
    e = tables.entries
    return {name: e.column(name).to_numpy(zero_copy_only=False) for name in e.column_names}


def _poisson(k: int, lam: float) -> float:
    if lam == 0:
        return 1.0 if k == 0 else 0.0
    return math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1))


@pytest.fixture(params=SETS)
def case(request: pytest.FixtureRequest) -> tuple[Any, IndexTables]:
    g = golden_set(request.param)
    con = duckdb_sql.connect(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    request.addfinalizer(con.close)
    return con, store_tables(g.store_dir, g.hash_slot_num, g.index_num)


def test_slot_load_and_poisson(case: tuple[Any, IndexTables]) -> None:
    con, tables = case
    got = stats.slot_load(con).to_pylist()
    e = _columns(tables)
    files = tables.files.to_pylist()
    loads: Counter[int] = Counter()
    for f in files:
        mask = e["file_name"] == f["file_name"]
        counts = np.bincount(e["slot"][mask], minlength=f["hash_slot_num"])
        loads.update(counts.tolist())
    assert [r["load"] for r in got] == list(range(max(loads) + 2))
    assert [r["slots"] for r in got] == [loads.get(k, 0) for k in range(max(loads) + 2)]
    for r in got:
        want = sum(
            f["hash_slot_num"]
            * _poisson(
                r["load"], int((e["file_name"] == f["file_name"]).sum()) / f["hash_slot_num"]
            )
            for f in files
        )
        assert r["poisson_slots"] == pytest.approx(want, rel=1e-9, abs=1e-12)
    # every slot is counted once
    assert sum(r["slots"] for r in got) == sum(f["hash_slot_num"] for f in files)


def test_chain_depth(case: tuple[Any, IndexTables]) -> None:
    con, tables = case
    got = stats.chain_depth(con).to_pylist()
    e = _columns(tables)
    depth: Counter[int] = Counter()
    per_slot: Counter[tuple[str, int]] = Counter()
    for name, slot, _ in sorted(
        zip(e["file_name"], e["slot"], e["position"], strict=True),
        key=lambda t: (t[0], t[1], -t[2]),
    ):
        per_slot[(name, slot)] += 1
        depth[per_slot[(name, slot)]] += 1
    assert {r["depth"]: r["entries"] for r in got if r["entries"]} == dict(depth)
    files = tables.files.to_pylist()
    for r in got:
        want = 0.0
        for f in files:
            lam = int((e["file_name"] == f["file_name"]).sum()) / f["hash_slot_num"]
            below = sum(_poisson(k, lam) for k in range(r["depth"]))
            want += f["hash_slot_num"] * max(1.0 - below, 0.0)
        assert r["poisson_entries"] == pytest.approx(want, rel=1e-6, abs=1e-9)
    # the depths sum to the entries
    assert sum(r["entries"] for r in got) == tables.entries.num_rows


def test_hot_keys(case: tuple[Any, IndexTables]) -> None:
    con, tables = case
    e = _columns(tables)
    counts = Counter(e["key_hash"].tolist())
    want = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    got = stats.hot_keys(con, top=5).to_pylist()
    assert [(r["key_hash"], r["entries"]) for r in got] == want
    for r in got:
        mask = e["key_hash"] == r["key_hash"]
        assert r["offsets"] == len(set(e["phy_offset"][mask].tolist()))
        assert r["first_ms"] == int(e["store_timestamp"][mask].min())


def test_file_coverage(case: tuple[Any, IndexTables]) -> None:
    con, tables = case
    e = _columns(tables)
    got = {r["file_name"]: r for r in stats.file_coverage(con).to_pylist()}
    for f in tables.files.to_pylist():
        r = got[f["file_name"]]
        mask = e["file_name"] == f["file_name"]
        ts = e["store_timestamp"][mask][np.argsort(e["position"][mask])]
        assert r["entries"] == mask.sum() == f["index_count"] - 1
        assert r["fill"] == pytest.approx(mask.sum() / (f["index_num"] - 1))
        assert r["slot_fill"] == pytest.approx(f["hash_slot_count"] / f["hash_slot_num"])
        backwards = int((ts[1:] < np.maximum.accumulate(ts)[:-1]).sum()) if ts.size else 0
        assert r["out_of_order"] == backwards
        if ts.size:
            assert (r["first_entry_ms"], r["last_entry_ms"]) == (ts.min(), ts.max())


def test_duplicates(case: tuple[Any, IndexTables]) -> None:
    con, tables = case
    e = _columns(tables)
    per_offset = Counter(e["phy_offset"].tolist())
    pairs = Counter(zip(e["key_hash"].tolist(), e["phy_offset"].tolist(), strict=True))
    s = stats.duplicates_summary(con)
    assert s["distinct_offsets"] == len(per_offset)
    assert s["offsets_with_several_entries"] == sum(1 for n in per_offset.values() if n > 1)
    assert s["extra_entries"] == sum(n - 1 for n in per_offset.values())
    assert s["repeated_key_offset_pairs"] == sum(1 for n in pairs.values() if n > 1)
    top = stats.duplicates(con, top=3).to_pylist()
    want = sorted(((o, n) for o, n in per_offset.items() if n > 1), key=lambda t: (-t[1], t[0]))
    assert [(r["phy_offset"], r["entries"]) for r in top] == want[:3]


def test_time_range(case: tuple[Any, IndexTables]) -> None:
    con, tables = case
    e = _columns(tables)
    ts = np.sort(e["store_timestamp"])
    t1, t2 = int(ts[len(ts) // 4]), int(ts[len(ts) // 2])
    mask = (e["store_timestamp"] >= t1) & (e["store_timestamp"] <= t2)
    got = stats.time_range(con, t1, t2, limit=10**6)
    assert got.num_rows == int(mask.sum())
    assert sorted(got.column("phy_offset").to_pylist()) == sorted(e["phy_offset"][mask].tolist())
    assert got.column("store_timestamp").to_pylist() == sorted(
        got.column("store_timestamp").to_pylist()
    )
    summary = stats.time_range_summary(con, t1, t2).to_pylist()
    assert sum(r["entries"] for r in summary) == int(mask.sum())
    assert stats.time_range(con, t1, t2, limit=3).num_rows == min(3, int(mask.sum()))


def test_duplicates_and_out_of_order_on_a_built_store(tmp_path: Path) -> None:
    store = tmp_path / "s"
    store.mkdir()
    base = 1_700_000_000_000
    with rmqarrow.IndexFile.create(store / "00000", 4, 32) as f:
        for key, off, ts in [
            ("t#a", 10, base),
            ("t#b", 10, base + 1000),  # second key of the same message
            ("t#a", 10, base + 2000),  # the same key re-indexed
            ("t#c", 20, base - 5000),  # goes back in time (clamped to begin)
            ("t#c", 30, base + 500),  # earlier than an entry before it
        ]:
            assert f.put_key(key, off, ts)
    with duckdb_sql.connect(store, hash_slot_num=4, index_num=32) as con:
        s = stats.duplicates_summary(con)
        assert s["offsets_with_several_entries"] == 1
        assert s["extra_entries"] == 2
        assert s["repeated_key_offset_pairs"] == 1
        files = stats.file_coverage(con).to_pylist()
        assert files[0]["out_of_order"] == 2
        assert stats.summary(con)["entries"] == 5


def test_chain_check_is_clean_on_golden_and_flags_damage(
    case: tuple[Any, IndexTables], tmp_path: Path
) -> None:
    con, _ = case
    assert stats.chain_check(con) == {
        "broken_links": 0,
        "wrong_heads": 0,
        "negative_time_diffs": 0,
    }
    from rmqarrow.format.layout import Geometry, map_regions

    store = tmp_path / "damaged"
    store.mkdir()
    with rmqarrow.IndexFile.create(store / "00000", 2, 16) as f:
        for i in range(6):
            assert f.put_key(f"t#{i}", 100 + i, 1_700_000_000_000 + i * 1000)
    m = map_regions(store / "00000", Geometry(2, 16), writable=True)
    try:
        m.entries[5]["prev_index"] = 1  # a link that skips entries
        m.entries[4]["time_diff"] = -1
    finally:
        m.close()
    with duckdb_sql.connect(store, hash_slot_num=2, index_num=16) as c:
        check = stats.chain_check(c)
    assert check["broken_links"] >= 1 and check["negative_time_diffs"] == 1


def test_stats_run_within_a_memory_bound_and_restore_the_connection() -> None:
    """collect's bound: DuckDB spills beyond it; a lower limit stays; settings come back."""
    import duckdb
    from rmqarrow.converters.stats.sql import bounded_memory

    from rmqarrow.errors import InvalidValueError

    con = duckdb.connect()

    def settings() -> list[tuple[object, ...]]:
        return con.execute(
            "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
        ).fetchall()

    before = settings()
    with bounded_memory(con, "256MiB"):
        limit, spill = settings()[0]
        assert limit == "256.0 MiB" and str(spill).startswith(tempfile.gettempdir())
        with bounded_memory(con, "4GiB"):  # never raised
            assert settings()[0][0] == "256.0 MiB"
    assert settings()[0][1] == before[0][1]
    with pytest.raises(InvalidValueError, match="not a memory size"), bounded_memory(con, "lots"):
        pass
    con.close()


def test_memory_bound_ends_cleanly_after_spilling() -> None:
    """DuckDB will not leave a temporary directory it has spilled to: the block still
    ends without error (a six-file ``stats`` failed there after its last figure)."""
    import duckdb
    from rmqarrow.converters.stats.sql import bounded_memory

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    setting = "SELECT current_setting('temp_directory')"
    with bounded_memory(con, "32MiB"):
        con.execute("SET threads = 1")
        spill = Path(con.execute(setting).fetchall()[0][0])
        # a sort of 6 M rows with text (about 200 MB) cannot stay within 32 MiB
        rows = con.sql(
            "SELECT count(*) FROM (SELECT range * 7919 % 6000000 AS k, "
            "range::VARCHAR AS s FROM range(6000000) ORDER BY k)"
        ).fetchall()
    assert rows == [(6_000_000,)]
    assert Path(con.execute(setting).fetchall()[0][0]) == spill  # it did spill there
    assert not spill.exists()
    assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] != "32.0 MiB"
    con.close()
