"""One self-contained HTML page of :class:`rmqarrow.converters.stats.sql.IndexStats`
(``rmqarrow stats --html FILE``, and ``IndexStats._repr_html_`` in a notebook).

The page is a renderer of the same stats object the text and JSON output print: nothing
is computed here but layout.  It holds inline CSS and inline SVG only (no script, no font,
no image, no link to anything), so it opens the same from a ticket attachment, offline,
under any content policy.  The health banner shows the findings of ``rmqarrow check``
(:meth:`rmqarrow.store.IndexStore.check`, passed in as its ``to_dict()``), never a second
judgement of its own.

Charts over files scale to thousands of files: per-file figures are drawn as one path
over real dates (UTC), never one bar per file, and the worst files are listed in tables.
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow.converters.stats.plot import refuse_data_folder

from rmqarrow._paths import local_path
from rmqarrow._staging import fsync_dir, remove_path, sibling, stale_siblings
from rmqarrow.errors import OutputExistsError, UsageError

if TYPE_CHECKING:
    from rmqarrow.converters.stats.sql import IndexStats

__all__ = ["html_target", "render_check_html", "render_html", "write_html"]

#: Rows of the "worst files" tables.
WORST_FILES = 10

_W, _H = 720, 260  # the SVG viewBox of every chart
_L, _R, _T, _B = 64, 16, 14, 46  # margins: axis labels left and below

#: The page's body only (a notebook keeps its own).
_PAGE_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;
max-width:980px;padding:0 16px;color:#1d2330;background:#fff}
"""

