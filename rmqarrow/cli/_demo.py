"""``rmqarrow demo``: the end-to-end loop on a generated store (see :mod:`rmqarrow.demo.run`)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import rmqarrow.demo
from rmqarrow.cli._output import add_spark_options, path_arg, print_document
from rmqarrow.engines import parse_engines
from rmqarrow.errors import EngineUnavailableError, InvalidValueError, UsageError

__all__ = ["register", "spark_unavailable"]

DEFAULT_ENGINES = "native,duckdb,spark"
#: the demo's own options, refused beside --docs-workspace when changed
DEFAULTS: dict[str, object] = {
    "size": "medium",
    "engines": DEFAULT_ENGINES,
    "seed": 42,
    "master": None,
}


def spark_unavailable() -> str | None:
    """Why Spark cannot run here (pyspark or Java missing), or None when it can."""
    try:
        from rmqarrow.converters.spark import check_java, check_pyspark

        check_pyspark()
        check_java()
    except EngineUnavailableError as exc:
        return str(exc)
    return None


def register(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="generate a broker store, index it, export it, query it in DuckDB and Spark, verify",
        description=(
            "Generate a realistic message stream as a CommitLog, build the native index, "
            "export it to Parquet, answer example questions in DuckDB and Spark SQL, and "
            "verify every engine against the native lookup. About a minute at the default size."
        ),
    )
    p.add_argument(
        "--size",
        default=DEFAULTS["size"],
        help="small (3,000 messages), medium (30,000; default) or a message count",
    )
    p.add_argument(
        "--engines",
        default=DEFAULT_ENGINES,
        help=f"comma-separated engines (default {DEFAULT_ENGINES}; Spark is left "
        "out with a note when pyspark or Java is missing, unless named)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=path_arg,
        help="new or empty directory for everything the demo writes "
        "(default: a new temporary directory, kept)",
    )
    where.add_argument(
        "--docs-workspace",
        type=path_arg,
        metavar="DIR",
        help="instead of the demo, write the documentation's example workspace (store/, "
        "lake/idx, keys.txt, ...) into DIR, a new or empty directory; run the docs' "
        "examples from inside it",
    )
    p.add_argument("--master", help="Spark master URL (default local[*])")
    add_spark_options(p)
    p.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="stream seed (default 42)")
    p.add_argument("--json", action="store_true", help="print only a JSON summary")
    p.set_defaults(func=cmd_demo)


def cmd_docs_workspace(args: argparse.Namespace) -> int:
    changed = [
        f"--{name}"
        for name in ("size", "engines", "seed", "master")
        if getattr(args, name) != DEFAULTS[name]
    ]
    if changed:
        raise UsageError(
            f"{', '.join(changed)}: for the demo only (the docs workspace is always the "
            "same); leave out --docs-workspace to run the demo"
        )
    paths = rmqarrow.demo.make_docs_workspace(args.docs_workspace)
    if args.json:
        print_document("demo.docs-workspace", {name: str(path) for name, path in paths.items()})
        return 0
    print(f"the documentation's example workspace, in {args.docs_workspace}:")
    width = max(map(len, rmqarrow.demo.DOCS_WORKSPACE))
    for name, what in rmqarrow.demo.DOCS_WORKSPACE.items():
        print(f"  {name.ljust(width)}  {what}")
    print(f"next: cd {args.docs_workspace} && rmqarrow info store")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    if args.docs_workspace is not None:
        return cmd_docs_workspace(args)

    engines = parse_engines(args.engines)
    if "native" not in engines:
        engines.insert(0, "native")
    if "spark" in engines and args.engines == DEFAULT_ENGINES:
        reason = spark_unavailable()
        if reason is not None:
            print(f"note: leaving Spark out: {reason}", file=sys.stderr)
            engines.remove("spark")

    try:  # a bad --size is refused before a directory is made, as a mistake on the line
        rmqarrow.demo.message_count(args.size)
    except InvalidValueError as exc:
        raise UsageError(str(exc)) from None
    out = args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="rmqarrow-demo-"))

    def quiet(_line: str) -> None:
        return None

    try:
        result = rmqarrow.demo.run_demo(
            out,
            size=args.size,
            engines=engines,
            master=args.master,
            seed=args.seed,
            echo=quiet if args.json else print,
        )
    except BaseException:
        if args.out is None:  # the temporary directory made above: remove it too
            shutil.rmtree(out, ignore_errors=True)
        raise
    if args.json:
        print_document("demo", result.to_dict())
    return 0 if result.ok else 1
