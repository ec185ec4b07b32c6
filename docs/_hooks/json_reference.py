"""mkdocs hook: every ``--json`` shape, rendered from ``rmqarrow.cli._schemas`` at build time.

A page containing the marker ``<!-- json-schemas -->`` gets, in its place, each shape's
name, version, when it is printed and its fields, from the same schemas ``rmqarrow schema``
prints and the tests validate the commands' output against, so the page cannot drift.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- json-schemas -->"


def render() -> str:
    from rmqarrow.cli._schemas import markdown

    return markdown()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
