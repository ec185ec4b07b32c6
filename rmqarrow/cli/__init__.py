"""The ``rmqarrow`` command line.

Each command group lives in its own module exposing ``register(subparsers)``; a command
sets ``func`` (taking the parsed args, returning an exit status).  Modules import heavy
engines only inside their command functions, so ``rmqarrow --help`` stays instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rmqarrow.errors import RmqArrowError, UsageError

__all__ = ["main"]

_COMMAND_MODULES = ("_index", "_convert", "_sql", "_verify", "_demo")


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    parser = argparse.ArgumentParser(
        prog="rmqarrow",
        description="RocketMQ IndexFile tools: inspect, query, build, convert, verify.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors print one line.  Exit status: 0 ok, 1 failure, 2 usage."""
    from rmqarrow.cli._output import apply_spark_options, spark_error

    args = build_parser().parse_args(argv)
    try:
        apply_spark_options(args)
        status: int = args.func(args)
    except UsageError as exc:
        print(f"rmqarrow {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except RmqArrowError as exc:
        print(f"rmqarrow {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"rmqarrow {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        translated = spark_error(exc)  # Spark's executor/JVM errors, in one line
        if translated is None:
            raise
        print(f"rmqarrow {args.command}: error: {translated}", file=sys.stderr)
        return 1
    return status
