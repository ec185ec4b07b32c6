"""The front-door example runs end to end, Spark (``local[2]``) included, and agrees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
@pytest.mark.slow
def test_front_door_example(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "front_door.py"), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every answer equals the native lookup" in done.stdout
    for line in (
        "Spark engine = native",
        "DuckDB engine = native",
        "tiered DuckDB = native",
        "dataset query = native",
        "check: healthy",
    ):
        assert f"ok   {line}" in done.stdout, line
