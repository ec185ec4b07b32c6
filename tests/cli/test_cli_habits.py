"""The command line as its users' habits expect it: ``--version``, close-match suggestions
for a mistyped command or option, a read-only ``sql``, ``--jsonl``, ``--queries -``, the
prompt's dot commands, ISO times in ``stats``, and notes only when they say something."""

from __future__ import annotations

import pytest
from cli_run import run

import rmqarrow


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "--version")
    assert status == 0
    assert out == f"rmqarrow {rmqarrow.__version__}\n"
    assert err == ""
