"""The ``rmqarrow`` command line.

Every failure is one line on stderr and an exit status (0 ok, 1 failure, 2 usage; argparse's
own errors included); ``--debug`` or ``RMQARROW_DEBUG=1`` adds the traceback for bug
reports.  Each command group lives in its own module exposing ``register(subparsers)``; a command
sets ``func`` (taking the parsed args, returning an exit status).  Building the parser
loads no engine, nor numpy or pyarrow (the library's packages name their API lazily, and
the renderers load through :mod:`rmqarrow.cli._show` with a result), so ``rmqarrow --help``
stays quick.
"""

from __future__ import annotations

import _thread
import argparse
import difflib
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any, NoReturn

from rmqarrow import __version__
from rmqarrow._memory import fit_allocators, memory_error
from rmqarrow.cli._output import apply_spark_options, install_log_handler
from rmqarrow.errors import RmqArrowError, UsageError

__all__ = ["main"]

_COMMAND_MODULES = (
    "_info",
    "_query",
    "_build",
    "_check",
    "_convert",
    "_sql",
    "_verify",
    "_demo",
    "_schema",
    "_formats",
    "_shell",
)
_DEBUG_ENV = "RMQARROW_DEBUG"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``--help`` still shows the full usage), and the
    close match of a mistyped command, choice or option (argparse's own ``suggest_on_error``
    needs Python 3.14)."""

    _seen: list[str]

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._seen = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self._seen, namespace)

    def error(self, message: str) -> NoReturn:
        message = self._with_suggestion(message)
        # an option of the command, unknown to it, comes back to this parser: name the command
        command = self._command() if message.startswith("unrecognized argument") else None
        prog = self.prog if command is None else command.prog
        self.exit(2, f"{prog}: error: {message} (see {prog} --help)\n")

    def _with_suggestion(self, message: str) -> str:
        """``message`` with "did you mean ...?" when a mistyped word has a close match: a
        choice (a command, ``--engine``'s values), or an option this command takes, which
        is the likelier cause of any error it comes with (a required option "missing")."""
        choice = _INVALID_CHOICE.match(message)
        if choice is not None:
            value = choice["value"][1:-1]
            match = _close_match(value, self._choices(choice["name"]))
            if match is not None:
                return (
                    f"argument {choice['name']}: invalid choice: {value!r}; did you mean {match!r}?"
                )
            return message
        known = self._option_strings()
        for word in self._unknown_options(known):
            match = _close_match(word, known)
            if match is not None:
                return f"unrecognized argument {word}; did you mean {match!r}?"
        return message

    def _choices(self, name: str) -> list[str]:
        for action in self._actions:
            names = ("/".join(action.option_strings), action.metavar, action.dest)
            if name in names and action.choices:
                return [str(c) for c in action.choices]
        return []

    def _command(self) -> argparse.ArgumentParser | None:
        """The subcommand's parser named on the line, if any."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for word in getattr(self, "_seen", []):
                    if word in action.choices:
                        parser: argparse.ArgumentParser = action.choices[word]
                        return parser
        return None

    def _option_strings(self) -> list[str]:
        parsers: list[argparse.ArgumentParser] = [self]
        command = self._command()
        if command is not None:
            parsers.append(command)
        return [o for p in parsers for a in p._actions for o in a.option_strings]

    def _unknown_options(self, known: list[str]) -> list[str]:
        """Words of the line that look like options none of ``known`` is (nor abbreviates)."""
        unknown = []
        for word in getattr(self, "_seen", []):
            if word == "--":
                break
            name = word.partition("=")[0]
            if not name.startswith("-") or _NUMBER.match(name) or name == "-":
                continue
            if not any(option.startswith(name) for option in known):
                unknown.append(name)
        return unknown


_INVALID_CHOICE = re.compile(
    r"argument (?P<name>.+?): invalid choice: (?P<value>'[^']*'|\"[^\"]*\")"
)
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _close_match(word: str, candidates: list[str]) -> str | None:
    matches = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return matches[0] if matches else None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rmqarrow",
        description="RocketMQ IndexFile tools: inspect, query, build, convert, verify.",
        epilog=f"Errors print one line; --debug (or {_DEBUG_ENV}=1) adds the traceback.",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help=f"print the traceback of a failure (also {_DEBUG_ENV}=1)",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        import_module(f"{__name__}.{name}").register(sub)
    return parser


def _debug_wanted(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get(_DEBUG_ENV, "") not in ("", "0")


def _one_line(exc: BaseException, flags: dict[str, str] | None = None) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if flags:
        text = _as_flags(text, flags)
    return text if len(text) <= 600 else text[:597] + "..."


#: Library parameters a command spells otherwise (``rmqarrow.build(records=...)`` is
#: ``build --from``, Spark's ``configure(py_files=...)`` is ``--py-files``, stats'
#: ``with_check`` is ``--html``: the page is what asks for the check's verdict), or that
#: its messages name only as another command's option (convert's ``overwrite``, the
#: ``commitlog`` of query, info and verify: export's); any other parameter is the option
#: of its own name.
_SPARK = {"py_files": "--py-files"}
_PARAMETER_FLAGS = {
    "build": {"records": "--from", "commitlog": "--from-commitlog", **_SPARK},
    "convert": {"overwrite": "--overwrite"},
    **{c: _SPARK for c in ("demo", "export", "sql")},
    "stats": {"with_check": "--html", **_SPARK},
    **{c: {"commitlog": "--commitlog", **_SPARK} for c in ("query", "verify")},
    "info": {"commitlog": "--commitlog"},
}


def _command_flags(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """The command's options by the library parameter each one passes."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub = subparsers[0].choices.get(command) if subparsers else None
    flags = {
        a.dest: max(a.option_strings, key=len)
        for a in (sub._actions if sub is not None else [])
        if a.option_strings and a.dest != "help"
    }
    return {**flags, **_PARAMETER_FLAGS.get(command, {})}


def _as_flags(text: str, flags: dict[str, str]) -> str:
    """A library message in the command's terms: ``overwrite=True`` reads ``--overwrite``,
    ``hash_slot_num=64`` reads ``--hash-slot-num 64`` (library messages name parameters;
    only the command line knows its options)."""

    def flag(m: re.Match[str]) -> str:
        option = flags.get(m.group(1))
        if option is None:
            return m.group(0)
        rest = m.group(2)
        if rest in ("True", ""):
            return option
        return f"{option} {rest}"

    text = re.sub(r"\b([a-z][a-z_]*)=(True\b|[^\s,;:)]*)", flag, text)
    return _as_commands(text)


#: Store methods whose command is spelled otherwise: a library message names the method
#: (``import_files()``), the command line the command the user types (``rmqarrow import``).
_METHOD_COMMANDS = {"import_files": "import", "convert_to_delta": "convert"}
#: Calls a library message may advise (``check()``), each a command of the same verb.
_CALL_COMMANDS = {**_METHOD_COMMANDS, "check": "check", "export": "export"}


def _as_commands(text: str) -> str:
    """A library message's method names as commands: ``import_files()`` reads
    ``rmqarrow import``, ``import_files is not available`` reads ``import is ...``."""
    calls = "|".join(_CALL_COMMANDS)
    text = re.sub(rf"\b({calls})\(\)", lambda m: f"`rmqarrow {_CALL_COMMANDS[m.group(1)]}`", text)
    # "`rmqarrow export` (or export())" names one command twice once both are commands
    text = re.sub(r"(`rmqarrow \w+`) \(or \1\)", r"\1", text)
    # the library's front door is the command itself on the command line
    text = text.replace("rmqarrow.open takes", "rmqarrow takes")
    names = "|".join(_METHOD_COMMANDS)
    return re.sub(rf"\b({names})\b", lambda m: _METHOD_COMMANDS[m.group(1)], text)


def _unexpected(exc: BaseException) -> str:
    """The one line for an exception rmqarrow did not classify."""
    if isinstance(exc, PermissionError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"permission denied{where}: check the file's owner and mode"
    if isinstance(exc, IsADirectoryError | NotADirectoryError | FileNotFoundError):
        return f"{exc.strerror or exc}: {exc.filename}"
    if isinstance(exc, OSError) and exc.errno is not None:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, MemoryError):
        return "out of memory: try a smaller input or batch size"
    return (
        f"unexpected {type(exc).__name__}: {_one_line(exc)} (this is a bug; rerun with "
        "--debug and report the traceback)"
    )


def _check_geometry_options(args: argparse.Namespace) -> None:
    """``--hash-slot-num`` / ``--index-num`` must be positive: a mistake on the line (status
    2), where the library's refusal of the value would read as a failure (status 1)."""
    for name in ("hash_slot_num", "index_num"):
        value = getattr(args, name, None)
        if value is not None and value <= 0:
            option = "--" + name.replace("_", "-")
            raise UsageError(
                f"{option} must be a positive number, got {value}; leave it out to use the "
                "default or the geometry fitted from the file size"
            )


def _spark_failure(exc: BaseException) -> Exception:
    """Spark's error in one rmqarrow error: an executor's (which path, which executor) or
    the JVM's (its first line and the kept log)."""
    from rmqarrow.converters.spark import is_spark_error, spark_error, translate

    return translate(exc) if is_spark_error(exc) else spark_error(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors print one line.  Exit status: 0 ok, 1 failure, 2 usage,
    130 interrupted (Ctrl-C)."""
    hook = sys.unraisablehook
    sys.unraisablehook = _interrupt_again(hook)
    fit_allocators()  # before pyarrow starts: under ulimit -v its allocator takes 1 GiB
    try:
        return _main(argv)
    except BaseException as exc:
        # Ctrl-C before the command runs (the command modules still importing, the line
        # being parsed) or while an error is reported: the same one line as during a command
        if not interrupted(exc):
            raise
        print("rmqarrow: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.unraisablehook = hook


def _interrupt_again(hook: Callable[[Any], object]) -> Callable[[Any], None]:
    """An unraisable-exception hook: a Ctrl-C that landed where Python cannot raise it (a
    callback from C, such as numba's compiler cache) is delivered to the main thread again
    instead of printed as "Exception ignored" with a traceback and lost; anything else
    goes to ``hook``."""

    def handle(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _thread.interrupt_main()
            return
        hook(unraisable)

    return handle


def engine_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB's answer to a Ctrl-C: it catches the signal while a
    statement runs, stops it and raises a plain ``RuntimeError("Query interrupted")`` (or
    its ``InterruptException``), so no ``KeyboardInterrupt`` is ever raised."""
    duckdb = type(exc).__module__.lstrip("_").startswith("duckdb")
    if type(exc).__name__ == "InterruptException":
        return duckdb
    # a Ctrl-C landing in a Python call DuckDB makes (reading a registered table's schema
    # as it binds a view) comes back as DuckDB's error quoting it, e.g. "reading the schema
    # of the object registered as '_rmq_files' failed: KeyboardInterrupt: "
    if duckdb and _QUOTED_INTERRUPT.search(str(exc)):
        return True
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


_QUOTED_INTERRUPT = re.compile(r"failed: KeyboardInterrupt\b|Python exception: KeyboardInterrupt\b")


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C, or an error a Ctrl-C caused: Python wraps one that
    lands inside a class's creation (a dataclass field's ``__set_name__``, while a module
    imports) in a ``RuntimeError`` whose cause it is."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt) or engine_interrupt(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_wanted(argv)
    argv = [a for a in argv if a != "--debug"]  # accepted anywhere on the line
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, argparse's usage errors (status 2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    command = f"rmqarrow {args.command}"
    flags = _command_flags(parser, args.command)
    install_log_handler()
    try:
        _check_geometry_options(args)
        apply_spark_options(args)
        status: int = args.func(args)
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"{command}: error: {_one_line(exc, flags)}", file=sys.stderr)
        return 2
    except RmqArrowError as exc:
        if debug:
            traceback.print_exc()
        print(f"{command}: error: {_one_line(exc, flags)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last resort: never a traceback unless asked for
        if interrupted(exc):
            print(f"{command}: interrupted", file=sys.stderr)
            return 130
        if debug:
            traceback.print_exc()
        limit = memory_error(exc, command)
        if limit is not None:  # memory ran out (ulimit -v, a full machine): say so
            print(f"{command}: error: {_one_line(limit)}", file=sys.stderr)
            return 1
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            print(f"{command}: error: {_one_line(_spark_failure(exc))}", file=sys.stderr)
            return 1
        print(f"{command}: error: {_unexpected(exc)}", file=sys.stderr)
        return 1
    return status