#: Everything else, scoped to the report's element so a notebook's own tables keep theirs.
_CSS = """
.rmqarrow h1{font-size:22px;margin:0 0 8px}.rmqarrow h2{font-size:17px;margin:28px 0 6px;
border-bottom:1px solid #dde1e8;padding-bottom:3px}
.rmqarrow .banner{padding:12px 16px;border-radius:6px;margin:12px 0;border:1px solid}
.rmqarrow .banner.ok{background:#e7f6ec;border-color:#7cc695}
.rmqarrow .banner.bad{background:#fdecec;border-color:#e58c8c}
.rmqarrow .banner.unknown{background:#f3f4f7;border-color:#b9bfcc}
.rmqarrow .banner b{font-size:16px}.rmqarrow .banner ul{margin:6px 0 0;padding-left:20px}
.rmqarrow table{border-collapse:collapse;margin:6px 0;font-size:13px}
.rmqarrow th,.rmqarrow td{border:1px solid #dde1e8;padding:3px 8px;text-align:right}
.rmqarrow th{background:#f3f4f7}.rmqarrow td.l,.rmqarrow th.l{text-align:left}
.rmqarrow svg{display:block;max-width:100%;height:auto;margin:6px 0}
.rmqarrow .note{color:#5b6475;font-size:13px}
.rmqarrow .axis{stroke:#5b6475;stroke-width:1}.rmqarrow .grid{stroke:#e6e8ee;stroke-width:1}
.rmqarrow svg text{font:11px system-ui,sans-serif;fill:#3b4252}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _utc(ms: int | None) -> str:
    if ms is None:
        return ""
    moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _num(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


#: Columns holding identifiers, pasted back into a query: printed without grouping.
_IDS = {"key_hash", "phy_offset", "min_offset", "max_offset"}


def _cell(name: str, value: Any, times: Sequence[str]) -> str:
    if value is not None and name in times:
        return _utc(value)
    if value is not None and name in _IDS:
        return str(value)  # an identifier, pasted back into a query: no grouping
    return _num(value)


def _table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], times: Sequence[str] = ()
) -> str:
    if not rows:
        return '<p class="note">none</p>'
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            text = _cell(c, v, times)
            cls = ' class="l"' if isinstance(v, str) or c in times else ""
            cells.append(f"<td{cls}>{_e(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _kv(pairs: Mapping[str, Any], times: Sequence[str] = ()) -> str:
    rows = "".join(
        f'<tr><th class="l">{_e(k)}</th><td>{_e(_cell(k, v, times))}</td></tr>'
        for k, v in pairs.items()
        if not isinstance(v, (list, dict))
    )
    return f"<table>{rows}</table>"


# --- charts ---------------------------------------------------------------------------


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = span / ticks if span > 0 else 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * power >= raw:
            return float(m * power)
    return float(10 * power)


def _y_axis(top: float) -> tuple[float, list[float]]:
    top = top if top > 0 else 1.0
    step = _nice_step(top)
    ceiling = math.ceil(top / step) * step
    return ceiling, [i * step for i in range(round(ceiling / step) + 1)]


#: Date tick spacings (seconds): the first giving at most 7 ticks over the span is used.
_DATE_STEPS = [
    1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600,
    86400, 2 * 86400, 7 * 86400, 30 * 86400, 91 * 86400, 365 * 86400,
]  # fmt: skip


def _date_ticks(lo_ms: float, hi_ms: float) -> tuple[list[float], str]:
    span = max((hi_ms - lo_ms) / 1000, 1.0)
    step = next((s for s in _DATE_STEPS if span / s <= 7), _DATE_STEPS[-1])
    fmt = "%Y-%m-%d" if step >= 86400 else "%m-%d %H:%M" if step >= 60 else "%H:%M:%S"
    first = math.ceil(lo_ms / 1000 / step) * step
    ticks = [float(first + i * step) * 1000 for i in range(int(span / step) + 2)]
    return [t for t in ticks if lo_ms <= t <= hi_ms], fmt


class _Frame:
    """The plotting area of one chart: data ranges mapped into the viewBox."""

    def __init__(self, x0: float, x1: float, y1: float) -> None:
        if x1 <= x0:
            x0, x1 = x0 - 0.5, x1 + 0.5
        self.x0, self.x1 = x0, x1
        self.y1, self.yticks = _y_axis(y1)

    def x(self, v: float) -> float:
        return _L + (v - self.x0) / (self.x1 - self.x0) * (_W - _L - _R)

    def y(self, v: float) -> float:
        return _H - _B - v / self.y1 * (_H - _T - _B)

    def axes(self, xlabel: str, ylabel: str, xticks: list[tuple[float, str]]) -> list[str]:
        out = []
        for t in self.yticks:
            y = self.y(t)
            out.append(f'<line class="grid" x1="{_L}" x2="{_W - _R}" y1="{y:.1f}" y2="{y:.1f}"/>')
            out.append(f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(_num(t))}</text>')
        for v, label in xticks:
            x = self.x(v)
            out.append(
                f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{_H - _B}" y2="{_H - _B + 4}"/>'
            )
            out.append(
                f'<text x="{x:.1f}" y="{_H - _B + 16}" text-anchor="middle">{_e(label)}</text>'
            )
        out.append(f'<line class="axis" x1="{_L}" x2="{_W - _R}" y1="{_H - _B}" y2="{_H - _B}"/>')
        out.append(f'<line class="axis" x1="{_L}" x2="{_L}" y1="{_T}" y2="{_H - _B}"/>')
        out.append(
            f'<text x="{(_L + _W - _R) / 2}" y="{_H - 8}" text-anchor="middle">{_e(xlabel)}</text>'
        )
        out.append(
            f'<text transform="translate(14 {(_T + _H - _B) / 2}) rotate(-90)" '
            f'text-anchor="middle">{_e(ylabel)}</text>'
        )
        return out


def _svg(label: str, parts: list[str], legend: Sequence[tuple[str, str]] = ()) -> str:
    keys = []
    for i, (color, name) in enumerate(legend):  # above the plot: it never hides a mark
        x = _L + i * 190
        keys.append(f'<rect x="{x}" y="-13" width="10" height="10" fill="{color}"/>')
        keys.append(f'<text x="{x + 14}" y="-4">{_e(name)}</text>')
    top = 16 if legend else 0
    return (
        f'<svg role="img" aria-label="{_e(label)}" '
        f'viewBox="0 {-top} {_W} {_H + top}" width="{_W}" height="{_H + top}">'
        f"<title>{_e(label)}</title>{''.join(keys)}{''.join(parts)}</svg>"
    )


def _bars_vs_poisson(
    label: str, x: list[int], observed: list[int], expected: list[float], xlabel: str
) -> str:
    if not x:
        return '<p class="note">no entries</p>'
    f = _Frame(min(x) - 0.5, max(x) + 0.5, max([*observed, *expected, 0]))
    width = max((f.x(1) - f.x(0)) * 0.7, 1.0)
    step = max(1, math.ceil(len(x) / 12))
    parts = f.axes(xlabel, "count", [(v, str(v)) for v in x[::step]])
    for v, o in zip(x, observed, strict=True):
        top = f.y(o)
        parts.append(
            f'<rect x="{f.x(v) - width / 2:.1f}" y="{top:.1f}" width="{width:.1f}" '
            f'height="{_H - _B - top:.1f}" fill="#4c72b0"><title>{v}: {o:,}</title></rect>'
        )
    points = " ".join(f"{f.x(v):.1f},{f.y(e):.1f}" for v, e in zip(x, expected, strict=True))
    parts.append(f'<polyline points="{points}" fill="none" stroke="#dd8452" stroke-width="2"/>')
    parts += [
        f'<circle cx="{f.x(v):.1f}" cy="{f.y(e):.1f}" r="2.5" fill="#dd8452"/>'
        for v, e in zip(x, expected, strict=True)
    ]
    return _svg(label, parts, [("#4c72b0", "observed"), ("#dd8452", "Poisson expectation")])


def _over_time(
    label: str, ylabel: str, series: Sequence[tuple[str, str, list[tuple[int, int, float]]]]
) -> str:
    """Each series is (colour, name, [(begin_ms, end_ms, value)]): a horizontal segment per
    file over its time, joined into one path per series, so it scales with the files."""
    spans = [(b, e) for _, _, pts in series for b, e, _v in pts]
    if not spans:
        return '<p class="note">no files with entries</p>'
    lo, hi = min(b for b, _ in spans), max(e for _, e in spans)
    if hi <= lo:
        lo, hi = lo - 500, hi + 500
    f = _Frame(lo, hi, max([v for _, _, pts in series for *_, v in pts] + [0]))
    ticks, fmt = _date_ticks(lo, hi)
    labels = [(t, _dt.datetime.fromtimestamp(t / 1000, tz=_dt.UTC).strftime(fmt)) for t in ticks]
    parts = f.axes(f"store time (UTC, from {_utc(lo)} to {_utc(hi)})", ylabel, labels)
    for color, name, pts in series:
        d = []
        for b, e, v in sorted(pts):
            y = f.y(v)
            x1, x2 = f.x(b), max(f.x(e), f.x(b) + 0.8)
            d.append(f"M{x1:.1f} {y:.1f}H{x2:.1f}")
        parts.append(
            f'<path d="{"".join(d)}" fill="none" stroke="{color}" stroke-width="2">'
            f"<title>{_e(name)}</title></path>"
        )
    return _svg(label, parts, [(c, n) for c, n, _ in series])


# --- the page -------------------------------------------------------------------------


def _findings(check: Mapping[str, Any]) -> list[str]:
    """What ``rmqarrow check`` found, in its own words (status and detail per file)."""
    out: list[str] = []
    note = (check.get("geometry") or {}).get("note")
    for f in check.get("files") or []:
        if f.get("status") != "ok":
            detail = f": {f['detail']}" if f.get("detail") else ""
            out.append(f"{f.get('name')}: {f.get('status')}{detail}")
            chains = f.get("chains") or {}
            out += [f"  e.g. {x}" for x in (chains.get("examples") or [])[:3]]
    out += [str(p) for p in check.get("problems") or []]
    if note:
        out.append(f"note: {note}")
    return out


def _banner(check: Mapping[str, Any] | None, log_check: Mapping[str, Any] | None) -> str:
    log_bad = []
    if log_check is not None:
        log_bad = [
            f"index against the CommitLog: {k} = {v:,}"
            for k, v in log_check.items()
            if k in ("dangling", "missing") and isinstance(v, int) and v
        ]
    if check is None:
        items = "".join(f"<li>{_e(x)}</li>" for x in log_bad)
        return (
            '<div class="banner unknown" id="health"><b>health not checked</b>: this view '
            "holds the stats only; run <code>rmqarrow check</code> (or <code>rmqarrow stats "
            f"--html</code>) for the fsck verdict{f'<ul>{items}</ul>' if items else ''}</div>"
        )
    ok = bool(check.get("ok")) and not log_bad
    found = _findings(check) + log_bad
    where = _e(check.get("store") or check.get("dataset") or "")
    if "files" in check:
        where = f"{len(check['files']):,} file(s) of {where}"
    head = (
        f"<b>healthy</b>: <code>rmqarrow check</code> found nothing wrong in {where}"
        if ok
        else f"<b>problems found</b> by <code>rmqarrow check</code> in {where}"
    )
    items = "".join(f"<li>{_e(x)}</li>" for x in found)
    return (
        f'<div class="banner {"ok" if ok else "bad"}" id="health">{head}'
        f"{f'<ul>{items}</ul>' if items else ''}</div>"
    )


def render_html(
    stats: IndexStats,
    *,
    check: Mapping[str, Any] | None = None,
    log_check: Mapping[str, Any] | None = None,
    title: str | None = None,
    fragment: bool = False,
) -> str:
    """The page as text (``fragment``: its element alone, styles scoped to it, for a
    notebook).  ``check`` is ``rmqarrow check``'s report (``StoreCheck.to_dict()``
    or ``DatasetCheck.to_dict()``) for the banner; ``log_check`` the check against the
    CommitLog that ``stats`` ran (``check_against_log``), when it did."""
    where = (check or {}).get("store") or (check or {}).get("dataset")
    title = title or ("rmqarrow stats" + (f": {where}" if where else ""))
    s = stats.summary
    files = stats.files.to_pylist()
    body = [f"<h1>{_e(title)}</h1>", _banner(check, log_check)]
    body.append(
        f'<p class="note">{_num(s.get("files"))} files, {_num(s.get("entries"))} entries, '
        f"stored from {_e(_utc(s.get('first_store_ms')))} to {_e(_utc(s.get('last_store_ms')))} "
        "(all times UTC)</p>"
    )
    body += ["<h2>Summary</h2>", _kv(s, times=("first_store_ms", "last_store_ms"))]

    load = stats.slot_load.to_pydict()
    body += [
        '<h2 id="slot-load">Slot load against the Poisson expectation</h2>',
        '<p class="note">slots holding k entries, summed over files; the line is '
        "hash_slot_num &#215; P(X = k), X ~ Poisson(entries / hash_slot_num) per file</p>",
        _bars_vs_poisson(
            "slot load", load["load"], load["slots"], load["poisson_slots"], "entries in the slot"
        ),
    ]
    depth = stats.chain_depth.to_pydict()
    body += [
        '<h2 id="chain-depth">Chain depth</h2>',
        '<p class="note">entries at depth d of their chain (a lookup of that entry reads d '
        "entries), against hash_slot_num &#215; P(X &#8805; d)</p>",
        _bars_vs_poisson(
            "chain depth",
            depth["depth"],
            depth["entries"],
            depth["poisson_entries"],
            "depth in the chain",
        ),
    ]
    body.append(_file_depth(stats, files))

    timed = [f for f in files if f.get("entries") and f.get("first_entry_ms") is not None]
    fill = [(f["begin_timestamp"], f["end_timestamp"], f["fill"] or 0.0) for f in timed]
    slot_fill = [(f["begin_timestamp"], f["end_timestamp"], f["slot_fill"] or 0.0) for f in timed]
    rate = [
        (
            f["first_entry_ms"],
            f["last_entry_ms"],
            f["entries"] / max((f["last_entry_ms"] - f["first_entry_ms"]) / 1000, 1.0),
        )
        for f in timed
    ]
    body += [
        '<h2 id="fill">Fill and write rate over time</h2>',
        '<p class="note">one segment per file across its begin..end time: the share of its '
        "entries and hash slots used, and entries written per second while it was "
        "written</p>",
        _over_time(
            "fill per file over time",
            "fill",
            [("#4c72b0", "entries / capacity", fill), ("#55a868", "slots used / slots", slot_fill)],
        ),
        _over_time("write rate over time", "entries per second", [("#8172b3", "write rate", rate)]),
    ]

    disordered = [f for f in timed if f.get("out_of_order")]
    total = sum(f["out_of_order"] for f in files)
    worst = sorted(disordered, key=lambda f: (-f["out_of_order"], f["file_name"]))[:WORST_FILES]
    body += [
        '<h2 id="out-of-order">Out-of-order store times</h2>',
        f'<p class="note">{total:,} entries stored earlier than an entry before them in their '
        f"file, in {len(disordered):,} of {len(files):,} files (a broker clock step back or a "
        "replayed log; time-ranged lookups still find them)</p>",
    ]
    if disordered:
        body.append(
            _over_time(
                "out-of-order entries per file",
                "entries",
                [
                    (
                        "#c44e52",
                        "out-of-order entries",
                        [
                            (f["begin_timestamp"], f["end_timestamp"], float(f["out_of_order"]))
                            for f in disordered
                        ],
                    )
                ],
            )
        )
    body.append(
        _table(
            worst,
            ["file_name", "out_of_order", "entries", "first_entry_ms", "last_entry_ms"],
            times=("first_entry_ms", "last_entry_ms"),
        )
    )

    body += [
        '<h2 id="hot-keys">Hottest keys</h2>',
        (
            '<p class="note">by key hash (Java <code>String.hashCode</code> of '
            "<code>topic#key</code>), named from the CommitLog's messages at a few of each "
            "hash's offsets</p>"
            if "name" in stats.hot_keys.column_names
            else '<p class="note">by key hash (Java <code>String.hashCode</code> of '
            "<code>topic#key</code>); with the CommitLog (a store root, or "
            "<code>--commitlog</code>) each is named</p>"
        ),
        _table(
            stats.hot_keys.to_pylist(),
            stats.hot_keys.column_names,
            times=("first_ms", "last_ms"),
        ),
        '<h2 id="duplicates">Duplicated offsets</h2>',
        _kv(stats.duplicates_summary),
        _table(stats.duplicates.to_pylist(), stats.duplicates.column_names),
        '<h2 id="chains">Chain consistency</h2>',
        '<p class="note">all 0 in files RocketMQ wrote</p>',
        _kv(stats.chain_check),
    ]
    if log_check is not None:
        body += ['<h2 id="log-check">Index against the CommitLog</h2>', _kv(log_check)]
    if stats.time_range is not None and stats.time_range_summary is not None:
        t1, t2 = stats.time_range
        body += [
            f"<h2>Indexed between {_e(_utc(t1))} and {_e(_utc(t2))}</h2>",
            _table(
                stats.time_range_summary.to_pylist(),
                stats.time_range_summary.column_names,
                times=("first_ms", "last_ms"),
            ),
        ]
    body += [
        '<h2 id="files">Files</h2>',
        f'<p class="note">{len(files):,} files; the {min(len(files), WORST_FILES)} least '
        "filled with entries first</p>",
        _table(
            sorted(files, key=lambda f: (f["fill"] is None, f["fill"] or 0.0, f["file_name"]))[
                :WORST_FILES
            ],
            ["file_name", "begin_timestamp", "end_timestamp", "entries", "fill", "slot_fill"],
            times=("begin_timestamp", "end_timestamp"),
        ),
    ]
    if fragment:
        return _fragment(body)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_PAGE_CSS}</style></head>"
        f"<body>{_fragment(body)}</body></html>\n"
    )


def render_check_html(
    check: Mapping[str, Any], files: Sequence[Mapping[str, Any]] | None = None
) -> str:
    """A fragment for a notebook: ``rmqarrow check``'s banner (as on the stats page) over
    a table of ``files`` (``Store.info()``'s rows; by default the check's own)."""
    rows = list(check.get("files") or []) if files is None else list(files)
    wanted = (
        "name", "status", "entries", "fill_ratio", "slot_fill_ratio", "begin_time",
        "end_time", "size", "detail",
    )  # fmt: skip
    columns = [c for c in wanted if any(c in r for r in rows)]
    return _fragment([_banner(check, None), _table(rows, columns)])


def _fragment(body: list[str]) -> str:
    return f'<div class="rmqarrow"><style>{_CSS}</style>{"".join(body)}</div>'


def _file_depth(stats: IndexStats, files: list[dict[str, Any]]) -> str:
    head = '<h2 id="file-depth">Chain depth per file (p50 / p99)</h2>'
    if stats.file_depth is None:
        return (
            head + '<p class="note">not computed: the figures were streamed from a dataset '
            "(as a large store's are, through a temporary export), whose pass counts slot "
            "loads over all files at once</p>"
        )
    rows = stats.file_depth.to_pylist()
    times = {f["file_name"]: (f["begin_timestamp"], f["end_timestamp"]) for f in files}
    series = [
        (name, [(*times[r["file_name"]], float(r[col])) for r in rows if r["file_name"] in times])
        for name, col in (("p50", "depth_p50"), ("p99", "depth_p99"))
    ]
    worst = sorted(rows, key=lambda r: (-r["depth_p99"], -r["depth_max"], r["file_name"]))
    return (
        head + '<p class="note">the depth a lookup reads to reach a file\'s median entry and its '
        "99th percentile, one segment per file across its time; the deepest files below</p>"
        + _over_time(
            "chain depth per file",
            "depth",
            [("#4c72b0", "p50", series[0][1]), ("#c44e52", "p99", series[1][1])],
        )
        + _table(worst[:WORST_FILES], ["file_name", "depth_p50", "depth_p99", "depth_max"])
    )


def html_target(path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Where :func:`write_html` would write ``path``, or the one-line refusal it would
    raise: callers ask first, before the minutes the stats of a large store take."""
    out = local_path(path)
    if out.is_dir():
        raise UsageError(
            f"{out}: a directory; the HTML report takes a file name (e.g. {out}/stats.html)"
        )
    if out.exists() and not overwrite:
        raise OutputExistsError(
            f"{out}: exists; rmqarrow does not replace files (choose another name, or pass "
            "overwrite=True)"
        )
    refuse_data_folder(out.parent, "the HTML report")
    if not out.parent.is_dir():
        raise UsageError(f"{out}: no directory {out.parent}; create it first")
    return out


def write_html(
    stats: IndexStats,
    path: str | os.PathLike[str],
    *,
    check: Mapping[str, Any] | None = None,
    log_check: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write :func:`render_html`'s page to ``path`` (a path or ``file://`` URI) atomically:
    a hidden sibling, fsynced, renamed over the name.  A directory, an existing file
    (unless ``overwrite``) and a place among index files, a CommitLog or a dataset are
    refused."""
    out = html_target(path, overwrite=overwrite)
    parent = out.parent
    text = render_html(stats, check=check, log_check=log_check)
    for stale in stale_siblings(out, "html"):
        remove_path(stale)
    tmp = sibling(out, "html")
    try:
        with open(tmp, "x", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, out)
        else:  # a name taken since the check above is still never replaced
            try:
                os.link(tmp, out)
            except FileExistsError:
                raise OutputExistsError(
                    f"{out}: exists; rmqarrow does not replace files (choose another name, "
                    "or pass overwrite=True)"
                ) from None
    finally:
        remove_path(tmp)
    fsync_dir(parent)
    return out
