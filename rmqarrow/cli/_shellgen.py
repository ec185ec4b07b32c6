"""Shell completion scripts (bash, zsh, fish) and the man page, generated from the parser.

One walk of the argparse parser (:func:`walk`) gives every command's options, the choices
of those that have them and which arguments name a file or folder; each renderer turns it
into one shell's script or into roff.  Nothing here is written by hand per command, so a
new option completes and is documented the moment it is added.

No library covers the three shells from argparse: ``shtab`` writes bash and zsh but not
fish, and ``argcomplete`` runs Python (importing the whole CLI) on every Tab press through
a hook; the scripts here are static, so completion costs nothing at the prompt.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from rmqarrow.cli._output import dataset_arg, location_arg, path_arg

__all__ = ["SHELLS", "completion_script", "man_page", "walk"]

PROG = "rmqarrow"
#: the argparse types of arguments that name a local file or folder (a dataset may also
#: be a URI: its local path completes all the same)
_PATH_TYPES = (path_arg, location_arg, dataset_arg)


@dataclass(frozen=True)
class Argument:
    """One option (``names`` its option strings) or positional (``names`` empty)."""

    names: tuple[str, ...]
    dest: str
    help: str
    metavar: str
    #: how many values follow an option: 0 a flag, None "maybe one" (nargs="?"), which
    #: completes as a flag: what follows is as likely the next option
    nvalues: int | None
    choices: tuple[str, ...]
    path: bool
    repeat: bool


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    description: str
    options: tuple[Argument, ...]
    positionals: tuple[Argument, ...]
    commands: tuple[Command, ...]


def _nvalues(action: argparse.Action) -> int | None:
    if action.nargs == 0:
        return 0
    if action.nargs is None:
        return 1
    if isinstance(action.nargs, int):
        return action.nargs
    return None


def _argument(action: argparse.Action, formatter: argparse.HelpFormatter) -> Argument:
    metavar = action.metavar if action.metavar is not None else action.dest.upper()
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.help is argparse.SUPPRESS:
        helptext = ""
    else:
        helptext = " ".join(formatter._expand_help(action).split()) if action.help else ""
    return Argument(
        names=tuple(action.option_strings),
        dest=action.dest,
        help=helptext,
        metavar=metavar if action.option_strings else action.dest,
        nvalues=_nvalues(action),
        choices=tuple(str(c) for c in action.choices) if action.choices else (),
        path=action.type in _PATH_TYPES,
        repeat=isinstance(action, argparse._AppendAction),
    )


def walk(parser: argparse.ArgumentParser, name: str = PROG, helptext: str = "") -> Command:
    """The command tree ``parser`` parses: options, positionals and subcommands."""
    formatter = parser._get_formatter()
    options, positionals, commands = [], [], []
    for action in parser._actions:
        if action.help is argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for sub_name, sub in action.choices.items():
                if sub_name in helps:  # aliases complete but are not listed twice
                    commands.append(walk(sub, sub_name, helps[sub_name]))
        elif action.option_strings:
            options.append(_argument(action, formatter))
        else:
            positionals.append(_argument(action, formatter))
    for command in commands:
        if command.commands:
            # the scripts below know one level of commands: a deeper tree must not
            # complete silently wrong
            raise NotImplementedError(f"{name} {command.name}: nested commands")
    return Command(
        name=name,
        help=helptext,
        description=" ".join((parser.description or "").split()),
        options=tuple(options),
        positionals=tuple(positionals),
        commands=tuple(commands),
    )


# -- bash ----------------------------------------------------------------------------------


def _bash(root: Command) -> str:
    def words(items: list[str]) -> str:
        return " ".join(items)

    def key(command: Command | None, word: str) -> str:
        return f'"{command.name if command else ""}|{word}"'

    nodes: list[Command | None] = [None, *root.commands]

    def of(node: Command | None) -> Command:
        return root if node is None else node

    skip_cases, value_cases, option_cases, word_cases = [], [], [], []
    for node in nodes:
        command = of(node)
        name = "" if node is None else command.name
        for option in command.options:
            for opt in option.names:
                if option.nvalues:
                    skip_cases.append(f"            {key(node, opt)}) skip={option.nvalues} ;;")
                if not option.nvalues:  # a flag, or a value that may be left out
                    continue
                if option.choices:
                    action = f'COMPREPLY=($(compgen -W "{words(list(option.choices))}" -- "$cur"))'
                elif option.path:
                    action = "_rmqarrow_files"
                else:
                    action = "COMPREPLY=()"
                value_cases.append(f"        {key(node, opt)}) {action}; return ;;")
        flags = [o for option in command.options for o in option.names]
        option_cases.append(f'        "{name}") opts="{words(flags)}" ;;')
        if command.commands:
            names = [c.name for c in command.commands]
            word_cases.append(
                f'        "{name}") COMPREPLY=($(compgen -W "{words(names)}" -- "$cur")) ;;'
            )
        elif command.positionals and command.positionals[0].choices:
            choices = words(list(command.positionals[0].choices))
            word_cases.append(
                f'        "{name}") COMPREPLY=($(compgen -W "{choices}" -- "$cur")) ;;'
            )
        elif any(p.path for p in command.positionals):
            word_cases.append(f'        "{name}") _rmqarrow_files ;;')
    command_cases = "|".join(f'"|{c.name}"' for c in root.commands)
    nl = "\n"
    return f"""# bash completion for {PROG}: generated from its parser by `{PROG} completion bash`
