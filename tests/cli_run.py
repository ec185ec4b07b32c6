"""Running ``rmqarrow`` in-process for the command-line tests, and its one error line.

``run`` reads the output through pytest's ``capsys``; ``call`` captures it itself and puts
back what a command changes for the rest of the process, for the tests that set the
environment or the working directory of one call, where a subprocess is not the point.
"""

from __future__ import annotations

import io
import logging
import os
import re
import warnings
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

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
    # an enum member's repr (<Engine.NATIVE: 'native'>) is Python's text, not the user's
    assert not re.search(r"<[A-Z]\w*\.[A-Z_]+: '", err), err
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@dataclass(frozen=True)
class Ran:
    """What one in-process ``rmqarrow`` call left: its exit status and its output."""

    status: int
    out: str
    err: str


def call(*args: str, env: Mapping[str, str | None] | None = None, cwd: Path | None = None) -> Ran:
    """``rmqarrow ARGS`` in this process, as a subprocess would see it from the outside.

    ``env`` sets (or, with None, removes) variables for this call only; ``cwd`` is the
    working directory for this call only.  stdout and stderr are captured on their own
    streams (with a ``buffer`` for binary writers), and everything the command may change
    for the rest of the process is put back afterwards: the environment, the working
    directory, the logging handlers and levels, and the warnings filters.
    """
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    loggers = [logging.getLogger(), *_project_loggers()]
    saved_logging = [(lg, list(lg.handlers), lg.level, lg.propagate) for lg in loggers]
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="", write_through=True)
    try:
        for name, value in (env or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings(), redirect_stdout(out), redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as exc:  # what a subprocess would have exited with
                code = exc.code
                status = 0 if code is None else code if isinstance(code, int) else 1
            out.flush()
            err.flush()
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for lg, handlers, level, propagate in saved_logging:
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate = propagate
    return Ran(status, _text(out), _text(err))


def _project_loggers() -> list[logging.Logger]:
    """Every logger of the package made so far (a command may add handlers to any)."""
    names = [n for n in logging.Logger.manager.loggerDict if n.split(".")[0] == "rmqarrow"]
    return [logging.getLogger(n) for n in ["rmqarrow", *names]]


def _text(stream: io.TextIOWrapper) -> str:
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode("utf-8")
