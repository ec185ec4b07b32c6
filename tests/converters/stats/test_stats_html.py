"""``rmqarrow stats --html``: one self-contained page rendered from the stats object, the
health banner from ``rmqarrow check``, written atomically; ``_repr_html_`` is the same
renderer."""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from cli_run import one_error, run
from golden_data import golden_set
from rmqarrow.converters.arrow.tables import store_tables
from rmqarrow.converters.duckdb import connect
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.stats import collect, render_html, write_html
from rmqarrow.converters.stats.sql import IndexStats

import rmqarrow
from rmqarrow.format.layout import Geometry, map_regions

G = golden_set("collisions")
GEOM = ["--hash-slot-num", str(G.hash_slot_num), "--index-num", str(G.index_num)]


def _stats(target: Path, hash_slot_num: int, index_num: int) -> IndexStats:
    with connect(target, hash_slot_num=hash_slot_num, index_num=index_num) as con:
        return collect(con, top=5)


def _self_contained(page: str) -> None:
    """No script, no reference to anything outside the page."""
    low = page.lower()
    for needle in ("<script", "src=", "href=", "url(", "@import", "<link", "http:", "https:"):
        assert needle not in low, needle


def test_page_is_self_contained_and_shows_every_figure() -> None:
    s = _stats(G.store_dir, G.hash_slot_num, G.index_num)
    page = render_html(s)
    _self_contained(page)
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 6  # load, depth, depth per file, fill, rate, out of order
    for anchor in ("slot-load", "chain-depth", "file-depth", "fill", "out-of-order", "hot-keys"):
        assert f'id="{anchor}"' in page
    for key_hash in s.hot_keys.column("key_hash").to_pylist():
        assert f"<td>{key_hash}</td>" in page  # identifiers unformatted
    assert "with the CommitLog (a store root, or <code>--commitlog</code>) each is named" in page
    assert "health not checked" in page  # no check given: no verdict invented
    assert "2023-11-14T22:13:20.999Z" in page  # times as UTC dates, not epoch numbers
    view = s._repr_html_()  # the notebook view: the same renderer, the page's element
    assert view.startswith('<div class="rmqarrow">') and view in page
    assert "body{" not in view  # a notebook's page keeps its own style


def test_file_depth_percentiles_equal_a_direct_count() -> None:
    """p50/p99/max of every file's chain depths (a slot of load L: depths 1..L)."""
    s = _stats(G.store_dir, G.hash_slot_num, G.index_num)
    assert s.file_depth is not None
    got = {r["file_name"]: r for r in s.file_depth.to_pylist()}
    e = store_tables(G.store_dir, G.hash_slot_num, G.index_num).entries
    names = e.column("file_name").to_pylist()
    slots = e.column("slot").to_pylist()
    for name in set(names):
        loads = Counter(sl for n, sl in zip(names, slots, strict=True) if n == name)
        depths = np.sort([d for load in loads.values() for d in range(1, load + 1)])
        want = {
            q: int(depths[int(np.ceil(p * len(depths))) - 1])
            for q, p in (("depth_p50", 0.5), ("depth_p99", 0.99))
        }
        assert {k: got[name][k] for k in want} == want, name
        assert got[name]["depth_max"] == int(depths[-1])
    assert set(got) == set(names)


def test_store_views_in_a_notebook_use_the_same_banner() -> None:
    with rmqarrow.open(G.store_dir, hash_slot_num=G.hash_slot_num, index_num=G.index_num) as st:
        info, check = st.info(), st.check()
    for view in (info._repr_html_(), check._repr_html_()):
        _self_contained(view)
        assert '<div class="banner ok" id="health"><b>healthy</b>' in view
        assert all(f'<td class="l">{n}</td>' in view for n in ("00000", "00001", "00002"))
    assert "fill_ratio" in info._repr_html_()


def test_streamed_figures_say_the_per_file_depth_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rmqarrow.converters.parquet import export as export_mod
    from rmqarrow.converters.parquet.export import export_store

    monkeypatch.setattr(export_mod, "GROUP_ENTRIES", 0)  # a part per file, as full files are
    ds = tmp_path / "ds"
    export_store(G.store_dir, ds, hash_slot_num=G.hash_slot_num, index_num=G.index_num)
    with connect(ds) as con:
        s = collect(con, dataset=ds)
    assert s.file_depth is None
    page = render_html(s)
    assert "not computed: the figures were streamed" in page and page.count("<svg") == 5