_rmqarrow_files() {{
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
}}

_rmqarrow() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="" node="" word opts="" skip=0 i
    ((COMP_CWORD > 0)) && prev="${{COMP_WORDS[COMP_CWORD - 1]}}"
    # --option=value: bash splits the line at "=" into --option, = and value
    if [[ "$cur" == "=" ]]; then
        cur=""
    elif [[ "$prev" == "=" ]] && ((COMP_CWORD > 1)); then
        prev="${{COMP_WORDS[COMP_CWORD - 2]}}"
    fi
    # the command on the line, skipping the values of options
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        if ((skip > 0)); then
            skip=$((skip - 1))
            continue
        fi
        case "$node|$word" in
            {command_cases}) node="$word" ;;
{nl.join(skip_cases)}
        esac
    done
    # the value of an option
    case "$node|$prev" in
{nl.join(value_cases)}
    esac
    case "$node" in
{nl.join(option_cases)}
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    case "$node" in
{nl.join(word_cases)}
    esac
}}
complete -F _rmqarrow {PROG}
"""


# -- zsh -----------------------------------------------------------------------------------


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _zsh_help(text: str) -> str:
    return re.sub(r"([\[\]:\\])", r"\\\1", text)


def _zsh_specs(command: Command) -> list[str]:
    specs = []
    for option in command.options:
        names = option.names
        exclusive = f"({' '.join(names)})" if len(names) > 1 and not option.repeat else ""
        star = "*" if option.repeat else ""
        action = _zsh_action(option)
        values = ""
        if option.nvalues:
            metavars = option.metavar.split() or [option.metavar]
            if len(metavars) != option.nvalues:
                metavars = [option.metavar] * option.nvalues
            values = "".join(f":{_zsh_help(m)}:{action}" for m in metavars)
        for opt in names:
            spec = f"{exclusive}{star}{opt}[{_zsh_help(option.help)}]{values}"
            specs.append(_zsh_quote(spec))
    for i, positional in enumerate(command.positionals, start=1):
        optional = ":" if positional.nvalues is None else ""
        # a word nothing completes: _nothing, as the message " " shows would keep an
        # option typed in its place from completing
        action = _zsh_action(positional).strip() or "_nothing"
        spec = f"{i}:{optional}{_zsh_help(positional.metavar)}:{action}"
        specs.append(_zsh_quote(spec))
    return specs


def _zsh_action(argument: Argument) -> str:
    if argument.choices:
        return "(" + " ".join(argument.choices) + ")"
    return "_files" if argument.path else " "


def _zsh(root: Command) -> str:
    indent = " \\\n        "
    top = indent.join(
        [
            *_zsh_specs(root),
            _zsh_quote("1:command:->command"),
            _zsh_quote("*::argument:->argument"),
        ]
    )
    described = "\n        ".join(
        _zsh_quote(f"{c.name}:{c.help.replace(':', chr(92) + ':')}") for c in root.commands
    )
    cases = []
    for command in root.commands:
        specs = indent.join(_zsh_specs(command))
        cases.append(f"        {command.name})\n            _arguments -s{indent}{specs} ;;")
    nl = "\n"
    return f"""#compdef {PROG}
# zsh completion for {PROG}: generated from its parser by `{PROG} completion zsh`
_rmqarrow() {{
    local curcontext="$curcontext" state line
    local -a commands
    _arguments -C{indent}{top}
    case $state in
    command)
        commands=(
        {described}
        )
        _describe -t commands '{PROG} command' commands ;;
    argument)
        curcontext="${{curcontext%:*:*}}:{PROG}-$line[1]:"
        case $line[1] in
{nl.join(cases)}
        esac ;;
    esac
}}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _rmqarrow "$@"
else
    compdef _rmqarrow {PROG}
