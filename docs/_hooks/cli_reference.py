"""mkdocs hook: the command-line reference, rendered from the argparse parsers at build time.

A page containing the marker ``<!-- cli-reference -->`` gets, in its place, the help of
``rmqarrow`` and of each subcommand exactly as ``rmqarrow COMMAND --help`` prints it, so
the reference cannot drift from the code.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

MARKER = "<!-- cli-reference -->"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def render() -> str:
    from rmqarrow.cli import build_parser

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal; the page is fixed width
    try:
        parser = build_parser()
        parts = ["## rmqarrow", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, sub in _subparsers(parser).items():
            parts += [f"## rmqarrow {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())