def test_cli_html_has_the_checks_banner_and_is_written_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    status, out, err = run(capsys, "stats", str(G.store_dir), "--html", str(page), *GEOM)
    assert status == 0 and f"wrote {page}" in err
    text = page.read_text()
    _self_contained(text)
    assert '<div class="banner ok" id="health"><b>healthy</b>' in text
    assert "found nothing wrong in 3 file(s)" in text
    assert "hottest key hashes" in out  # the text report still prints
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temp left
    status, _, err = run(capsys, "stats", str(G.store_dir), "--html", str(page), *GEOM)
    assert status == 1
    one_error(err, "exists", "--overwrite")
    page.write_text("keep")
    status, _, _ = run(capsys, "stats", str(G.store_dir), "--html", str(page), *GEOM)
    assert page.read_text() == "keep"
    status, _, _ = run(
        capsys, "stats", str(G.store_dir), "--html", page.as_uri(), "--overwrite", *GEOM
    )
    assert status == 0 and page.read_text().startswith("<!DOCTYPE html>")  # file:// works


def test_cli_html_banner_shows_the_checks_own_findings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A chain damaged past the header: stats still runs; the banner is check's verdict."""
    store = tmp_path / "store"
    store.mkdir()
    with rmqarrow.IndexFile.create(store / "20231114221320999", 2, 16) as f:
        for i in range(6):
            assert f.put_key(f"t#{i}", 100 + i, 1_700_000_000_000 + i * 1000)
    m = map_regions(store / "20231114221320999", Geometry(2, 16), writable=True)
    try:
        m.entries[5]["prev_index"] = 1  # a link that skips entries
    finally:
        m.close()
    with rmqarrow.open(store, hash_slot_num=2, index_num=16) as opened:
        check = opened.check().to_dict()
    assert not check["ok"]
    with rmqarrow.open(store, hash_slot_num=2, index_num=16) as opened:
        for view in (opened.check()._repr_html_(), opened.info()._repr_html_()):
            assert '<div class="banner bad" id="health"><b>problems found</b>' in view
            assert "damaged chains" in view and "<script" not in view
    damaged = next(f for f in check["files"] if f["status"] != "ok")
    page = tmp_path / "report.html"
    geom = ["--hash-slot-num", "2", "--index-num", "16"]
    status, _, _ = run(capsys, "stats", str(store), "--html", str(page), *geom)
    assert status == 0
    text = page.read_text()
    assert '<div class="banner bad" id="health"><b>problems found</b>' in text
    assert f"{damaged['name']}: {damaged['status']}" in text
    if damaged["detail"]:
        assert damaged["detail"].replace("'", "&#x27;") in text


@pytest.mark.parametrize("where", ["directory", "store", "in_a_dataset", "missing_parent"])
def test_cli_html_refusals_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str
) -> None:
    store = tmp_path / "store"
    shutil.copytree(G.store_dir, store)
    dataset = tmp_path / "ds"
    if where == "in_a_dataset":  # a table folder: a Delta vacuum deletes what it does not name
        export_store(store, dataset, hash_slot_num=G.hash_slot_num, index_num=G.index_num)
    target = {
        "directory": tmp_path,
        "store": store / "report.html",
        "in_a_dataset": dataset / "entries" / "report.html",
        "missing_parent": tmp_path / "nowhere" / "report.html",
    }[where]
    before = sorted(os.listdir(store))
    status, _, err = run(capsys, "stats", str(store), "--html", str(target), *GEOM)
    assert status == 2
    one_error(err, {"directory": "a directory", "store": "not a place for the HTML report",
                    "in_a_dataset": f"(inside {dataset}), not a place for the HTML report",
                    "missing_parent": "create it first"}[where])  # fmt: skip
    assert where == "directory" or not target.exists()
    assert sorted(os.listdir(store)) == before
    assert not (tmp_path / "nowhere").exists()


def test_write_html_leaves_no_temporary_and_clears_a_dead_runs(tmp_path: Path) -> None:
    s = _stats(G.store_dir, G.hash_slot_num, G.index_num)
    out = tmp_path / "r.html"
    dead = tmp_path / ".r.html.html-999999999-0123abcd"  # a kill -9 leftover (no such pid)
    dead.write_text("partial")
    assert write_html(s, out) == out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]
    assert re.search(r"<svg", out.read_text())


@pytest.mark.slow
def test_thousands_of_files_scale(tmp_path: Path) -> None:
    """2,000 files: the per-file charts stay one path per series, never a mark per file."""
    from rmqarrow.testing import write_random_store

    store = tmp_path / "many"
    write_random_store(store, Geometry(4, 8), [3] * 2000, seed=3)
    s = _stats(store, 4, 8)
    assert s.files.num_rows == 2000
    page = render_html(s)
    _self_contained(page)
    assert page.count("<path") <= 8 and page.count("<rect") < 100
    assert len(page) < 2_000_000
