"""PNG charts of :class:`rmqarrow.converters.stats.sql.IndexStats` (``rmqarrow stats --plot
DIR``).

matplotlib is imported here only, lazily, and drawn through its Agg canvas directly
(``Figure`` + ``FigureCanvasAgg``, no ``pyplot``), so no GUI backend or global figure
state is ever touched.  Existing files are never replaced unless ``overwrite=True``.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow._optional import require
from rmqarrow._paths import local_path
from rmqarrow.errors import OutputExistsError, UsageError
from rmqarrow.format.detect import DATASET_KINDS, KIND_NAMES, detect

if TYPE_CHECKING:
    from rmqarrow.converters.stats.sql import IndexStats

__all__ = ["BARS_UP_TO", "CHARTS", "chart_figures", "refuse_data_folder", "write_charts"]

#: Per-file charts draw one bar per file up to this many files, lines over time above.
BARS_UP_TO = 60

#: The files :func:`write_charts` writes (time_range.png only with a time range).
CHARTS = (
    "slot_load.png",
    "chain_depth.png",
    "file_fill.png",
    "time_coverage.png",
    "hot_keys.png",
    "time_range.png",
)


def _figure() -> Any:
    canvas = require("matplotlib.backends.backend_agg", "drawing the stats charts").FigureCanvasAgg
    figure = require("matplotlib.figure", "drawing the stats charts").Figure
    fig = figure(figsize=(8, 4.5), dpi=100, layout="constrained")
    canvas(fig)
    return fig


def _observed_vs_poisson(
    x: list[int], observed: list[int], expected: list[float], what: str, title: str
) -> Any:
    fig = _figure()
    ax = fig.add_subplot()
    ax.bar(x, observed, color="#4c72b0", label="observed")
    ax.plot(x, expected, "o-", color="#dd8452", label="Poisson expectation")
    ax.set_xlabel(what)
    ax.set_ylabel("count")
    ax.set_title(title)
    _legend_outside(fig)
    return fig


def _legend_outside(fig: Any) -> None:
    """The legend above the axes, where it can hide no bar or point."""
    fig.legend(loc="outside upper right", ncols=2, fontsize=8, frameon=False)


def _dates(ms: list[int]) -> list[_dt.datetime]:
    return [_dt.datetime.fromtimestamp(t / 1000, tz=_dt.UTC) for t in ms]


def _date_axis(axis: Any) -> None:
    """Real dates on ``axis`` (UTC), labelled as tersely as their span allows."""
    mdates = require("matplotlib.dates", "drawing the stats charts")
    locator = mdates.AutoDateLocator(tz=_dt.UTC)
    axis.set_major_locator(locator)
    axis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=_dt.UTC))


def chart_figures(stats: IndexStats) -> dict[str, Any]:
    """Every chart of ``stats`` as a matplotlib ``Figure``, by the file name
    :func:`write_charts` saves it under.  Per-file charts draw a bar per file up to
    :data:`BARS_UP_TO` files and lines over store time (UTC dates) above, so thousands
    of files stay readable."""
    charts: dict[str, Any] = {}
    load = stats.slot_load.to_pydict()
    charts["slot_load.png"] = _observed_vs_poisson(
        load["load"], load["slots"], load["poisson_slots"], "entries in the slot", "Slot load"
    )
    depth = stats.chain_depth.to_pydict()
    charts["chain_depth.png"] = _observed_vs_poisson(
        depth["depth"],
        depth["entries"],
        depth["poisson_entries"],
        "depth in the chain (entries a lookup reads)",
        "Chain depth of entries",
    )
    files = stats.files.to_pydict()
    labels = files["file_name"]
    many = len(labels) > BARS_UP_TO
    fill = [f or 0.0 for f in files["fill"]]
    begins = _dates(files["begin_timestamp"])

    fig = _figure()
    ax = fig.add_subplot()
    if many:  # a step per file at its begin time: a line, not thousands of bars
        ax.step(begins, fill, where="post", lw=1, label="entries")
        ax.step(begins, files["slot_fill"], where="post", lw=1, label="slots used")
        _date_axis(ax.xaxis)
        ax.set_xlabel(f"begin time of the file (UTC), {len(labels):,} files")
    else:
        xs = list(range(len(labels)))
        ax.bar([x - 0.2 for x in xs], fill, width=0.4, label="entries")
        ax.bar([x + 0.2 for x in xs], files["slot_fill"], width=0.4, label="slots used")
        ax.set_xticks(xs, labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fill")
    ax.set_title("Fill per file")
    _legend_outside(fig)
    charts["file_fill.png"] = fig

    fig = _figure()
    ax = fig.add_subplot()
    ends = _dates(files["end_timestamp"])
    if many:  # the files in name order against their begin and end times
        order = list(range(len(labels)))
        ax.plot(begins, order, lw=1, label="begin timestamp")
        ax.plot(ends, order, lw=1, label="end timestamp")
        ax.set_ylabel("file (in name order)")
        _legend_outside(fig)
    else:
        xs = list(range(len(labels)))
        spans = [max(e - b, _dt.timedelta(0)) for b, e in zip(begins, ends, strict=True)]
        ax.barh(xs, spans, left=begins, height=0.6)
        ax.set_yticks(xs, labels, fontsize=7)
    _date_axis(ax.xaxis)
    ax.set_xlabel("store time (UTC)")
    ax.set_title("Time coverage per file (begin .. end timestamp)")
    charts["time_coverage.png"] = fig

    hot = stats.hot_keys.to_pydict()
    fig = _figure()
    ax = fig.add_subplot()
    ax.bar([str(h) for h in hot["key_hash"]], hot["entries"])
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    ax.set_xlabel("key hash")
    ax.set_ylabel("entries")
    ax.set_title("Hottest key hashes")
    charts["hot_keys.png"] = fig

    if stats.time_range is not None:
        assert stats.time_range_summary is not None
        tr = stats.time_range_summary.to_pydict()
        fig = _figure()
        ax = fig.add_subplot()
        if len(tr["file_name"]) > BARS_UP_TO:
            ax.step(_dates(tr["first_ms"]), tr["entries"], where="post", lw=1)
            _date_axis(ax.xaxis)
            ax.set_xlabel("first entry of the file in the range (UTC)")
        else:
            ax.bar(tr["file_name"], tr["entries"])
            ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.set_ylabel("entries")
        t1, t2 = (_dt.datetime.fromtimestamp(t / 1000, tz=_dt.UTC) for t in stats.time_range)
        ax.set_title(f"Entries stored in [{t1:%Y-%m-%d %H:%M:%S}, {t2:%Y-%m-%d %H:%M:%S}] UTC")
        charts["time_range.png"] = fig
    return charts


def refuse_data_folder(folder: Path, what: str) -> None:
    """Refuse ``folder`` as the place for ``what`` when it is a store, a CommitLog or a
    dataset: RocketMQ's load opens every entry of an index directory, and a dataset's
    readers take what its tables hold."""
    # the folder itself, and the folders above it that are datasets (their folders below
    # are theirs too: detected by their own record, a manifest or a Delta log): a table folder of a
    # Delta dataset would lose the file to a vacuum (it deletes what its log does not name)
    here = folder.absolute()
    for place in (here, *here.parents):
        kind = detect(place).kind
        if place != here and kind not in DATASET_KINDS:
            continue
        if kind not in ("missing", "empty_dir", "other_dir"):
            inside = "" if place == here else f" (inside {place})"
            raise UsageError(
                f"{folder}: {KIND_NAMES[kind]}{inside}, not a place for {what} (rmqarrow "
                "writes nothing into stores, CommitLogs or datasets); give a new or an "
                "ordinary directory"
            )


def write_charts(
    stats: IndexStats, directory: str | os.PathLike[str], *, overwrite: bool = False
) -> list[Path]:
    """Write the charts into ``directory`` (created if missing); return their paths.

    Never into a store, a CommitLog or a dataset: RocketMQ's load opens every entry of an
    index directory, and a dataset's readers take what its tables hold."""
    out = local_path(directory)
    refuse_data_folder(out, "charts")
    names = [c for c in CHARTS if c != "time_range.png" or stats.time_range is not None]
    paths = [out / n for n in names]
    if not overwrite:
        taken = [p for p in paths if p.exists()]
        if taken:
            raise OutputExistsError(
                f"{taken[0]}: exists; rmqarrow does not replace files "
                "(choose another directory, or pass overwrite=True)"
            )
    out.mkdir(parents=True, exist_ok=True)

    for name, fig in chart_figures(stats).items():
        fig.savefig(out / name)
    return paths
