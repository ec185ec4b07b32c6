"""``stats --plot`` charts: real UTC dates on time axes, legends that hide nothing, and
lines instead of a bar per file when there are thousands of files (real matplotlib)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import pytest
from golden_data import golden_set
from rmqarrow.converters.duckdb import connect
from rmqarrow.converters.stats import collect
from rmqarrow.converters.stats.plot import BARS_UP_TO, chart_figures, write_charts
from rmqarrow.converters.stats.sql import IndexStats

from rmqarrow.format.layout import Geometry
from rmqarrow.testing import write_random_store

G = golden_set("collisions")


def _stats(
    target: Path, hash_slot_num: int, index_num: int, between: tuple[int, int] = (0, 0)
) -> IndexStats:
    with connect(target, hash_slot_num=hash_slot_num, index_num=index_num) as con:
        return collect(con, top=5, between=between)


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> IndexStats:
    store = tmp_path_factory.mktemp("many") / "store"
    write_random_store(store, Geometry(4, 8), [3] * 2000, seed=5)
    return _stats(store, 4, 8, between=(1_600_000_000_000, 1_800_000_000_000))


def _x_labels(fig: Any) -> str:
    fig.canvas.draw()
    ax = fig.axes[0]
    return " ".join(
        [t.get_text() for t in ax.get_xticklabels()] + [ax.xaxis.get_offset_text().get_text()]
    )


def _legend_hides_nothing(fig: Any) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            for mark in [*ax.patches, *ax.lines]:
                assert not box.overlaps(mark.get_window_extent(renderer)), mark


def test_time_axes_show_utc_dates_not_epoch_seconds() -> None:
    s = _stats(G.store_dir, G.hash_slot_num, G.index_num)
    labels = _x_labels(chart_figures(s)["time_coverage.png"])
    assert "2023" in labels and "22:" in labels  # the files' day and hour (UTC)
    assert "e9" not in labels and "epoch" not in labels


@pytest.mark.parametrize("chart", ["file_fill.png", "slot_load.png", "chain_depth.png"])
def test_legend_hides_no_bar(chart: str) -> None:
    _legend_hides_nothing(chart_figures(_stats(G.store_dir, G.hash_slot_num, G.index_num))[chart])


@pytest.mark.slow
def test_thousands_of_files_are_lines_over_dates(many: IndexStats, tmp_path: Path) -> None:
    assert many.files.num_rows == 2000 > BARS_UP_TO
    charts = chart_figures(many)
    years = {
        str(_dt.datetime.fromtimestamp(t / 1000, tz=_dt.UTC).year)
        for t in many.files.column("begin_timestamp").to_pylist()
    }
    for name in ("file_fill.png", "time_coverage.png", "time_range.png"):
        ax = charts[name].axes[0]
        assert len(ax.patches) == 0 and 1 <= len(ax.lines) <= 2, name  # no bar per file
        labels = _x_labels(charts[name])
        assert any(y in labels for y in years) and "e9" not in labels, (name, labels)
    _legend_hides_nothing(charts["file_fill.png"])
    paths = write_charts(many, tmp_path / "charts")
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
