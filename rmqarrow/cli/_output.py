"""Options shared by the commands, and how the command line shows what the library reports.

The library reports notes and warnings through the ``rmqarrow`` loggers and progress through
callbacks; :func:`install_log_handler` prints each record as one line on stderr (``note:``
or ``warning:``, each said once) and :func:`progress_bar` draws a tqdm bar on a terminal.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

import rmqarrow
from rmqarrow._paths import dataset_location, local_path
from rmqarrow._progress import ProgressCallback, ProgressUpdate
from rmqarrow._text import json_line, print_json, print_kv, print_table
from rmqarrow.cli._schemas import document
from rmqarrow.errors import UsageError
from rmqarrow.format.times import format_time

if TYPE_CHECKING:
    from rmqarrow import GeometryHint

__all__ = [
    "add_force_option",
    "add_geometry_options",
    "add_json_options",
    "add_spark_options",
    "add_wait_option",
    "apply_spark_options",
    "check_spark_options",
    "delta_layout",
    "geometry_option",
    "human_times",
    "install_log_handler",
    "location_arg",
    "name_list",
    "path_arg",
    "print_document",
    "print_json",
    "print_kv",
    "print_table",
    "print_versions",
    "progress_bar",
]


class _OneLine(logging.Handler):
    """Each record once, as ``note: ...`` (info) or ``warning: ...`` on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self._said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record must not kill the command
            text = str(record.msg)
        prefix = "note" if record.levelno < logging.WARNING else "warning"
        line = f"{prefix}: {text}"
        if line in self._said:
            return
        self._said.add(line)
        print(line, file=sys.stderr)


def name_list(names: list[str], shown: int = 6) -> str:
    """Names for a human table: all of a few; of many, the first and last ones and how
    many there are (``--json`` lists every one)."""
    if len(names) <= shown:
        return " ".join(names)
    head, tail = names[: shown - 2], names[-2:]
    return f"{' '.join(head)} ... {' '.join(tail)} ({len(names)} in all; --json lists each)"


def install_log_handler() -> logging.Handler:
    """Print the library's notes and warnings (logger ``rmqarrow``) for this command."""
    logger = logging.getLogger("rmqarrow")
    for h in list(logger.handlers):
        if isinstance(h, _OneLine):
            logger.removeHandler(h)
    handler = _OneLine()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    # Only the command's own lines: a library logging through the root logger (py4j's
    # logging.exception() when a Ctrl-C lands in a call to the JVM) would otherwise have
    # logging configure itself and print a traceback.
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    return handler


def progress_bar() -> ProgressCallback | None:
    """A callback drawing each job's progress as a tqdm bar on stderr, when stderr is a
    terminal (None otherwise, so piped output stays clean)."""
    if not sys.stderr.isatty():
        return None

    bars: dict[str, Any] = {}

    def draw(update: ProgressUpdate) -> None:
        bar = bars.get(update.label)
        if bar is None:
            bar = bars[update.label] = tqdm(
                total=update.total,
                desc=update.label,
                unit=f" {update.unit}".rstrip() or "it",
                unit_scale=True,
                file=sys.stderr,
                leave=True,
                dynamic_ncols=True,
            )
        bar.update(update.done - bar.n)
        if update.finished:
            bar.close()
            del bars[update.label]

    return draw


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


def geometry_option(args: argparse.Namespace) -> GeometryHint:
    """What ``--hash-slot-num`` / ``--index-num`` say, as the one hint the library takes."""
    return rmqarrow.GeometryHint(
        getattr(args, "hash_slot_num", None), getattr(args, "index_num", None)
    )


def seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(text)
    return value


def add_wait_option(parser: Any) -> None:
    """``--wait [SECONDS]``: wait for another writer of the same output instead of stopping."""
    parser.add_argument(
        "--wait",
        nargs="?",
        const=True,
        default=False,
        type=seconds,
        metavar="SECONDS",
        help="when another process is writing the same store or dataset, wait for it (as "
        "long as it takes, or at most SECONDS) instead of stopping with its name",
    )


