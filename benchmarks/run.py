"""Run every benchmark (``benchmarks/bench_*.py``), print one table, write JSON.

    python benchmarks/run.py            # quick sizes, a few minutes at most
    python benchmarks/run.py --full     # RocketMQ's default geometry (20 M entries)
    python benchmarks/run.py --only bulk,export

Each module exposes ``run(full, workdir) -> list[dict]``; every row carries its ratio to
the baseline measured in the same run (``vs_baseline``).  Results go to
``benchmarks/results/<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="RocketMQ's default geometry")
    parser.add_argument("--only", help="comma-separated areas (bulk, export, duckdb, ...)")
    parser.add_argument("--workdir", type=Path, help="where to put generated data")
    parser.add_argument("--out", type=Path, help="JSON results file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    areas = sorted(HERE.glob("bench_*.py"))
    if args.only:
        wanted = {a.strip() for a in args.only.split(",")}
        areas = [p for p in areas if p.stem.removeprefix("bench_") in wanted]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for path in areas:
            area = path.stem.removeprefix("bench_")
            print(f"== {area}", file=sys.stderr, flush=True)
            started = time.monotonic()
            workdir = Path(tmp) / area
            workdir.mkdir()
            rows.extend(load(path).run(args.full, workdir))
            print(f"   {time.monotonic() - started:.1f} s", file=sys.stderr)
    from _report import print_rows

    print_rows(rows)
    out = args.out or HERE / "results" / f"{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "full": args.full,
                "machine": {
                    "python": platform.python_version(),
                    "cpus": __import__("os").cpu_count(),
                },
                "rows": rows,
            },
            indent=2,
            default=str,
        )
    )
    print(f"\nresults: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