fi
"""


# -- fish ----------------------------------------------------------------------------------


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_lines(command: Command, condition: str) -> list[str]:
    head = f"complete -c {PROG} -n {_fish_quote(condition)}"
    lines = []
    for option in command.options:
        flags = []
        for opt in option.names:
            flags.append(f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}")
        if not option.nvalues:  # a flag, or a value that may be left out
            kind = ""
        elif option.choices:
            kind = f" -x -a {_fish_quote(' '.join(option.choices))}"
        elif option.path:
            kind = " -r -F"
        else:
            kind = " -x"
        desc = f" -d {_fish_quote(option.help)}" if option.help else ""
        lines.append(f"{head} {' '.join(flags)}{kind}{desc}")
    for positional in command.positionals:
        if positional.choices:
            lines.append(f"{head} -a {_fish_quote(' '.join(positional.choices))}")
        elif positional.path:
            lines.append(f"{head} -F")
    return lines


def _fish(root: Command) -> str:
    lines = [
        f"# fish completion for {PROG}: generated from its parser by `{PROG} completion fish`",
        f"complete -c {PROG} -f",
        *_fish_lines(root, "__fish_use_subcommand"),
    ]
    for command in root.commands:
        desc = f" -d {_fish_quote(command.help)}" if command.help else ""
        lines.append(f"complete -c {PROG} -n __fish_use_subcommand -a {command.name}{desc}")
    for command in root.commands:
        lines += _fish_lines(command, f"__fish_seen_subcommand_from {command.name}")
    return "\n".join(lines) + "\n"


SHELLS = {"bash": _bash, "zsh": _zsh, "fish": _fish}


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``shell`` (one of :data:`SHELLS`) for ``parser``."""
    return SHELLS[shell](walk(parser))


# -- man page ------------------------------------------------------------------------------


def _roff(text: str) -> str:
    """``text`` as roff running text: backslashes and hyphens escaped, and no line that
    starts with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.split("\n"))


def _man_argument(argument: Argument) -> list[str]:
    if argument.names:
        label = ", ".join(f"\\fB{_roff(n)}\\fR" for n in argument.names)
        if argument.nvalues != 0:
            value = f"\\fI{_roff(argument.metavar)}\\fR"
            label += f" [{value}]" if argument.nvalues is None else f" {value}"
    else:
        label = f"\\fI{_roff(argument.metavar)}\\fR"
    text = argument.help
    if argument.choices and "{" not in text:
        text += f" (one of: {', '.join(argument.choices)})"
    return [".TP", label, _roff(text)]


def _synopsis(command: Command) -> str:
    """``rmqarrow info [OPTIONS] path``: written here rather than taken from argparse's usage,
    whose wording changes between Python versions."""
    words = [f"\\fB{_roff(PROG)} {_roff(command.name)}\\fR", "[\\fIOPTIONS\\fR]"]
    for positional in command.positionals:
        name = f"\\fI{_roff(positional.metavar)}\\fR"
        words.append(f"[{name}]" if positional.nvalues is None else name)
    return " ".join(words)


def man_page(parser: argparse.ArgumentParser) -> str:
    """The man page (roff, section 1) of ``parser``: every command and option, no date or
    version, so a checked-in copy only changes when the command line does."""
    root = walk(parser)
    epilog = " ".join((parser.epilog or "").split())
    lines = [
        f'.TH {PROG.upper()} 1 "" "{PROG}" "User Commands"',
        ".SH NAME",
        f"{PROG} \\- {_roff(root.description)}",
        ".SH SYNOPSIS",
        f".B {PROG}",
        "[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGUMENTS\\fR]",
        ".SH DESCRIPTION",
        _roff(root.description),
    ]
    if epilog:
        lines += [".PP", _roff(epilog)]
    lines += [".SH OPTIONS"]
    for option in root.options:
        lines += _man_argument(option)
    lines += [".SH COMMANDS"]
    for command in root.commands:
        lines += [".SS " + _roff(f"{PROG} {command.name}"), _roff(command.help)]
        lines += [".PP", _synopsis(command)]
        if command.description and command.description != command.help:
            lines += [".PP", _roff(command.description)]
        for argument in (*command.positionals, *command.options):
            if argument.dest != "help":  # said once, under OPTIONS
                lines += _man_argument(argument)
    lines += [
        ".SH EXIT STATUS",
        "0 on success, 1 on a failure (one line on standard error), 2 on a usage error, "
        "130 when interrupted.",
        ".SH SEE ALSO",
        f"\\fB{PROG} COMMAND \\-\\-help\\fR prints the same help for one command; "
        f"\\fB{PROG} completion bash|zsh|fish\\fR prints a shell completion script.",
    ]
    return "\n".join(lines) + "\n"
