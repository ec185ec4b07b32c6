"""``rmqarrow schema``: the JSON Schema of a command's ``--json`` (or ``--jsonl``) output,
from :mod:`rmqarrow.cli._schemas`, so a consumer can validate what it reads."""

from __future__ import annotations

import argparse
from typing import Any

from rmqarrow.cli._output import print_json, print_table
from rmqarrow.cli._schemas import COMMANDS, SHAPES, command_schema
from rmqarrow.errors import UsageError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "schema",
        help="print the JSON Schema of a command's --json output",
        description=(
            "Print the JSON Schema (draft 2020-12) of 'rmqarrow COMMAND --json': every "
            "document is an object whose 'schema' field names its shape and version, "
            "e.g. rmqarrow.query/1 (the version changes when a field is renamed, removed "
            "or changes meaning). Without COMMAND: every shape and its version."
        ),
    )
    p.add_argument(
        "name", nargs="?", choices=tuple(COMMANDS), metavar="COMMAND", help="the command"
    )
    p.add_argument(
        "--jsonl",
        action="store_true",
        help="the schema of one line of --jsonl (a row of the document) instead",
    )
    p.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    if args.name is None and args.jsonl:
        raise UsageError("--jsonl gives one command's line schema: name the COMMAND")
    if args.name is None:
        print_table(
            [[s.name.split(".")[0], s.id, s.rows or "", s.when] for s in SHAPES.values()],
            ["command", "schema", "jsonl rows", "printed by"],
        )
        return 0
    print_json(command_schema(args.name, jsonl=args.jsonl))
    return 0
