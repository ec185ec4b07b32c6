"""``rmqarrow formats``: the index formats rmqarrow reads, from each source, with the
verbs and engines each answers (:func:`rmqarrow.store.capabilities`)."""

from __future__ import annotations

import argparse
from typing import Any

from rmqarrow.cli._output import add_json_options, print_document, print_table
from rmqarrow.store import capabilities

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "formats",
        help="list the index formats read, from which sources, and what each answers",
        description=(
            "List each registered index format read from its own files (native) or from a "
            "dataset made by export: the kinds of path it opens, the commands (verbs) it "
            "answers and the engines answering its queries."
        ),
    )
    add_json_options(p)
    p.set_defaults(func=cmd_formats)


def cmd_formats(args: argparse.Namespace) -> int:
    rows = [c.to_dict() for c in capabilities()]
    if args.json:
        print_document("formats", {"formats": rows}, args, rows="formats")
        return 0
    print_table(
        [
            [r["format"], r["source"], ", ".join(r["kinds"]), ", ".join(r["engines"]) or "-"]
            for r in rows
        ],
        ["format", "source", "kinds", "engines"],
    )
    print("\nwhat each answers (methods of the Store rmqarrow.open returns):")
    width = max(len(f"{r['format']} {r['source']}") for r in rows)
    for r in rows:
        print(f"  {r['format'] + ' ' + r['source']:<{width}}  {' '.join(r['verbs'])}")
    return 0
