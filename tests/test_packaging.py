"""The wheel users install: one top-level package, the license shipped, no stray modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_has_one_top_level_package_and_the_license(tmp_path: Path) -> None:
    # a clean copy of the sources: setuptools reuses a checkout's build/lib, which can hold
    # modules the package list no longer (or never did) name
    source = tmp_path / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "build",
            "*.egg-info",
            "__pycache__",
            ".mypy_cache",
            ".ruff_cache",
            ".pytest_cache",
            "tests",
            "benchmarks",
            "docs",
        ),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "deprecat" not in done.stderr.lower(), done.stderr
    (wheel,) = tmp_path.glob("rmqarrow-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert z.read(info).decode().split() == ["rmqarrow"]
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {
        "rmqarrow"
    }
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in metadata
    for module in (
        "rmqarrow/converters/spark/export.py",
        "rmqarrow/converters/schema.py",
        "rmqarrow/kernels/walk.py",
        "rmqarrow/tiered/__init__.py",
        "rmqarrow/py.typed",
    ):
        assert module in names, module
    # every module of the tree ships: a package missing from pyproject's list would not
    for top, prefix in (("rmqarrow", "rmqarrow"), ("converters", "rmqarrow/converters")):
        for path in (ROOT / top).rglob("*.py"):
            shipped = f"{prefix}/{path.relative_to(ROOT / top).as_posix()}"
            assert shipped in names, shipped
