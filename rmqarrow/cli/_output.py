"""Options shared by the commands; output helpers come from :mod:`rmqarrow._text`."""

from __future__ import annotations

import sys
from typing import Any

from rmqarrow._text import print_json, print_kv, print_table

__all__ = [
    "add_geometry_options",
    "add_spark_options",
    "apply_spark_options",
    "print_json",
    "print_kv",
    "print_notes",
    "print_table",
]


def add_geometry_options(parser: Any) -> None:
    """``--hash-slot-num`` / ``--index-num``, for every command that opens index files."""
    parser.add_argument(
        "--hash-slot-num",
        type=int,
        default=None,
        help="hash slots per file (default 5,000,000, or fitted from the file size at 1:4)",
    )
    parser.add_argument(
        "--index-num",
        type=int,
        default=None,
        help="entry positions per file (default 20,000,000, or fitted from the file size)",
    )


def add_spark_options(parser: Any) -> None:
    """``--conf KEY=VALUE`` (repeatable), ``--py-files`` and ``--no-ship``, next to --master."""
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", dest="spark_conf",
        help="a Spark setting for --engine spark (repeatable), e.g. "
        "--conf spark.executor.memory=2g --conf spark.pyspark.python=/opt/py/bin/python",
    )
    parser.add_argument(
        "--py-files", action="append", default=[], metavar="FILES", dest="spark_py_files",
        help="comma-separated .py/.zip/.egg files added to the executors' Python path",
    )
    parser.add_argument(
        "--no-ship", action="store_true", dest="spark_no_ship",
        help="do not ship rmqarrow to a cluster's executors (it is installed there)",
    )


def apply_spark_options(args: Any) -> None:
    """Hand the parsed Spark options to :func:`rmqarrow.converters.spark.session.configure`."""
    confs = list(getattr(args, "spark_conf", None) or [])
    files = list(getattr(args, "spark_py_files", None) or [])
    no_ship = bool(getattr(args, "spark_no_ship", False))
    if not (confs or files or no_ship):
        return
    from rmqarrow.errors import UsageError

    conf: dict[str, str] = {}
    for item in confs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not key.strip().startswith("spark."):
            raise UsageError(
                f"--conf {item!r}: expected KEY=VALUE with a Spark key, "
                f"e.g. --conf spark.executor.memory=2g"
            )
        conf[key.strip()] = value
    from rmqarrow.converters.spark.session import configure

    configure(conf=conf, py_files=files, ship=False if no_ship else None)


def print_notes(lines: list[str]) -> None:
    """Notes for stderr (what was detected, what was skipped), each said once."""
    for line in dict.fromkeys(lines):
        print(line, file=sys.stderr)
