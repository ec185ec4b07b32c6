"""PNG charts of :class:`rmqarrow.converters.duckdb.stats.IndexStats` (``rmqarrow stats --plot
DIR``).

matplotlib is imported here only, lazily, and drawn through its Agg canvas directly
(``Figure`` + ``FigureCanvasAgg``, no ``pyplot``), so no GUI backend or global figure
state is ever touched.  Existing files are never replaced unless ``overwrite=True``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow._optional import require
from rmqarrow._paths import local_path
from rmqarrow.errors import OutputExistsError, UsageError

if TYPE_CHECKING:
    from rmqarrow.converters.duckdb.stats import IndexStats

__all__ = ["CHARTS", "write_charts"]

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
    canvas = require("matplotlib.backends.backend_agg", "--plot").FigureCanvasAgg
    figure = require("matplotlib.figure", "--plot").Figure
    fig = figure(figsize=(8, 4.5), dpi=100, layout="constrained")
    canvas(fig)
    return fig


def _observed_vs_poisson(
    path: Path, x: list[int], observed: list[int], expected: list[float], what: str, title: str
) -> None:
    fig = _figure()
    ax = fig.add_subplot()
    ax.bar(x, observed, color="#4c72b0", label="observed")
    ax.plot(x, expected, "o-", color="#dd8452", label="Poisson expectation")
    ax.set_xlabel(what)
    ax.set_ylabel("count")
    ax.set_title(title)
    ax.legend()
    fig.savefig(path)


def write_charts(
    stats: IndexStats, directory: str | os.PathLike[str], *, overwrite: bool = False
) -> list[Path]:
    """Write the charts into ``directory`` (created if missing); return their paths.

    Never into a store, a CommitLog or a dataset: RocketMQ's load opens every entry of an
    index directory, and a dataset's readers take what its tables hold."""
    from rmqarrow.format.detect import KIND_NAMES, detect

    out = local_path(directory)
    kind = detect(out).kind
    if kind not in ("missing", "empty_dir", "other_dir"):
        raise UsageError(
            f"{out}: {KIND_NAMES[kind]}, not a place for charts (rmqarrow writes "
            "nothing into stores, CommitLogs or datasets); give a new or an ordinary directory"
        )
    names = [c for c in CHARTS if c != "time_range.png" or stats.time_range is not None]
    paths = [out / n for n in names]
    if not overwrite:
        taken = [p for p in paths if p.exists()]
        if taken:
            raise OutputExistsError(
                f"{taken[0]}: exists; rmqarrow does not replace files "
                "(choose another --plot directory, or pass --overwrite)"
            )
    out.mkdir(parents=True, exist_ok=True)

    load = stats.slot_load.to_pydict()
    _observed_vs_poisson(
        out / "slot_load.png",
        load["load"],
        load["slots"],
        load["poisson_slots"],
        "entries in the slot",
        "Slot load",
    )
    depth = stats.chain_depth.to_pydict()
    _observed_vs_poisson(
        out / "chain_depth.png",
        depth["depth"],
        depth["entries"],
        depth["poisson_entries"],
        "depth in the chain (entries a lookup reads)",
        "Chain depth of entries",
    )

    files = stats.files.to_pydict()
    labels = files["file_name"]
    fig = _figure()
    ax = fig.add_subplot()
    xs = list(range(len(labels)))
    ax.bar([x - 0.2 for x in xs], [f or 0.0 for f in files["fill"]], width=0.4, label="entries")
    ax.bar([x + 0.2 for x in xs], files["slot_fill"], width=0.4, label="slots used")
    ax.set_xticks(xs, labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fill")
    ax.set_title("Fill per file")
    ax.legend()
    fig.savefig(out / "file_fill.png")

    fig = _figure()
    ax = fig.add_subplot()
    begins = [b / 1000 for b in files["begin_timestamp"]]
    spans = [max(s, 0.0) for s in files["span_s"]]
    ax.barh(xs, spans, left=begins, height=0.6)
    ax.set_yticks(xs, labels, fontsize=7)
    ax.set_xlabel("epoch seconds")
    ax.set_title("Time coverage per file (begin .. end timestamp)")
    fig.savefig(out / "time_coverage.png")

    hot = stats.hot_keys.to_pydict()
    fig = _figure()
    ax = fig.add_subplot()
    ax.bar([str(h) for h in hot["key_hash"]], hot["entries"])
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    ax.set_xlabel("key hash")
    ax.set_ylabel("entries")
    ax.set_title("Hottest key hashes")
    fig.savefig(out / "hot_keys.png")

    if stats.time_range is not None:
        assert stats.time_range_summary is not None
        tr = stats.time_range_summary.to_pydict()
        fig = _figure()
        ax = fig.add_subplot()
        ax.bar(tr["file_name"], tr["entries"])
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.set_ylabel("entries")
        t1, t2 = stats.time_range
        ax.set_title(f"Entries stored in [{t1}, {t2}] ms, per file")
        fig.savefig(out / "time_range.png")
    return paths
