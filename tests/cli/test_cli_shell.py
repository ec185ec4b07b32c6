"""``rmqarrow completion`` and ``rmqarrow man``: the scripts run in the real shells (bash,
zsh, fish), and the man page renders in groff and matches the checked-in copy."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cli_run import one_error, run

ROOT = Path(__file__).resolve().parents[2]
MAN_COPY = ROOT / "docs" / "man" / "rmqarrow.1"


def _shell(name: str) -> str:
    path = shutil.which(name)
    assert path, (
        f"{name} not found: `make system-deps` installs it (Debian: apt-get install {name})"
    )
    return path


def _script(capsys: pytest.CaptureFixture[str], shell: str, tmp_path: Path) -> Path:
    status, out, err = run(capsys, "completion", shell)
    assert status == 0 and err == ""
    path = tmp_path / f"rmqarrow.{shell}"
    path.write_text(out)
    return path


# -- bash: the completion function called as bash calls it, COMP_WORDS and COMP_CWORD set --


def _bash_complete(script: Path, line: str, cwd: Path) -> list[str]:
    """What bash's completion function offers for ``line`` (the cursor at its end)."""
    code = (
        'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
        'COMPREPLY=(); _rmqarrow; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    words = line.split(" ")
    done = subprocess.run(
        [_shell("bash"), "--norc", "-c", code, "bash", str(script), *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=True,
    )
    assert done.stderr == ""
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_commands_options_choices_and_paths(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = _script(capsys, "bash", tmp_path)
    (tmp_path / "store").mkdir()
    (tmp_path / "queries.txt").write_text("k\n")
    assert _bash_complete(script, "rmqarrow inf", tmp_path) == ["info"]
    assert _bash_complete(script, "rmqarrow query --ke", tmp_path) == ["--key"]
    assert _bash_complete(script, "rmqarrow --de", tmp_path) == ["--debug"]
    assert sorted(_bash_complete(script, "rmqarrow query --engine ", tmp_path)) == [
        "duckdb",
        "native",
        "spark",
    ]
    assert _bash_complete(script, "rmqarrow completion f", tmp_path) == ["fish"]
    # --engine=VALUE, split by bash at "=" as COMP_WORDS holds it
    assert _bash_complete(script, "rmqarrow query --engine = sp", tmp_path) == ["spark"]
    assert len(_bash_complete(script, "rmqarrow query --engine =", tmp_path)) == 3
    # a path: the store positional and --queries complete file names
    assert _bash_complete(script, "rmqarrow info st", tmp_path) == ["store"]
    assert _bash_complete(script, "rmqarrow query store --queries qu", tmp_path) == ["queries.txt"]
    # a value that happens to be a command's name is the option's value, not a command
    assert sorted(_bash_complete(script, "rmqarrow query --key info --ex", tmp_path)) == [
        "--exact",
        "--explain",
    ]
    # an option's free value completes nothing (no file names where a key is expected)
    assert _bash_complete(script, "rmqarrow query --key qu", tmp_path) == []
    # a value that may be left out (--wait [SECONDS]) leaves the next option completing
    assert _bash_complete(script, "rmqarrow build --wait --fo", tmp_path) == ["--force"]


# -- fish: its own `complete -C`, the script sourced ------------------------------------------


def _fish_complete(script: Path, line: str, cwd: Path) -> list[str]:
    code = 'source $argv[1]; complete -C "$argv[2]"'
    done = subprocess.run(
        [_shell("fish"), "--no-config", "-c", code, str(script), line],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=True,
    )
    assert done.stderr == ""
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


def test_fish_completes_commands_options_choices_and_paths(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = _script(capsys, "fish", tmp_path)
    (tmp_path / "store").mkdir()
    assert _fish_complete(script, "rmqarrow inf", tmp_path) == ["info"]
    assert _fish_complete(script, "rmqarrow query --ke", tmp_path) == ["--key"]
    assert sorted(_fish_complete(script, "rmqarrow query --engine ", tmp_path)) == [
        "duckdb",
        "native",
        "spark",
    ]
    assert _fish_complete(script, "rmqarrow info st", tmp_path) == ["store/"]
    # file names only where a path is expected
    assert _fish_complete(script, "rmqarrow query --key st", tmp_path) == []
    assert _fish_complete(script, "rmqarrow build --wait --fo", tmp_path) == ["--force"]


# -- zsh: an interactive zsh on a terminal, Tab pressed ---------------------------------------


def _zsh_complete(folder: Path, line: str, expected: str, cwd: Path | None = None) -> str:
    """The line an interactive zsh shows after ``line`` and Tab, with the script on its
    $fpath; read until ``expected`` shows (or zsh stops answering)."""
    fd, terminal = pty.openpty()
    shell = subprocess.Popen(
        [_shell("zsh"), "-f", "-i"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=cwd or folder,
        env={"PATH": os.environ["PATH"], "TERM": "dumb", "HOME": str(folder)},
        start_new_session=True,
    )
    os.close(terminal)
    seen = b""

    def read_until(marker: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 60  # a bound on a hung shell, not a timing assertion
        while marker not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if ready:
                try:
                    seen += os.read(fd, 4096)
                except OSError:  # the shell is gone
                    return

    try:
        # the prompt is split in the command so that its echo does not count as the prompt
        os.write(
            fd,
            f"PS1='READY''> '; fpath=({folder} $fpath); autoload -U compinit; "
            f"compinit -u -D; rmqarrow() {{ :; }}\n".encode(),
        )
        read_until(b"READY> ")
        seen = b""
        os.write(fd, line.encode() + b"\t")
        read_until(expected.encode())
        return seen.decode(errors="replace")
    finally:
        os.write(fd, b"\x15exit\n")
        shell.wait(timeout=60)
        os.close(fd)


def test_zsh_completes_commands_options_and_choices(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    script = _script(capsys, "zsh", tmp_path)
    folder = tmp_path / "functions"
    folder.mkdir()
    script.rename(folder / "_rmqarrow")  # where compinit finds it: _NAME on $fpath
    assert subprocess.run([_shell("zsh"), "-n", str(folder / "_rmqarrow")]).returncode == 0
    assert "rmqarrow info " in _zsh_complete(folder, "rmqarrow inf", "rmqarrow info ")
    assert "rmqarrow query --key " in _zsh_complete(
        folder, "rmqarrow query --ke", "rmqarrow query --key "
    )
    shown = _zsh_complete(folder, "rmqarrow query --engine sp", "--engine spark ")
    assert "rmqarrow query --engine spark " in shown
    (tmp_path / "store").mkdir()
    assert "rmqarrow info store/" in _zsh_complete(folder, "rmqarrow info st", "store/", tmp_path)
    # an option where an optional positional (sql's query) or value (--wait) may stand
    assert "sql x --engine " in _zsh_complete(folder, "rmqarrow sql x --eng", "--engine ")
    assert "--wait --force " in _zsh_complete(folder, "rmqarrow build --wait --fo", "--force ")


def test_nested_commands_are_refused_not_completed_wrong() -> None:
    import argparse

    from rmqarrow.cli._shellgen import walk

    parser = argparse.ArgumentParser(prog="rmqarrow")
    group = parser.add_subparsers().add_parser("rocksdb", help="a group")
    group.add_subparsers().add_parser("scan", help="a command of the group")
    with pytest.raises(NotImplementedError, match="rmqarrow rocksdb: nested commands"):
        walk(parser)


def test_completion_names_an_unknown_shell(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "completion", "tcsh")
    assert status == 2
    one_error(err, "invalid choice", "tcsh")


# -- the man page ------------------------------------------------------------------------------


def test_man_page_renders_and_documents_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from rmqarrow.cli import build_parser
    from rmqarrow.cli._shellgen import walk

    status, page, err = run(capsys, "man")
    assert status == 0 and err == ""
    groff = _shell("groff")
    done = subprocess.run(
        [groff, "-man", "-Tutf8", "-ww"],
        input=page,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "MANWIDTH": "80"},
    )
    assert done.stderr == "", done.stderr  # -ww: every groff warning shows
    text = done.stdout.replace("\u2010", "-").replace("\u2212", "-")
    plain = "".join(ch for i, ch in enumerate(text) if ch != "\b" and text[i + 1 : i + 2] != "\b")
    for command in walk(build_parser()).commands:
        assert f"rmqarrow {command.name}" in plain, command.name
        for option in command.options:
            assert option.names[-1] in plain, (command.name, option.names)
    assert "--engine" in plain and "RMQARROW_DEBUG=1" in plain


def test_checked_in_man_page_is_the_generated_one(capsys: pytest.CaptureFixture[str]) -> None:
    status, page, _ = run(capsys, "man")
    assert status == 0
    assert MAN_COPY.read_text() == page, (
        "docs/man/rmqarrow.1 is stale: regenerate it with `rmqarrow man > docs/man/rmqarrow.1`"
    )
