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


@pytest.mark.parametrize(
    ("argv", "prog", "hint"),
    [
        (["inf", "store"], "rmqarrow", "did you mean 'info'?"),
        (["stast"], "rmqarrow", "did you mean 'stats'?"),
        # --key missing is what argparse sees first; the mistyped option is the cause
        (["query", "--kye", "x"], "rmqarrow query", "did you mean '--key'?"),
        (["query", "store", "--kye=x", "--key", "y"], "rmqarrow query", "did you mean '--key'?"),
        (["query", "store", "--key", "a", "--topik", "T"], "rmqarrow query", "'--topic'?"),
        (["sql", "store", "--engine", "duckd"], "rmqarrow sql", "did you mean 'duckdb'?"),
        (["--verison"], "rmqarrow", "did you mean '--version'?"),
    ],
)
def test_a_mistyped_word_gets_its_close_match(
    capsys: pytest.CaptureFixture[str], argv: list[str], prog: str, hint: str
) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"{prog}: error: ") and hint in err
    assert f"(see {prog} --help)" in err


def test_a_word_without_a_close_match_gets_argparse_s_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "bogus")
    assert status == 2 and err.count("\n") == 1
    assert "invalid choice: 'bogus' (choose from 'info'" in err and "did you mean" not in err
    status, _, err = run(capsys, "query", "store", "--key", "a", "--zzzzzz")
    assert status == 2 and err.count("\n") == 1
    assert "unrecognized arguments: --zzzzzz" in err and "did you mean" not in err
    # an abbreviation argparse accepts and a negative number are not mistyped options
    status, _, err = run(capsys, "query", "--ke", "a", "--max-num", "-5")
    assert "did you mean" not in err
