"""Reading a command's ``--json`` / ``--jsonl`` output as its published schema says it is:
validated with ``jsonschema`` against ``rmqarrow schema COMMAND``'s schema, and naming the
shape the test expects."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from rmqarrow.cli._schemas import SHAPES, command_schema


def shaped(out: str, shape: str) -> dict[str, Any]:
    """The ``--json`` document ``out``, valid under its command's schema and of ``shape``."""
    doc = json.loads(out)
    _validate(doc, shape.split(".")[0], "json")
    assert doc["schema"] == SHAPES[shape].id, doc["schema"]
    return doc  # type: ignore[no-any-return]


def shaped_lines(out: str, shape: str) -> list[dict[str, Any]]:
    """The ``--jsonl`` lines ``out``: each a row of ``shape`` (or, for a shape without
    rows, the one document)."""
    lines = [json.loads(line) for line in out.splitlines()]
    s = SHAPES[shape]
    for line in lines:
        _validate(line, shape.split(".")[0], "jsonl")
        _validate(line, shape, "row")
    if s.row is None:
        assert len(lines) == 1 and lines[0]["schema"] == s.id, lines
    return lines


def _validate(doc: Any, name: str, form: str) -> None:
    """``jsonschema.validate`` with one checked validator per schema, not one per document:
    checking a schema against the metaschema costs more than most documents."""
    error = jsonschema.exceptions.best_match(_validator(name, form).iter_errors(doc))
    if error is not None:
        raise error


@functools.cache
def _validator(name: str, form: str) -> Any:
    """The validator of a command's schema (``form`` json or jsonl) or of a shape's row
    (``form`` row: the shape's schema when it has no rows), its schema checked once."""
    if form == "row":
        s = SHAPES[name]
        schema = s.row if s.row is not None else s.schema
    else:
        schema = command_schema(name, jsonl=form == "jsonl")
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)
