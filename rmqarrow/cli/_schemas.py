"""The shape of every ``--json`` document, as JSON Schema (draft 2020-12), with its version.

Every ``--json`` document is one JSON object whose first key, ``"schema"``, names its
shape and version: ``"rmqarrow.query/1"``.  A command printing different things for
different inputs (an index store, a dataset, tiered files, a RocksDB index) has one shape
per kind, so the name says which fields follow.  ``--jsonl`` prints a document's rows (the
items of its list: ``files``, ``answers``, ``rows``) one a line, as in the list; a document
without rows is one line.  ``rmqarrow schema COMMAND`` prints these schemas, and
``docs/json.md`` is rendered from them at build time.

The version is the shape's major version: renaming or removing a field, changing its type
or its meaning bumps it; a new field (optional, documented here) does not, so readers
ignore keys they do not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["COMMANDS", "SHAPES", "command_schema", "document", "markdown", "schema_id"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"

INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
STR: dict[str, Any] = {"type": "string"}
BOOL: dict[str, Any] = {"type": "boolean"}
ANY: dict[str, Any] = {}


def _null(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _list(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def _obj(
    required: Mapping[str, Any], optional: Mapping[str, Any] | None = None, *, closed: bool = True
) -> dict[str, Any]:
    """An object with these fields; ``closed``: no others (a report's nested parts are
    open, so a library report may grow without this file knowing)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }
    if closed:
        schema["additionalProperties"] = False
    return schema


