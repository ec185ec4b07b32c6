"""``rmqarrow demo --docs-workspace DIR``: the documentation's example paths, made by the same
library function the docs test runs its examples in, and refused where they would overwrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import one_error, run

from rmqarrow import open as open_store
from rmqarrow.demo import DOCS_WORKSPACE
from rmqarrow.demo.workspace import MESSAGES


def test_docs_workspace_holds_every_example_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "examples"
    status, out, err = run(capsys, "demo", "--docs-workspace", str(ws))
    assert status == 0, err
    for name in DOCS_WORKSPACE:
        assert (ws / name).exists(), name
        assert name in out
    assert f"cd {ws} && rmqarrow info store" in out
    assert "== 1." not in out  # the workspace only, not the demo's story
    # what the docs say it holds: OrderTopic keys in the store, the export beside it
    with open_store(ws / "store") as store:
        assert store.query("OrderTopic", "order-1", max_num=32)
    with open_store(ws / "lake" / "idx") as lake:
        con = lake.to_duckdb()
        ((messages,),) = con.execute("SELECT count(*) FROM messages").fetchall()
    assert messages == MESSAGES
    keys = (ws / "keys.txt").read_text(encoding="utf-8").splitlines()
    assert keys[0] == "OrderTopic#order-0"
    # the examples start from it: a docs command runs there
    status, out, err = run(capsys, "query", str(ws / "store"), "--key", "OrderTopic#order-1")
    assert status == 0 and out.strip(), err


def test_docs_workspace_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "demo", "--docs-workspace", str(tmp_path / "w"), "--json")
    assert status == 0, err
    assert json.loads(out) == {
        "schema": "rmqarrow.demo.docs-workspace/1",
        **{n: str(tmp_path / "w" / n) for n in DOCS_WORKSPACE},
    }


def test_docs_workspace_refuses_a_directory_with_anything_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "mine"
    ws.mkdir()
    (ws / "notes.txt").write_text("keep me", encoding="utf-8")
    status, _out, err = run(capsys, "demo", "--docs-workspace", str(ws))
    assert status == 1
    one_error(err, "exists and is not empty")
    assert sorted(p.name for p in ws.iterdir()) == ["notes.txt"]
    assert (ws / "notes.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize(
    "extra",
    [["--size", "small"], ["--engines", "native,duckdb"], ["--seed", "7"], ["--out", "x"]],
)
def test_docs_workspace_with_a_demo_option_is_a_usage_error(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "examples"
    status, _out, err = run(capsys, "demo", "--docs-workspace", str(ws), *extra)
    assert status == 2, err
    assert extra[0] in err
    assert not ws.exists()


def test_docs_workspace_refuses_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "afile"
    target.write_text("mine", encoding="utf-8")
    status, _out, err = run(capsys, "demo", "--docs-workspace", str(target))
    assert status == 1
    one_error(err, "exists and is not a directory")
    assert target.read_text(encoding="utf-8") == "mine"
