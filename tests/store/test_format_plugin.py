"""A format is a plugin: a toy format (tests/toy_format/: its layout, store and engines)
registered with one line is opened, queried, scanned and described through the same
front door, engines and capability matrix as RocketMQ's own formats."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from cli_run import run
from toy_format import PLUGIN
from toy_format.layout import write

import rmqarrow
from rmqarrow import FormatPlugin, Kind, Source, Verb
from rmqarrow.cli._schemas import command_schema
from rmqarrow.engines import answer_with_engine
from rmqarrow.errors import UnsupportedOperationError, UsageError
from rmqarrow.store import capabilities

ENTRIES = [
    ("orders#k1", 100, 1_000),
    ("orders#k2", 200, 2_000),
    ("orders#k1", 300, 3_000),
    ("orders#k1", 400, 4_000),
]


@pytest.fixture
def toy() -> Iterator[None]:
    rmqarrow.register_format(PLUGIN)  # the one registry line
    try:
        yield
    finally:
        rmqarrow.unregister_format("toy")


@pytest.fixture
def toy_file(tmp_path: Path) -> Path:
    path = tmp_path / "entries.toy"
    write(path, ENTRIES)
    return path


def test_unregistered_the_file_is_refused_as_what_it_is(toy_file: Path) -> None:
    with pytest.raises(UsageError, match="a text file"):
        rmqarrow.open(toy_file)


@pytest.mark.usefixtures("toy")
def test_registered_it_opens_queries_and_scans_through_the_front_door(toy_file: Path) -> None:
    with rmqarrow.open(toy_file) as store:
        assert type(store).__name__ == "ToyStore"
        assert store.kind == "toy_file" and store.format == "toy"
        assert store.query("orders", "k1") == [400, 300, 100]
        assert store.query("orders", "k1", begin=1_500, max_num=1) == [400]
        assert store.query("orders", "k1", engine="duckdb") == [400, 300, 100]
        assert store.scan("entries", columns=["phy_offset"]).read_all().num_rows == 4
        assert store.info().to_dict() == {"path": str(toy_file), "entries": 4}
        assert store.supports(Verb.QUERY) and not store.supports(Verb.EXPORT)
        with pytest.raises(UnsupportedOperationError, match="export is not available"):
            store.export(toy_file.parent / "out")


@pytest.mark.usefixtures("toy")
def test_its_engines_answer_alike_through_the_engine_registry(toy_file: Path) -> None:
    queries = [("orders", "k1", 2, 0, 10_000), ("orders", "k2", 64, 0, 10_000)]
    native = answer_with_engine("native", toy_file, queries, fmt="toy")
    assert native == [[400, 300], [200]]
    assert answer_with_engine("duckdb", toy_file, queries, fmt="toy") == native
    with pytest.raises(UsageError, match="the toy format has no spark engine"):
        answer_with_engine("spark", toy_file, queries, fmt="toy")


@pytest.mark.usefixtures("toy")
def test_the_capability_matrix_derives_its_row() -> None:
    (row,) = [c for c in capabilities() if c.format == "toy"]
    assert row.to_dict() == {
        "format": "toy",
        "source": "native",
        "kinds": ["toy_file"],
        "store": "ToyStore",
        "verbs": ["query", "scan", "info"],
        "engines": ["native", "duckdb"],
    }
    assert {(c.format, c.source) for c in capabilities()} >= {
        ("index", Source.NATIVE),
        ("index", Source.DATASET),
        ("tiered", Source.NATIVE),
        ("rocksdb", Source.DATASET),
    }


def test_a_clashing_or_builtin_registration_is_refused() -> None:
    with pytest.raises(UsageError, match="already registered"):
        rmqarrow.register_format(FormatPlugin("index", "again", native={}))
    clash = FormatPlugin("clash", "x", native={Kind.TIERED: "toy_format.store:ToyStore"})
    with pytest.raises(UsageError, match="kind 'tiered' is already format 'tiered'"):
        rmqarrow.register_format(clash)
    with pytest.raises(UsageError, match="built-in format"):
        rmqarrow.unregister_format("rocksdb")
    with pytest.raises(UsageError, match="expected 'module:attribute'"):
        FormatPlugin("bad", "x", native={"bad_file": "no_colon"})
    with pytest.raises(UsageError, match="keyword names other than master, got 'master'"):
        FormatPlugin("bad", "x", native={}, options=frozenset({"master"}))
    assert [p.name for p in rmqarrow.format_plugins()] == ["index", "tiered", "rocksdb"]


@pytest.mark.usefixtures("toy")
def test_the_formats_command_lists_it(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "formats", "--json")
    assert status == 0
    doc = json.loads(out)
    jsonschema.validate(doc, command_schema("formats"))
    assert [(r["format"], r["source"]) for r in doc["formats"]][-1] == ("toy", "native")
    status, out, _ = run(capsys, "formats")
    assert status == 0
    assert "toy      native   toy_file" in out
    assert "  toy native       query scan info" in out


@pytest.mark.usefixtures("toy")
def test_the_command_line_opens_it_with_no_other_change(
    capsys: pytest.CaptureFixture[str], toy_file: Path
) -> None:
    status, out, _ = run(capsys, "info", str(toy_file))
    assert status == 0
    assert out.split()[4:] == [
        "path",
        str(toy_file),
        "entries",
        "4",
    ]
    status, out, _ = run(capsys, "info", str(toy_file), "--json")
    assert status == 0
    doc = json.loads(out)
    jsonschema.validate(doc, command_schema("info"))
    assert doc == {"schema": "rmqarrow.info.format/1", "path": str(toy_file), "entries": 4}
    status, _, err = run(capsys, "check", str(toy_file))
    assert status == 2  # what the format cannot do is a usage error, in one line
    assert "check is not available" in err