def _fields(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An :func:`_obj`'s required and optional fields, for a document made of its fields."""
    props = schema["properties"]
    required = {k: v for k, v in props.items() if k in schema["required"]}
    return required, {k: v for k, v in props.items() if k not in required}


def _map(value: dict[str, Any]) -> dict[str, Any]:
    """An object whose keys are names (tables, sections) and values all ``value``."""
    return {"type": "object", "additionalProperties": value}


class Shape:
    """One document: its version, what prints it, its fields, and its list of rows."""

    def __init__(
        self,
        name: str,
        when: str,
        fields: dict[str, Any],
        optional: dict[str, Any] | None = None,
        *,
        rows: str | None = None,
        version: int = 1,
        closed: bool = True,
    ) -> None:
        self.name, self.when, self.rows, self.version = name, when, rows, version
        self.id = f"rmqarrow.{name}/{version}"
        head = {"schema": {"const": self.id}}
        self.schema = _obj({**head, **fields}, optional, closed=closed)
        self.schema["description"] = when

    @property
    def row(self) -> dict[str, Any] | None:
        """The schema of one ``--jsonl`` line, when the document has rows."""
        if self.rows is None:
            return None
        row: dict[str, Any] = self.schema["properties"][self.rows]["items"]
        return row


# -- the parts several documents share ----------------------------------------------------

_INDEX_FILE = _obj(
    {
        "file": STR,
        "name": STR,
        "status": STR,
        "file_size": INT,
        "begin_timestamp": _null(INT),
        "begin_time": _null(STR),
        "end_timestamp": _null(INT),
        "end_time": _null(STR),
        "begin_phy_offset": _null(INT),
        "end_phy_offset": _null(INT),
        "hash_slot_count": _null(INT),
        "index_count": _null(INT),
        "entries": _null(INT),
        "geometry_note": _null(STR),
        "detail": STR,
        "skipped_by_readers": BOOL,
    },
    {
        "hash_slot_num": _null(INT),
        "index_num": _null(INT),
        "fill_ratio": _null(NUM),
        "slot_fill_ratio": _null(NUM),
        "write_full": _null(BOOL),
    },
)
_TIERED_FILE = _obj(
    {
        "file": STR,
        "form": STR,
        "hash_slot_num": INT,
        "begin_timestamp": INT,
        "begin_time": STR,
        "end_timestamp": INT,
        "end_time": STR,
        "geometry_note": _null(STR),
    },
    {
        "index_num": INT,
        "magic": STR,
        "hash_slot_count": INT,
        "item_count": INT,
        "capacity": INT,
        "fill_ratio": NUM,
        "full": BOOL,
        "file_size": INT,
        "items": INT,
    },
)
_ANSWER = _obj({"key": STR, "max_num": INT, "begin": INT, "end": INT, "phy_offsets": _list(INT)})
_TIERED_ITEM = _obj(
    {
        "queue_id": INT,
        "offset": INT,
        "size": INT,
        "time_diff": INT,
        "topic_id": INT,
        "hash_code": INT,
        "next_index": INT,
    },
    {"store_timestamp": INT, "store_time": STR},
)
_TIERED_QUERY = {
    "topic": STR,
    "key": STR,
    "max_count": INT,
    "begin": INT,
    "end": INT,
    "exact": BOOL,
}
_TIERED_ANSWER = {
    "anyOf": [
        _obj({**_TIERED_QUERY, "items": _list(_TIERED_ITEM)}),
        _obj({**_TIERED_QUERY, "error": STR}),
    ]
}
_ROCKSDB_ANSWER = _obj(
    {
        "topic": STR,
        "key": STR,
        "index_type": _null(STR),
        "max_num": INT,
        "begin": INT,
        "end": INT,
        "last_key": _null(STR),
        "result": {"enum": ["ok", "null"]},
        "phy_offsets": _null(_list(INT)),
    },
    {"last_update_timestamp": INT, "last_update_phy_offset": INT, "explain": _list(STR)},
)
_ROWS = _map(_list(_obj({}, closed=False)))
_VERIFY_ENGINE = _obj(
    {"engine": STR, "target": _null(STR), "status": STR, "error": _null(STR)}, closed=False
)
_VERIFY = {
    "ok": BOOL,
    "store": STR,
    "dataset": _null(STR),
    "query_source": STR,
    "queries": INT,
    "engines": _list(_VERIFY_ENGINE),
    "mismatches": _list(_obj({}, closed=False)),
    "chain_damage": _list(ANY),
    "dataset_check": _null(_obj({"dataset": STR, "ok": BOOL}, closed=False)),
    "seconds": NUM,
    "expired_during_run": _list(ANY),
}

SHAPES: dict[str, Shape] = {
    s.name: s
    for s in [
        Shape(
            "info.index-store",
            "info on a store or index directory: one row per index file",
            {"files": _list(_INDEX_FILE)},
            rows="files",
        ),
        Shape(
            "info.index-file",
            "info on one index file",
            *_fields(_INDEX_FILE),
        ),
        Shape(
            "info.tiered-store",
            "info on a folder of tiered index files: one row per file, newest first",
            {"files": _list(_TIERED_FILE)},
            rows="files",
        ),
        Shape("info.tiered-file", "info on one tiered index file", {}, closed=False),
        Shape(
            "info.format",
            "info on a store of a format a program registered: the fields its result names",
            {},
            closed=False,
        ),
        Shape(
            "info.dataset",
            "info on a dataset made by export: its tables, its source and the drift since",
            {
                "dataset": STR,
                "layout": STR,
                "run": INT,
                "delta_version": _null(INT),
                "table_versions": _map(INT),
                "tables": _map(_obj({"rows": INT, "parts": INT})),
                "source": _null(STR),
                "source_files": _list(_obj({"file_name": STR, "entries": INT}, closed=False)),
                "source_entries": INT,
                "commitlog": _null(STR),
                "writer": _null(STR),
                "created_at": _null(STR),
                "updated_at": _null(STR),
                "stale": BOOL,
                "drift": _obj({"path": _null(STR), "found": BOOL, "stale": BOOL}, closed=False),
            },
            {
                # Delta layout: what --as-of takes, oldest first ([] in the manifest layout)
                "versions": _list(
                    _obj(
                        {
                            "version": INT,
                            "time": _null(STR),
                            "app": _null(STR),
                            "run": _null(INT),
                            "readable": BOOL,
                        }
                    )
                ),
            },
        ),
        Shape(
            "info.tiered-dataset",
            "info on a dataset exported from tiered files: its manifest",
            {"tables": _map(_obj({"rows": INT})), "source": ANY, "created_at": _null(STR)},
            closed=False,
        ),
        Shape(
            "info.rocksdb",
            "info on a RocksDB index (path, its figures), or on its exported dataset (its "
            "manifest: tables, source)",
            {"format": STR},
            {"path": STR, "tables": _map(_obj({"rows": INT}, closed=False))},
            closed=False,
        ),
        Shape("query", "query --key: one answer", _fields(_ANSWER)[0], {"explain": _list(STR)}),
        Shape(
            "query.batch",
            "query --queries FILE: one answer per line of the file, in its order",
            {"answers": _list(_ANSWER)},
            rows="answers",
        ),
        Shape(
            "query.resolved",
            "query --resolve COMMITLOG_DIR: the hits read back from the log",
            {
                "key": STR,
                "hits": INT,
                "distinct_offsets": INT,
                "phy_offsets": _list(INT),
                "dropped_false_positives": INT,
                "dropped_offsets": _list(INT),
                "unreadable": _list(_obj({"phy_offset": INT, "error": STR})),
            },
        ),
        Shape(
            "query.tiered",
            "query on tiered files, --key",
            {**_TIERED_QUERY, "items": _list(_TIERED_ITEM)},
            {"rocketmq_items": _null(INT), "note": STR},
        ),
        Shape(
            "query.tiered-batch",
            "query on tiered files, --queries FILE (an answer that could not be read has "
            "error instead of items)",
            {"answers": _list(_TIERED_ANSWER)},
            rows="answers",
        ),
        Shape(
            "query.rocksdb",
            "query on a RocksDB index, --key (result null: RocketMQ answers null)",
            *_fields(_ROCKSDB_ANSWER),
        ),
        Shape(
            "query.rocksdb-batch",
            "query on a RocksDB index, --queries FILE",
            {"answers": _list(_ROCKSDB_ANSWER)},
            rows="answers",
        ),
        Shape(
            "build",
            "build of index files",
            {
                "store": STR,
                "records": INT,
                "files": INT,
                "new_files": INT,
                "entries": INT,
                "repaired": INT,
                "seconds": NUM,
            },
        ),
        Shape(
            "build.rocksdb",
            "build --index rocksdb",
            {"path": STR, "messages": INT, "indexed": INT, "records": INT, "seconds": NUM},
        ),
        Shape(
            "check",
            "check of index files (exit status 1 when ok is false)",
            {
                "store": STR,
                "ok": BOOL,
                "geometry": _obj({"hash_slot_num": INT, "index_num": INT}, closed=False),
                "commitlog": _null(STR),
                "files": _list(
                    _obj(
                        {
                            "file": STR,
                            "name": STR,
                            "size": INT,
                            "status": STR,
                            "detail": STR,
                            "chains": _null(_obj({"examples": _list(STR)}, closed=False)),
                        },
                        closed=False,
                    )
                ),
            },
        ),
        Shape(
            "check.tiered",
            "check of tiered files",
            {
                "ok": BOOL,
                "files": _list(
                    _obj({"file": STR, "ok": BOOL, "problems": _list(STR), "notes": _list(STR)})
                ),
            },
        ),
        Shape(
            "check.rocksdb",
            "check of a RocksDB index",
            {
                "path": STR,
                "ok": BOOL,
                "records": INT,
                "counts": _map(INT),
                "findings": _list(_obj({"kind": STR, "key": ANY, "detail": STR, "severity": STR})),
            },
            closed=False,
        ),
        Shape(
            "check.dataset",
            "check of an exported dataset: its parts against its manifest (exit status 1 "
            "when ok is false)",
            {"dataset": STR, "ok": BOOL, "problems": _list(STR)},
        ),
        Shape(
            "check.rocksdb-dataset",
            "check of a dataset exported from a RocksDB index",
            {"ok": BOOL},
            closed=False,
        ),
        Shape(
            "export",
            "export of index files: rows written per table",
            {
                "dataset": STR,
                "engine": STR,
                "files": INT,
                "slots": INT,
                "entries": INT,
                "seconds": NUM,
            },
            {"messages": INT},
        ),
        Shape(
            "export.sync",
            "export --incremental (one document), --follow (one document a line, a round each)",
            {
                "dataset": STR,
                "run": INT,
                "added": INT,
                "grown": INT,
                "reexported": INT,
                "unchanged": INT,
                "deleted": INT,
                "pruned": INT,
                "entries": INT,
                "seconds": NUM,
            },
            {"messages": INT},
        ),
        Shape(
            "export.tiered",
            "export of tiered files: rows written per table",
            {"dataset": STR, "kind": {"const": "tiered"}, "seconds": NUM},
            {"tiered_files": INT, "tiered_slots": INT, "tiered_items": INT, "messages": INT},
        ),
        Shape(
            "export.rocksdb",
            "export of a RocksDB index",
            {
                "dataset": STR,
                "records": INT,
                "bookkeeping": _map(ANY),
                "seconds": NUM,
                "records_per_second": _null(INT),
            },
        ),
        Shape(
            "sql.saved",
            "sql DATASET --save FILE: the DuckDB database file written and how to refresh it",
            {
                "path": STR,
                "dataset": STR,
                "views": _list(STR),
                "parts": INT,
                "delta_version": _null(INT),
                "replaced": BOOL,
                "refresh": STR,
            },
        ),
        Shape(
            "convert",
            "convert: a dataset in the manifest layout made Delta tables in place",
            {"dataset": STR, "converted": BOOL, "layout": {"const": "delta"}},
        ),
        Shape(
            "vacuum",
            "vacuum: the files a vacuum deleted (or, --dry-run, would delete), per table",
            {"dataset": STR, "dry_run": BOOL, "files": _map(_list(STR))},
        ),
        Shape(
            "import",
            "import of a dataset into index files",
            {"outdir": STR, "files": INT, "names": _list(STR), "seconds": NUM},
        ),
        Shape(
            "import.tiered",
            "import of a tiered dataset",
            {"outdir": STR, "kind": {"const": "tiered"}, "files": INT, "names": _list(STR)},
        ),
        Shape(
            "sql",
            "sql: one document per statement with rows; a row is an object, column: value",
            {"columns": _list(STR), "rows": _list({"type": "object"})},
            rows="rows",
        ),
        Shape(
            "stats",
            "stats of index files (--commitlog adds log_check, --between time_range, "
            "--plot/--html charts)",
            {
                "summary": _obj({"files": INT, "entries": INT}, closed=False),
                "files": _list(_obj({"file_name": STR, "entries": INT}, closed=False)),
                "slot_load": _list(_obj({"load": INT, "slots": INT, "poisson_slots": NUM})),
                "chain_depth": _list(_obj({"depth": INT, "entries": INT, "poisson_entries": NUM})),
                "hot_keys": _list(_obj({"key_hash": INT, "entries": INT}, closed=False)),
                "duplicates_summary": _obj({}, closed=False),
                "duplicates": _list(_obj({"phy_offset": INT, "entries": INT}, closed=False)),
                "chain_check": _obj({}, closed=False),
            },
            {
                "log_check": _obj({}, closed=False),
                "time_range": _obj({"t1": INT, "t2": INT}, closed=False),
                "charts": _list(STR),
            },
        ),
        Shape(
            "stats.rocksdb",
            "stats of a RocksDB index: each section a list of rows",
            {},
            closed=False,
        ),
        Shape(
            "formats",
            "formats: each index format read from each source, its verbs and engines",
            {
                "formats": _list(
                    _obj(
                        {
                            "format": STR,
                            "source": {"enum": ["native", "dataset"]},
                            "kinds": _list(STR),
                            "store": STR,
                            "verbs": _list(STR),
                            "engines": _list(STR),
                        }
                    )
                )
            },
            rows="formats",
        ),
        Shape("verify", "verify of index files (exit status 1 when ok is false)", _VERIFY),
        Shape("verify.tiered", "verify of tiered files", {"ok": BOOL}, closed=False),
        Shape("verify.rocksdb", "verify of a RocksDB index", {"ok": BOOL}, closed=False),
        Shape(
            "demo",
            "demo: what it made, timed, and the verify report",
            {
                "ok": BOOL,
                "out": STR,
                "messages": INT,
                "paths": _map(STR),
                "hash_slot_num": INT,
                "index_num": INT,
                "index_files": INT,
                "entries": INT,
                "seconds": _map(NUM),
                "questions": _list(_obj({"engine": STR, "sql": STR}, closed=False)),
                "semantics": _obj({}, closed=False),
                "verify": _obj(_VERIFY),
            },
        ),
        Shape(
            "demo.docs-workspace",
            "demo --docs-workspace DIR: each example path of the documentation and where it is",
            {},
            closed=False,
        ),
    ]
}
# the open shapes' values, where the document is a map of names
SHAPES["stats.rocksdb"].schema["additionalProperties"] = _list({"type": "object"})
SHAPES["demo.docs-workspace"].schema["additionalProperties"] = STR
SHAPES["info.tiered-file"].schema.update(_TIERED_FILE, additionalProperties=False)
SHAPES["info.tiered-file"].schema["properties"] = {
    "schema": {"const": SHAPES["info.tiered-file"].id},
    **_TIERED_FILE["properties"],
}
SHAPES["info.tiered-file"].schema["required"] = ["schema", *_TIERED_FILE["required"]]

#: each command's shapes, as ``rmqarrow schema COMMAND`` prints them
COMMANDS: dict[str, list[str]] = {}
for _name in SHAPES:
    COMMANDS.setdefault(_name.split(".")[0], []).append(_name)


def schema_id(shape: str) -> str:
    """``rmqarrow.SHAPE/VERSION``, the value of a document's ``"schema"``."""
    return SHAPES[shape].id


def document(shape: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with ``"schema"`` first (a body's own ``schema`` field would hide the
    version: refused, so such a field gets another name)."""
    if "schema" in body:
        raise ValueError(f"a {shape} document may not hold a field named 'schema'")
    return {"schema": schema_id(shape), **body}


def command_schema(command: str, jsonl: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``rmqarrow COMMAND --json`` (one of its shapes), or with
    ``jsonl`` of one line of ``--jsonl`` (a row, or a document without rows)."""
    shapes = [SHAPES[name] for name in COMMANDS[command]]
    defs: dict[str, Any] = {s.name: s.schema for s in shapes}
    refs = [{"$ref": f"#/$defs/{s.name}"} for s in shapes if not (jsonl and s.row)]
    if jsonl:
        for s in shapes:
            if s.row is not None:
                defs[f"{s.name}.row"] = s.row
                refs.append({"$ref": f"#/$defs/{s.name}.row"})
    flag = "--jsonl" if jsonl else "--json"
    return {
        "$schema": DRAFT,
        "title": f"rmqarrow {command} {flag}",
        "description": (
            "one line of --jsonl: a row of a document with rows, else the whole document"
            if jsonl
            else "the document: an object whose schema field names its shape and version"
        ),
        "oneOf" if not jsonl else "anyOf": refs,
        "$defs": defs,
    }


def _type(schema: Mapping[str, Any]) -> str:
    """A field's type in a few words, for the documentation's tables."""
    if "const" in schema:
        return f'"{schema["const"]}"'
    if "enum" in schema:
        return " or ".join(f'"{v}"' for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(dict.fromkeys(_type(s) for s in schema["anyOf"]))
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object":
        if schema.get("properties"):
            return "object"
        extra = schema.get("additionalProperties")
        return f"map of {_type(extra)}" if isinstance(extra, dict) else "object"
    return str(kind) if kind else "any"


def _table(schema: Mapping[str, Any]) -> list[str]:
    """An object's fields as a table (of alternatives, ``anyOf``: every field, the ones
    not in all of them optional)."""
    forms = schema.get("anyOf", [schema])
    fields: dict[str, Any] = {}
    for form in forms:
        fields.update(form.get("properties", {}))
    always = set.intersection(*(set(form.get("required", [])) for form in forms))
    lines = ["| field | type | |", "| --- | --- | --- |"]
    for field, sub in fields.items():
        lines.append(f"| `{field}` | {_type(sub)} | {'' if field in always else 'optional'} |")
    extra = forms[0].get("additionalProperties")
    if extra is not False:
        lines.append(f"| (other names) | {_type(extra) if isinstance(extra, dict) else 'any'} | |")
    return lines


def markdown() -> str:
    """Every shape as the documentation lists it: name, version, when, fields, a row's."""
    parts = []
    for command, names in COMMANDS.items():
        parts += [f"## {command}", ""]
        for name in names:
            s = SHAPES[name]
            parts += [f"### `{s.id}`", "", s.when[0].upper() + s.when[1:] + ".", ""]
            parts += [*_table(s.schema), ""]
            if s.row is not None:
                parts += [f"An item of `{s.rows}`, and one line of `--jsonl`:", ""]
                parts += [*_table(s.row), ""]
    return "\n".join(parts)
