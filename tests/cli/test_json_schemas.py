"""Every command's ``--json`` and ``--jsonl`` output, on real stores, validated against the
schema ``rmqarrow schema COMMAND`` publishes, across the flags that change what is printed;
and the schemas themselves, the ``schema`` command and the page rendered from them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from cli_run import one_error, run
from json_shapes import shaped, shaped_lines
from legacy_dataset import legacy_layout

from rmqarrow.cli._schemas import COMMANDS, SHAPES, command_schema, markdown
from rmqarrow.demo import make_docs_workspace

ROOT = Path(__file__).resolve().parents[2]
KEY = ["--key", "order-1", "--topic", "OrderTopic"]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    make_docs_workspace(root)
    return root


def _damaged(ws: Path, tmp_path: Path) -> Path:
    """A copy of the store whose newest index file lost its tail."""
    store = tmp_path / "store"
    shutil.copytree(ws / "store", store)
    newest = sorted((store / "index").iterdir())[-1]
    newest.write_bytes(newest.read_bytes()[:-1000])
    return store


def test_every_schema_is_valid_draft_2020_12() -> None:
    for command in COMMANDS:
        for jsonl in (False, True):
            schema = command_schema(command, jsonl=jsonl)
            jsonschema.Draft202012Validator.check_schema(schema)
            assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(COMMANDS) == {
        "info", "query", "build", "check", "export", "import", "sql", "stats", "verify", "demo",
        "convert", "vacuum", "formats",
    }  # fmt: skip
    for shape in SHAPES.values():  # the version field is required, first, and fixed
        assert shape.schema["required"][0] == "schema"
        assert shape.schema["properties"]["schema"] == {"const": shape.id}
        assert shape.id == f"rmqarrow.{shape.name}/{shape.version}"


def test_a_document_of_one_shape_is_refused_as_another() -> None:
    doc = {"schema": SHAPES["query"].id, "key": "T#k", "max_num": 1, "begin": 0, "end": 1}
    validator = jsonschema.Draft202012Validator(command_schema("query"))
    assert not validator.is_valid(doc)  # phy_offsets missing
    assert validator.is_valid({**doc, "phy_offsets": [1]})
    assert not validator.is_valid({**doc, "phy_offsets": [1], "extra": 1})  # undocumented
    assert not validator.is_valid({**doc, "phy_offsets": [1], "schema": "rmqarrow.query/2"})


def test_schema_command_prints_each_command_schema(capsys: pytest.CaptureFixture[str]) -> None:
    for command in COMMANDS:
        status, out, _ = run(capsys, "schema", command)
        assert status == 0 and json.loads(out) == command_schema(command)
        status, out, _ = run(capsys, "schema", command, "--jsonl")
        assert status == 0 and json.loads(out) == command_schema(command, jsonl=True)
    status, out, _ = run(capsys, "schema")
    assert status == 0 and all(s.id in out for s in SHAPES.values())
    status, _, err = run(capsys, "schema", "querry")
    assert status == 2 and "did you mean 'query'?" in err
    status, _, err = run(capsys, "schema", "--jsonl")
    assert status == 2 and "name the COMMAND" in one_error(err)


def test_the_json_page_is_rendered_from_the_schemas() -> None:
    page = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    assert "<!-- json-schemas -->" in page
    rendered = markdown()
    for shape in SHAPES.values():
        assert f"### `{shape.id}`" in rendered
        row = shape.row or {}
        for form in (shape.schema, row, *row.get("anyOf", [])):
            for field in form.get("properties", {}):
                assert f"| `{field}` |" in rendered
    assert "json.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_info(capsys: pytest.CaptureFixture[str], ws: Path, tmp_path: Path) -> None:
    status, out, _ = run(capsys, "info", str(ws / "store"), "--json")
    doc = shaped(out, "info.index-store")
    assert status == 0 and len(doc["files"]) == 3 and next(iter(doc)) == "schema"
    status, out, _ = run(capsys, "info", str(ws / "store"), "--jsonl")
    assert shaped_lines(out, "info.index-store") == doc["files"]
    status, out, _ = run(capsys, "info", str(ws / "store"), "--json", "--no-chain-check")
    assert status == 0 and shaped(out, "info.index-store")
    one = sorted((ws / "store" / "index").iterdir())[0]
    status, out, _ = run(capsys, "info", str(one), "--json")
    assert shaped(out, "info.index-file")["name"] == one.name
    status, out, _ = run(capsys, "info", str(one), "--jsonl")
    assert shaped_lines(out, "info.index-file")[0]["name"] == one.name
    status, out, _ = run(capsys, "info", str(ws / "lake" / "idx"), "--json")
    assert status == 0 and shaped(out, "info.dataset")["tables"]["entries"]["rows"] == 9000
    status, out, _ = run(capsys, "info", str(_damaged(ws, tmp_path)), "--json")
    files = shaped(out, "info.index-store")["files"]
    assert status == 1 and [f["status"] for f in files].count("ok") == 2


def test_query(capsys: pytest.CaptureFixture[str], ws: Path) -> None:
    store = str(ws / "store")
    status, out, _ = run(capsys, "query", store, *KEY, "--json")
    assert status == 0 and shaped(out, "query")["phy_offsets"] == [184]
    status, out, _ = run(capsys, "query", store, *KEY, "--jsonl")
    assert shaped_lines(out, "query")[0]["phy_offsets"] == [184]
    status, out, _ = run(capsys, "query", store, *KEY, "--json", "--explain")
    assert len(shaped(out, "query")["explain"]) == 4
    for flags in (["--type", "K"], ["--type", "T"], ["--begin", "0", "--end", "1"]):
        status, out, _ = run(capsys, "query", store, *KEY, *flags, "--json")
        assert status == 0 and shaped(out, "query")
    status, out, _ = run(capsys, "query", store, *KEY, "--resolve", f"{store}/commitlog", "--json")
    assert shaped(out, "query.resolved")["phy_offsets"] == [184]
    queries = ["--queries", str(ws / "queries.tsv")]
    status, out, _ = run(capsys, "query", store, *queries, "--json")
    answers = shaped(out, "query.batch")["answers"]
    assert answers[0]["phy_offsets"] == [184] and answers[2]["phy_offsets"] == []
    status, out, _ = run(capsys, "query", store, *queries, "--jsonl")
    assert shaped_lines(out, "query.batch") == answers
    lake = ["--dataset", str(ws / "lake" / "idx"), "--engine", "duckdb"]
    status, out, _ = run(capsys, "query", store, *queries, *lake, "--json")
    assert shaped(out, "query.batch")["answers"] == answers


def test_build_check_export_import(
    capsys: pytest.CaptureFixture[str], ws: Path, tmp_path: Path
) -> None:
    status, out, _ = run(
        capsys, "build", str(tmp_path / "b"), "--from", str(ws / "messages.csv"), "--json"
    )
    assert status == 0 and shaped(out, "build")["entries"] > 0
    status, out, _ = run(capsys, "check", str(ws / "store"), "--json")
    assert status == 0 and shaped(out, "check")["ok"] is True
    store = str(ws / "store" / "index")
    log = str(ws / "store" / "commitlog")
    status, out, _ = run(capsys, "check", store, "--commitlog", log, "--json")
    assert status == 0 and shaped(out, "check")["commitlog"]
    status, out, _ = run(capsys, "check", str(_damaged(ws, tmp_path)), "--json")
    doc = shaped(out, "check")
    assert status == 1 and doc["ok"] is False
    status, out, _ = run(capsys, "export", str(ws / "store"), str(tmp_path / "ds"), "--json")
    assert status == 0 and shaped(out, "export")["entries"] == 9000
    status, out, _ = run(
        capsys, "export", str(ws / "store"), str(tmp_path / "ds"), "--incremental", "--json"
    )
    assert status == 0 and shaped(out, "export.sync")["unchanged"] == 3
    status, out, _ = run(capsys, "import", str(tmp_path / "ds"), str(tmp_path / "out"), "--json")
    assert status == 0 and len(shaped(out, "import")["names"]) == 3


def test_delta_convert_vacuum_and_versions(
    capsys: pytest.CaptureFixture[str], ws: Path, tmp_path: Path
) -> None:
    ds = str(tmp_path / "ds")
    status, out, _ = run(capsys, "export", str(ws / "store"), ds, "--json")
    assert status == 0 and shaped(out, "export")
    legacy_layout(Path(ds))  # the older layout, which convert makes Delta tables
    status, out, _ = run(capsys, "convert", ds, "--json")
    assert status == 0 and shaped(out, "convert")["converted"] is True
    status, out, _ = run(capsys, "info", ds, "--json")
    versions = shaped(out, "info.dataset")["versions"]
    assert [v["version"] for v in versions if v["readable"]] == [0]
    status, out, _ = run(capsys, "vacuum", ds, "--dry-run", "--json")
    assert status == 0 and shaped(out, "vacuum")["dry_run"] is True


def test_sql(capsys: pytest.CaptureFixture[str], ws: Path, tmp_path: Path) -> None:
    lake = str(ws / "lake" / "idx")
    query = "SELECT file_name, index_count FROM files ORDER BY file_name"
    status, out, _ = run(capsys, "sql", lake, query, "--json")
    doc = shaped(out, "sql")
    assert status == 0 and doc["columns"] == ["file_name", "index_count"] and len(doc["rows"]) == 3
    status, out, _ = run(capsys, "sql", lake, query, "--jsonl")
    assert shaped_lines(out, "sql") == doc["rows"]
    status, out, _ = run(capsys, "sql", lake, "SELECT 1 AS a WHERE false", "--json")
    assert shaped(out, "sql") == {"schema": SHAPES["sql"].id, "columns": ["a"], "rows": []}
    saved = tmp_path / "lake.duckdb"
    status, out, _ = run(capsys, "sql", lake, "--save", str(saved), "--json")
    assert status == 0 and shaped(out, "sql.saved")["path"] == str(saved)


def test_stats(capsys: pytest.CaptureFixture[str], ws: Path, tmp_path: Path) -> None:
    store = str(ws / "store" / "index")
    status, out, _ = run(capsys, "stats", store, "--json")
    assert status == 0 and "time_range" not in shaped(out, "stats")
    status, out, _ = run(
        capsys,
        "stats",
        store,
        "--json",
        "--top",
        "3",
        "--between",
        "1709251200000",
        "1709251300000",
        "--commitlog",
        str(ws / "store" / "commitlog"),
        "--plot",
        str(tmp_path / "charts"),
    )
    doc = shaped(out, "stats")
    assert status == 0 and {"time_range", "log_check", "charts"} <= set(doc)
    assert len(doc["hot_keys"]) == 3


def test_verify_and_demo(capsys: pytest.CaptureFixture[str], ws: Path, tmp_path: Path) -> None:
    status, out, _ = run(
        capsys,
        "verify",
        str(ws / "store"),
        "--queries",
        str(ws / "queries.tsv"),
        "--engines",
        "native,duckdb",
        "--dataset",
        str(ws / "lake" / "idx"),
        "--json",
    )
    assert status == 0 and shaped(out, "verify")["ok"] is True
    status, out, _ = run(capsys, "demo", "--docs-workspace", str(tmp_path / "w"), "--json")
    assert status == 0 and shaped(out, "demo.docs-workspace")["store"]
    small = ["--size", "small", "--engines", "native,duckdb", "--out", str(tmp_path / "d")]
    status, out, _ = run(capsys, "demo", *small, "--json")
    assert status == 0 and shaped(out, "demo")["verify"]["ok"] is True


def test_a_body_field_named_schema_is_refused() -> None:
    from rmqarrow.cli._schemas import document

    assert next(iter(document("query", {"key": "T#k"}))) == "schema"
    with pytest.raises(ValueError, match="'schema'"):
        document("info.dataset", {"schema": "theirs"})