def location_arg(value: str) -> str:
    """An argparse type for a store or dataset location, as text: ``s3://...`` and other
    URIs are refused before argparse's ``Path`` would turn ``//`` into a local folder
    ``s3:``, and a ``file://`` URI is its path, so no command below sees a URI."""
    return str(path_arg(value))


def dataset_arg(value: str) -> str:
    """An argparse type for where a Parquet dataset is written or read: a local path (as
    :func:`location_arg`) or a URI of object storage (``s3://BUCKET/PREFIX``); any other
    ``scheme://`` is refused in one line."""
    try:
        return str(dataset_location(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def path_arg(value: str) -> Path:
    """:func:`location_arg` as a :class:`~pathlib.Path` (``file://`` URIs become paths)."""
    try:
        return local_path(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_force_option(parser: Any) -> None:
    """``--force``: write a store whose broker state cannot be told (``force=True``)."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="write a store whose STORE/abort is present without a STORE/lock file (whether "
        "a broker runs cannot be told): only for a copy you vouch for. A store whose lock a "
        "running broker holds is refused even so: stop the broker or copy the store",
    )


def add_spark_options(parser: Any) -> None:
    """``--conf KEY=VALUE`` (repeatable), ``--py-files`` and ``--no-ship``, next to --master."""
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="spark_conf",
        help="a Spark setting for --engine spark (repeatable), e.g. "
        "--conf spark.executor.memory=2g --conf spark.pyspark.python=/opt/py/bin/python",
    )
    parser.add_argument(
        "--py-files",
        action="append",
        default=[],
        metavar="FILES",
        dest="spark_py_files",
        help="comma-separated .py/.zip/.egg files added to the executors' Python path",
    )
    parser.add_argument(
        "--no-ship",
        action="store_true",
        dest="spark_no_ship",
        help="do not ship rmqarrow to a cluster's executors (it is installed there)",
    )
    parser.add_argument(
        "--spark-ui",
        action="store_true",
        dest="spark_ui",
        help="start Spark's web UI (off by default, so nothing listens on the network; "
        "also RMQARROW_SPARK_UI=1)",
    )


def check_spark_options(args: Any) -> None:
    """The Spark options only with ``--engine spark``: another engine would silently run
    without them, so a mistyped engine would look like a cluster run."""
    given = [
        name
        for name, attr in (
            ("--master", "master"),
            ("--conf", "spark_conf"),
            ("--py-files", "spark_py_files"),
            ("--no-ship", "spark_no_ship"),
            ("--spark-ui", "spark_ui"),
        )
        if getattr(args, attr, None) not in (None, False, [])
    ]
    engine = getattr(args, "engine", None)
    if engine != "spark" and given:
        raise UsageError(
            f"{', '.join(given)} need{'s' if len(given) == 1 else ''} --engine spark "
            f"(got --engine {engine}); add --engine spark or drop "
            f"{'it' if len(given) == 1 else 'them'}"
        )


def apply_spark_options(args: Any) -> None:
    """Hand the parsed Spark options to :func:`rmqarrow.converters.spark.session.configure`,
    once :func:`check_spark_options` accepts them (for a command with an ``--engine``):
    the settings are the process's, so a refused command must not leave them behind."""
    if hasattr(args, "engine"):
        check_spark_options(args)
    confs = list(getattr(args, "spark_conf", None) or [])
    files = list(getattr(args, "spark_py_files", None) or [])
    no_ship = bool(getattr(args, "spark_no_ship", False))
    ui = bool(getattr(args, "spark_ui", False))
    if not (confs or files or no_ship or ui):
        return

    conf: dict[str, str] = {}
    for item in confs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not key.strip().startswith("spark."):
            raise UsageError(
                f"--conf {item!r}: expected KEY=VALUE with a Spark key, "
                f"e.g. --conf spark.executor.memory=2g"
            )
        conf[key.strip()] = value
    from rmqarrow.converters.spark import configure

    configure(conf=conf, py_files=files, ship=False if no_ship else None, ui=True if ui else None)


class _JsonLines(argparse.Action):
    """``--jsonl``: JSON (``args.json`` is set too, so every ``--json`` branch is taken)
    printed one object a line (``args.jsonl``)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        namespace.jsonl = True
        namespace.json = True


def add_json_options(parser: Any, help: str = "print JSON") -> None:
    """``--json`` and ``--jsonl`` (one JSON object a line, for results too big to read as
    one document), mutually exclusive; ``parser`` may be a mutually exclusive group
    already (``sql``'s, with ``--csv``)."""
    group = parser
    if not isinstance(parser, argparse._MutuallyExclusiveGroup):
        group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help=help)
    group.add_argument(
        "--jsonl",
        action=_JsonLines,
        help="print one JSON object a line (JSON Lines): the rows of the --json document (a "
        "row, an answer or a file each; see rmqarrow schema COMMAND --jsonl)",
    )


def print_document(
    shape: str, body: Mapping[str, Any], args: Any = None, rows: str | None = None
) -> None:
    """``body`` as the ``--json`` document of ``shape`` (:mod:`rmqarrow.cli._schemas`): an
    object whose first key, ``"schema"``, names the shape and its version.  With
    ``--jsonl``, the items of its list ``rows`` one a line, each as in the list (no
    ``"schema"``: a line is a row of the document); a document without rows is one line."""
    doc = document(shape, body)
    if not getattr(args, "jsonl", False):
        print_json(doc)
        return
    items = body[rows] if rows is not None else [doc]
    sys.stdout.write("".join(json_line(item) + "\n" for item in items))


def _is_time(name: str) -> bool:
    """A column of epoch milliseconds, as the analyses name them (``first_ms``,
    ``begin_timestamp``, ``store_timestamp``)."""
    return name.endswith(("_ms", "_timestamp"))


def human_times(
    columns: list[str], rows: list[list[Any]], epoch: bool = False
) -> tuple[list[str], list[list[Any]]]:
    """A table's epoch-millisecond columns in ISO 8601 UTC, as ``info`` shows times
    (:func:`~rmqarrow.format.times.format_time`), renamed ``..._time``; unchanged with
    ``epoch`` (``--epoch``).  JSON keeps the numbers."""
    times = [i for i, c in enumerate(columns) if _is_time(c)]
    if epoch or not times:
        return columns, rows
    named = [c.rsplit("_", 1)[0] + "_time" if i in times else c for i, c in enumerate(columns)]
    shown = [
        [format_time(v) if i in times and isinstance(v, int) else v for i, v in enumerate(row)]
        for row in rows
    ]
    return named, shown


def add_as_of_option(parser: Any, what: str = "the dataset") -> None:
    """``--as-of VERSION|TIME``: read an older version of a dataset of Delta tables."""
    parser.add_argument(
        "--as-of",
        metavar="VERSION|TIME",
        default=None,
        help=f"read {what} as it was at this version (a number, as `rmqarrow info DATASET` "
        "lists them) or time (the run current then: ISO 8601, e.g. 2026-01-15T10:20:30Z, "
        "local zone when none given, or epoch ms); a dataset of Delta tables only",
    )


def print_versions(versions: list[dict[str, Any]]) -> None:
    """The versions of a dataset of Delta tables ``--as-of`` takes, as a table (nothing
    for a dataset in the manifest layout, which has none)."""
    if not versions:
        return
    print()
    print_table(
        [
            [v["version"], v["time"], v["app"], v["run"], "yes" if v["readable"] else "vacuumed"]
            for v in versions
        ],
        ["version", "time", "app", "run", "readable"],
    )


def delta_layout(manifest: dict[str, Any]) -> str:
    """The layout of a tiered or RocksDB dataset in one phrase: ``manifest``, or
    ``delta`` with the version pinned and each table's."""
    delta = manifest.get("delta")
    if not isinstance(delta, dict):
        return "manifest"
    tables = ", ".join(f"{t} v{v}" for t, v in sorted(delta["versions"].items()))
    return f"delta (pinned version {delta['version']}: {tables})"
