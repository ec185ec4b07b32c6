"""Running ``rmqarrow`` in-process for the command-line tests, and its one error line."""

from __future__ import annotations

import pytest

from rmqarrow.cli import main

#: what no output of a command may hold
FORBIDDEN = ("Traceback", "truncated or opened with the wrong geometry")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``rmqarrow ARGS`` in this process: status, stdout, stderr (never a traceback)."""
    status = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return status, out, err


def one_error(err: str, *needles: str) -> str:
    """The single error line of ``err`` (notes may precede it); it holds every needle."""
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1, err
    for forbidden in FORBIDDEN:
        assert forbidden not in err
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]
