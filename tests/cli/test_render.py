"""One renderer per result type: every kind's ``info``, ``check``, ``verify`` and ``stats``
result has its own, and the commands render what the verb returns, whatever the kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import one_error, run
from golden_data import golden_set
from json_shapes import shaped
from rocksdb_golden_data import ALL_ROCKSDB

import rmqarrow
from rmqarrow.cli._render import render
from rmqarrow.rocksdb import RocksDBCheck
from rmqarrow.store import (
    DatasetCheck,
    DatasetInfo,
    RocksDBDatasetCheck,
    RocksDBDatasetInfo,
    RocksDBInfo,
    RocksDBStats,
    RocksDBVerify,
    StatsReport,
    StoreCheck,
    StoreInfo,
    TieredDatasetInfo,
    TieredInfo,
)
from rmqarrow.tiered import TieredCheck
from rmqarrow.verify import TieredVerifyReport, VerifyReport

EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")

RESULTS = [
    StoreInfo,
    TieredInfo,
    DatasetInfo,
    TieredDatasetInfo,
    RocksDBInfo,
    RocksDBDatasetInfo,
    StoreCheck,
    TieredCheck,
    DatasetCheck,
    RocksDBDatasetCheck,
    RocksDBCheck,
    VerifyReport,
    TieredVerifyReport,
    RocksDBVerify,
    StatsReport,
    RocksDBStats,
]


def test_every_result_type_has_its_own_renderer() -> None:
    renderers = [render.dispatch(t) for t in RESULTS]
    assert render.dispatch(object) not in renderers
    assert len(set(renderers)) == len(RESULTS)  # none borrows another type's


def test_an_unknown_result_is_a_bug_not_a_silent_success() -> None:
    with pytest.raises(TypeError, match="no renderer for dict"):
        render({}, None)


def test_check_of_an_index_dataset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    g = golden_set("rolling")
    ds = tmp_path / "ds"
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as st:
        st.export(ds)
    status, out, _ = run(capsys, "check", str(ds))
    assert (status, out) == (0, "the dataset matches its manifest\n")
    status, out, _ = run(capsys, "check", str(ds), "--json")
    assert status == 0 and shaped(out, "check.dataset") == {
        "schema": "rmqarrow.check.dataset/1",
        "dataset": str(ds),
        "ok": True,
        "problems": [],
    }
    status, _, err = run(capsys, "check", str(ds), "--commitlog", str(tmp_path))
    one_error(err, f"--commitlog {tmp_path}: an exported dataset is checked on its own")
    assert status == 2
    part = min((ds / "entries").rglob("*.parquet"))
    part.write_bytes(part.read_bytes()[:-100])  # the footer gone
    status, out, _ = run(capsys, "check", str(ds), "--json")
    doc = shaped(out, "check.dataset")
    assert status == 1 and not doc["ok"] and len(doc["problems"]) == 1
    status, out, _ = run(capsys, "check", str(ds))
    assert status == 1 and out == doc["problems"][0] + "\n"


def test_a_rocksdb_index_stats_refuse_plot_and_html(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plots, page = tmp_path / "plots", tmp_path / "page.html"
    status, out, err = run(capsys, "stats", str(EDGE.db), "--plot", str(plots))
    one_error(err, "--plot draws the IndexFile analyses", "print as tables")
    assert status == 2 and out == "" and not plots.exists()
    status, out, err = run(capsys, "stats", str(EDGE.db), "--html", str(page))
    one_error(err, "--html draws the IndexFile figures' page", "print as tables")
    assert status == 2 and out == "" and not page.exists()
    one_error(err, "and `rmqarrow check` this index for its verdict")
    assert "check()" not in err


def test_verify_refuses_what_a_kind_cannot_use(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, _, err = run(capsys, "verify", str(EDGE.db), "--no-chain-check")
    one_error(err, "a RocksDB index has no hash chains")
    assert status == 2
    keys = tmp_path / "keys.txt"
    keys.write_text("EdgeTopic#first\n")
    status, _, err = run(capsys, "verify", str(EDGE.db), "--keys", str(keys))
    one_error(err, "--keys are the IndexFiles' sampling source", "give --queries")
    assert status == 2


def test_a_list_a_mapping_and_an_enum_read_as_words_in_a_table() -> None:
    from rmqarrow._text import table_lines
    from rmqarrow._vocab import Kind

    lines, _ = table_lines(
        [
            ("families", ["default", "timer"]),
            ("bookkeeping", {"lastOffsetPy": 7}),
            ("kind", Kind.TIERED),
        ],
        ["field", "value"],
    )
    text = "\n".join(lines)
    assert "default, timer" in text
    assert "lastOffsetPy=7" in text
    assert " tiered" in text
    assert "[" not in text and "{" not in text and "Kind." not in text
