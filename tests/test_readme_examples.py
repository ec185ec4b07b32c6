"""The README's examples cannot rot: every Python block compiles, every import in it
resolves to a real name, and every ``python -m`` module and ``rmqarrow`` command it shows
exists."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from rmqarrow.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
SHELL = "\n".join(
    re.findall(r"```(?:sh|console)\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_python_block_imports_resolve(block: str) -> None:
    tree = ast.parse(block)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    for node in imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
            continue
        assert node.module is not None and not node.level
        module = importlib.import_module(node.module)
        for alias in node.names:
            assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"


def test_python_m_modules_exist() -> None:
    modules = set(re.findall(r"python -m ([\w.]+)", SHELL))
    assert "rmqarrow.converters.spark.export" in modules
    for name in modules:
        assert importlib.util.find_spec(name) is not None, name


def test_cli_commands_shown_exist() -> None:
    shown = set(re.findall(r"^\$? *rmqarrow (\w+)", SHELL, re.M))
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert shown and shown <= set(choices), shown - set(choices)
