"""``rmqarrow sql`` and ``rmqarrow stats`` end to end (real DuckDB, stdin-fed prompt)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden_data import golden_set
from rmqarrow.converters.arrow.tables import store_tables

from rmqarrow.cli import main

G = golden_set("collisions")
GEOM = ["--hash-slot-num", str(G.hash_slot_num), "--index-num", str(G.index_num)]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_sql_one_query_table_json_csv(capsys: pytest.CaptureFixture[str]) -> None:
    from rmqarrow.converters.duckdb.sql import answer_queries

    from rmqarrow import Query

    want = answer_queries(G.store_dir, [Query("Aa", 5)], hash_slot_num=7, index_num=64)[0]
    assert len(want) == 5
    stmt = "SELECT phy_offset FROM index_lookup('Aa', 5) ORDER BY ordinal"
    status, out, _ = _run(capsys, "sql", str(G.store_dir), stmt, "--json", *GEOM)
    assert status == 0
    assert [r["phy_offset"] for r in json.loads(out)["rows"]] == want
    status, out, _ = _run(capsys, "sql", str(G.store_dir), stmt, "--csv", *GEOM)
    assert out.splitlines() == ["phy_offset", *map(str, want)]
    status, out, _ = _run(capsys, "sql", str(G.store_dir), stmt, *GEOM)
    lines = out.splitlines()
    assert lines[0].strip() == "phy_offset" and len(lines) == 2 + len(want)
    assert lines[2].strip() == str(want[0])  # plain: pastes back into an option


def test_sql_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "sql", str(G.store_dir), "SELECT * FROM nope", *GEOM)
    assert status == 1
    assert err.startswith("rmqarrow sql: error: DuckDB:")


def test_sql_prompt_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = (
        "SELECT count(*) AS n FROM entries;\n"
        ".tables\n"
        "SELECT broken FROM;\n"
        "SELECT file_name,\n  index_count\nFROM files ORDER BY file_name;\n"
        ".quit\n"
        "SELECT 'not reached';\n"
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    status, out, err = _run(capsys, "sql", str(G.store_dir), "--csv", *GEOM)
    assert status == 1  # one statement failed (stdin is not a terminal)
    assert "error: DuckDB" in err
    blocks = out.splitlines()
    assert blocks[:2] == ["n", "150"]
    assert blocks[2:6] == ["name", "entries", "files", "slots"]  # as SHOW TABLES lists them
    assert blocks[6:] == ["file_name,index_count", "00000,64", "00001,64", "00002,25"]
    assert "not reached" not in out


@pytest.mark.slow
def test_stats_tables_json_and_plots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, _ = _run(capsys, "stats", str(G.store_dir), *GEOM)
    assert status == 0
    for title in ("slot load", "chain depth", "hottest key hashes", "duplicated offsets"):
        assert title in out
    plots = tmp_path / "plots"
    status, out, err = _run(
        capsys,
        "stats",
        str(G.store_dir),
        "--json",
        "--between",
        "1700000000000",
        "2023-11-14T22:15:00",
        "--plot",
        str(plots),
        *GEOM,
    )
    assert status == 0
    doc = json.loads(out)
    assert doc["summary"]["entries"] == 150
    assert doc["time_range"]["t2"] == 1_700_000_100_000
    ts = store_tables(G.store_dir, 7, 64).entries.column("store_timestamp").to_pylist()
    in_range = sum(1_700_000_000_000 <= t <= 1_700_000_100_000 for t in ts)
    assert in_range > 0
    assert sum(r["entries"] for r in doc["time_range"]["files"]) == in_range
    assert sorted(p.name for p in plots.iterdir()) == sorted(
        [
            "chain_depth.png",
            "file_fill.png",
            "hot_keys.png",
            "slot_load.png",
            "time_coverage.png",
            "time_range.png",
        ]
    )
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots.iterdir())
    # never replaces charts silently
    status, _, err = _run(capsys, "stats", str(G.store_dir), "--plot", str(plots), *GEOM)
    assert status == 1 and "exists" in err
    status, _, _ = _run(
        capsys, "stats", str(G.store_dir), "--plot", str(plots), "--overwrite", *GEOM
    )
    assert status == 0


def test_plots_never_go_into_a_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """RocketMQ's load opens every entry of an index directory: no chart is written there
    (nor into a dataset); the refusal is one line and a usage error."""
    import shutil

    store = tmp_path / "store"
    shutil.copytree(G.store_dir, store)
    before = sorted(p.name for p in store.iterdir())
    status, _, err = _run(capsys, "stats", str(store), "--plot", str(store), *GEOM)
    assert status == 2 and "an index directory, not a place for charts" in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in store.iterdir()) == before


def test_stats_bad_time(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "stats", str(G.store_dir), "--between", "x", "1", *GEOM)
    assert status == 2 and "ISO 8601" in err  # a usage error


def test_plots_never_touch_pyplot_or_a_display(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from rmqarrow.converters.duckdb import sql as duckdb_sql\n"
        "from rmqarrow.converters.stats import sql as stats\n"
        "from rmqarrow.converters.stats.plot import write_charts\n"
        f"c = duckdb_sql.connect({str(G.store_dir)!r}, hash_slot_num=7, index_num=64)\n"
        f"write_charts(stats.collect(c), {str(tmp_path)!r})\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env["MPLBACKEND"] = "TkAgg"  # an interactive backend would need a display
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    assert len(list(tmp_path.glob("*.png"))) == 5


@pytest.mark.parametrize("name", ["collisions", "unicode", "commitlog_store1"])
def test_query_engine_duckdb_prints_what_native_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    from rmqarrow.converters.parquet.export import export_store

    g = golden_set(name)
    geom = ["--hash-slot-num", str(g.hash_slot_num), "--index-num", str(g.index_num)]
    common = ["query", str(g.store_dir), "--queries", str(g.queries_path)]
    if g.escaped:
        common.append("--escaped")
    status, native, _ = _run(capsys, *common, "--engine", "native", *geom)
    assert status == 0
    status, duck, _ = _run(capsys, *common, "--engine", "duckdb", *geom)
    assert status == 0 and duck == native
    dataset = tmp_path / "ds"
    export_store(g.store_dir, dataset, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    status, from_dataset, _ = _run(capsys, *common, "--engine", "duckdb", "--dataset", str(dataset))
    assert status == 0 and from_dataset == native


def test_prompt_bulk_macro_from_sql(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rmqarrow.converters.duckdb.sql import answer_queries

    from rmqarrow import Query

    script = (
        "CREATE TEMP VIEW my_queries AS\n"
        "SELECT id AS query_id, index_key_hash(k) AS key_hash, 4 AS max_num,\n"
        "       0 AS begin_ms, 9223372036854775807 AS end_ms\n"
        "FROM (VALUES (1, 'Aa'), (2, 'BB'), (3, 'nothing')) t(id, k);\n"
        "SELECT query_id, phy_offset FROM index_lookups('my_queries');\n"
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    status, out, err = _run(capsys, "sql", str(G.store_dir), "--csv", *GEOM)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == "query_id,phy_offset"  # the CREATE printed nothing
    want = answer_queries(
        G.store_dir,
        [Query("Aa", 4), Query("BB", 4), Query("nothing", 4)],
        hash_slot_num=7,
        index_num=64,
    )
    expected = [f"{i + 1},{o}" for i, offs in enumerate(want) for o in offs]
    assert lines[1:] == expected


@pytest.mark.spark
def test_sql_engine_spark_runs_for_real(capsys: pytest.CaptureFixture[str], spark: object) -> None:
    status, out, err = _run(
        capsys,
        "sql",
        str(G.store_dir),
        "SELECT count(*) AS n FROM entries",
        "--engine",
        "spark",
        "--master",
        "local[2]",  # the suite's shared session (one JVM holds one SparkContext)
        "--json",
        *GEOM,
    )
    assert status == 0, err
    assert json.loads(out)["rows"] == [{"n": 150}]
