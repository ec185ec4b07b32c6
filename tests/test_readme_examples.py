"""The README's and the documentation's examples cannot rot: every code block runs.

Each page (README.md and every ``docs/**/*.md``) runs in a fresh copy of a small generated
workspace (:func:`rmqarrow.demo.make_docs_workspace`, what ``rmqarrow demo
--docs-workspace DIR`` makes: ``store/`` a broker store root, ``lake/idx`` an
exported dataset, ...), with that copy as the working directory.  Blocks run in page order:

- ``python``: executed, all blocks of a page sharing one namespace;
- ``console``, ``sh``: every ``rmqarrow ...`` line (``$ `` prompt optional, ``\\``
  continuations joined) goes through :func:`rmqarrow.cli.main`; it must exit 0 (or the
  marked status) and print something; ``--json`` output must parse.  Any other command
  in an unmarked shell block is an error: mark the block instead;
- ``sql``: executed by DuckDB over ``lake/idx``.

An HTML comment on the line right before a fence marks the block: ``<!-- no-run: why -->``
(never run; counted), ``<!-- spark -->`` (run only by the Spark test of the page),
``<!-- exit: N -->`` (the documented exit status of its commands).  Any other fence
(``text``, no language) must be marked ``no-run``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmqarrow.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = {"python", "console", "sh", "sql"}
_FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)(.*)$")
_MARK = re.compile(r"^<!--\s*(no-run|spark|exit)\s*(?::\s*(.*?))?\s*-->$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    no_run: str | None = None  # the reason, when marked
    spark: bool = False
    exit_status: int = 0

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def command_names() -> set[str]:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("rmqarrow's parser has no subcommands")


def parse_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    page = str(path.relative_to(ROOT))
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, rest = m.group(1), m.group(2).lower(), m.group(3).split()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        marks: dict[str, Any] = {}
        if "no-run" in rest:
            marks["no_run"] = "marked in the fence"
        mark = _MARK.match(lines[start - 1].strip()) if start else None
        if mark:
            kind, value = mark.group(1), mark.group(2) or ""
            if kind == "no-run":
                marks["no_run"] = value or "marked"
            elif kind == "spark":
                marks["spark"] = True
            else:
                marks["exit_status"] = int(value)
        blocks.append(Block(page, start + 1, lang, "\n".join(body) + "\n", **marks))
    return blocks


BLOCKS = {str(p.relative_to(ROOT)): parse_blocks(p) for p in PAGES}


def shell_commands(block: Block) -> list[list[str]]:
    """The ``rmqarrow`` commands of a shell block, as argv lists without the program."""
    joined: list[str] = []
    for raw in block.code.splitlines():
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + raw.strip()
        else:
            joined.append(raw.strip())
    commands = []
    for line in joined:
        text = line[2:] if line.startswith("$ ") else line
        if not text or text.startswith("#"):
            continue
        argv = shlex.split(text, comments=True)
        if argv[0] != "rmqarrow":
            raise AssertionError(
                f"{block.where}: `{text}` is not an rmqarrow command; mark "
                "the block <!-- no-run: why --> or move the line out"
            )
        commands.append(argv[1:])
    return commands


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rmqarrow.demo import make_docs_workspace

    root = tmp_path_factory.mktemp("doc-workspace")
    make_docs_workspace(root)
    return root


def _run_block(block: Block, namespace: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    if block.lang == "python":
        exec(compile(block.code, block.where, "exec"), namespace)
    elif block.lang == "sql":
        from rmqarrow.converters.duckdb.sql import connect

        con = connect("lake/idx")
        for statement in filter(str.strip, block.code.split(";")):
            if any(not ln.strip().startswith("--") for ln in statement.strip().splitlines()):
                con.execute(statement).fetchall()
    else:
        for argv in shell_commands(block):
            capsys.readouterr()
            status = main(argv)
            out, err = capsys.readouterr()
            shown = f"{block.where}: rmqarrow {shlex.join(argv)}"
            assert status == block.exit_status, f"{shown}: exit {status}\n{err}"
            assert out.strip() or err.strip(), f"{shown}: printed nothing"
            if "--json" in argv and status == 0:
                json.loads(out)


def _run_page(
    page: str,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *,
    spark: bool,
) -> int:
    blocks = [b for b in BLOCKS[page] if b.lang in RUNNABLE and b.no_run is None]
    if spark and not any(b.spark for b in blocks):
        pytest.skip(f"{page} has no Spark examples")
    monkeypatch.chdir(workspace)
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    ran = 0
    for block in blocks:
        if block.spark and not spark:
            continue
        try:
            _run_block(block, namespace, capsys)
        except AssertionError:
            raise
        except Exception as exc:
            raise AssertionError(
                f"{block.where}: the {block.lang} example failed: {type(exc).__name__}: {exc}"
            ) from exc
        ran += 1
    return ran


def _copy(pristine: Path, tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    shutil.copytree(pristine, workspace, symlinks=True)
    return workspace


@pytest.mark.parametrize("page", list(BLOCKS))
def test_page_examples_run(
    page: str,
    pristine: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _run_page(page, _copy(pristine, tmp_path), monkeypatch, capsys, spark=False)


@pytest.mark.spark
@pytest.mark.parametrize("page", [p for p, bs in BLOCKS.items() if any(b.spark for b in bs)])
def test_page_spark_examples_run(
    page: str,
    pristine: Path,
    tmp_path: Path,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The suite's one session is active first, so the examples' get_spark() returns it.
    _run_page(page, _copy(pristine, tmp_path), monkeypatch, capsys, spark=True)


def test_every_block_is_runnable_or_marked() -> None:
    unmarked = [
        b.where for bs in BLOCKS.values() for b in bs if b.lang not in RUNNABLE and b.no_run is None
    ]
    assert not unmarked, f"blocks neither runnable nor marked <!-- no-run: why -->: {unmarked}"
    for bs in BLOCKS.values():
        for b in bs:
            if b.lang in ("console", "sh") and b.no_run is None:
                shell_commands(b)  # raises on a line that is not an rmqarrow command


def test_examples_are_counted() -> None:
    every = [b for bs in BLOCKS.values() for b in bs]
    run = [b for b in every if b.lang in RUNNABLE and b.no_run is None]
    python = [b for b in run if b.lang == "python"]
    commands = sum(len(shell_commands(b)) for b in run if b.lang in ("console", "sh"))
    # Most examples run: a page that turned into unrunnable prose fails here.
    assert len(python) >= 15 and commands >= 40, (len(python), commands)
    assert len(run) > len(every) - len(run), "more examples marked no-run than run"
    readme = BLOCKS["README.md"]
    assert any(
        b.lang == "python" and b.no_run is None and "rmqarrow.open" in b.code for b in readme
    ), "the README's Python tour is not run"


def test_readme_is_short_and_keeps_its_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "make demo    # installs into .venv" in text
    assert "make test    # installs into .venv" in text


def test_commands_shown_exist() -> None:
    choices = command_names()
    shown = {
        argv[0]
        for bs in BLOCKS.values()
        for b in bs
        if b.lang in ("console", "sh") and b.no_run is None
        for argv in shell_commands(b)
    }
    assert shown and shown <= choices, shown - choices


def test_cli_reference_renders_every_command() -> None:
    spec = importlib.util.spec_from_file_location(
        "cli_reference_hook", ROOT / "docs" / "_hooks" / "cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.on_page_markdown("# CLI\n\n<!-- cli-reference -->\n", None, None, None)
    for name in command_names():
        assert f"## rmqarrow {name}\n" in page
        assert f"usage: rmqarrow {name}" in page
    assert "<!-- cli-reference -->" not in page
