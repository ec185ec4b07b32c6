"""``rmqarrow completion`` and ``rmqarrow man``: the command line described for the shell,
generated from its own parser (see :mod:`rmqarrow.cli._shellgen`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rmqarrow.cli import build_parser
from rmqarrow.cli._shellgen import SHELLS, completion_script, man_page

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=(
            "Print the completion script of the given shell for rmqarrow: its commands, "
            "options, the values of options with a fixed set and file names where a path is "
            "expected. "
            "bash: add 'eval \"$(rmqarrow completion bash)\"' to ~/.bashrc; zsh: save it "
            "as _rmqarrow in a folder of $fpath; fish: save it as "
            "~/.config/fish/completions/rmqarrow.fish."
        ),
    )
    p.add_argument("shell", choices=tuple(SHELLS), help="the shell to complete in")
    p.set_defaults(func=cmd_completion)
    p = sub.add_parser(
        "man",
        help="print the man page (roff)",
        description=(
            "Print rmqarrow's man page, every command and option, in roff: read it with "
            "'rmqarrow man | man -l -', or install it with "
            "'rmqarrow man > ~/.local/share/man/man1/rmqarrow.1'."
        ),
    )
    p.set_defaults(func=cmd_man)


def _parser() -> argparse.ArgumentParser:
    return build_parser()


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(_parser(), args.shell))
    return 0


def cmd_man(args: argparse.Namespace) -> int:
    sys.stdout.write(man_page(_parser()))
    return 0
