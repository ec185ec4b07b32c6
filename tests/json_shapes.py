"""Reading a command's ``--json`` / ``--jsonl`` output as its published schema says it is:
validated with ``jsonschema`` against ``rmqarrow schema COMMAND``'s schema, and naming the
shape the test expects."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from rmqarrow.cli._schemas import SHAPES, command_schema


def shaped(out: str, shape: str) -> dict[str, Any]:
    """The ``--json`` document ``out``, valid under its command's schema and of ``shape``."""
    doc = json.loads(out)
    jsonschema.validate(doc, command_schema(shape.split(".")[0]))
    assert doc["schema"] == SHAPES[shape].id, doc["schema"]
    return doc  # type: ignore[no-any-return]


def shaped_lines(out: str, shape: str) -> list[dict[str, Any]]:
    """The ``--jsonl`` lines ``out``: each a row of ``shape`` (or, for a shape without
    rows, the one document)."""
    lines = [json.loads(line) for line in out.splitlines()]
    s = SHAPES[shape]
    for line in lines:
        jsonschema.validate(line, command_schema(shape.split(".")[0], jsonl=True))
        jsonschema.validate(line, s.row if s.row is not None else s.schema)
    if s.row is None:
        assert len(lines) == 1 and lines[0]["schema"] == s.id, lines
    return lines
