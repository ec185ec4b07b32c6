"""The index-health figures of an IndexFile store or dataset, in one place.

:mod:`.sql` states every figure as one DuckDB statement: the reference, and what answers a
native store or a small dataset.  :mod:`.streamed` computes the same figures over a large
exported dataset in passes whose memory does not grow with the number of files (the tests
hold the two equal).  :mod:`.html` and :mod:`.plot` render a result; nothing is computed
there.  Imported lazily: ``import rmqarrow.converters.stats`` loads neither DuckDB nor
matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.converters.stats.html import html_target, render_html, write_html
    from rmqarrow.converters.stats.plot import write_charts
    from rmqarrow.converters.stats.sql import IndexStats, collect

__all__ = [
    "IndexStats",
    "collect",
    "html_target",
    "render_html",
    "write_charts",
    "write_html",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "IndexStats": "sql",
        "collect": "sql",
        "html_target": "html",
        "render_html": "html",
        "write_charts": "plot",
        "write_html": "html",
    },
)
