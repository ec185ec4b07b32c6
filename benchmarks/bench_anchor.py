"""rmqarrow next to RocketMQ's own Java ``IndexFile``, run side by side on one input.

    python benchmarks/bench_anchor.py                       # the anchor's defaults
    python benchmarks/bench_anchor.py --n 19999999 --repeats 3 --json out.json

A driver for the anchor in ``../shared/anchors/java`` (relative to the repository root;
``/work/shared/anchors/java`` or ``$RMQARROW_ANCHOR_DIR`` also work): every option is
passed to its ``side_by_side.py``, which prints the table (build, lookup and hash rates,
wall and per CPU-second, the memmap floor, the load).  RocketMQ's Java is compiled by the
anchor's ``build.sh`` outside this repository; when Java or that build is missing this
says what is missing and how to build it, and exits 0.  ``run.py`` runs no anchor (it
needs a JDK, 7 GB and minutes): its ``run`` returns no rows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = Path("/tmp/rmq-indexfile-anchor")


def anchor_dir() -> Path | None:
    """The anchor folder: ``$RMQARROW_ANCHOR_DIR``, next to the repository, or /work/shared."""
    env = os.environ.get("RMQARROW_ANCHOR_DIR")
    candidates = [Path(env)] if env else []
    candidates += [ROOT.parent / "shared/anchors/java", Path("/work/shared/anchors/java")]
    return next((c for c in candidates if (c / "side_by_side.py").is_file()), None)


def build_dir(argv: list[str]) -> Path:
    """The ``--build-dir`` given to the anchor, else its default."""
    for i, a in enumerate(argv):
        if a.startswith("--build-dir="):
            return Path(a.split("=", 1)[1])
        if a == "--build-dir" and i + 1 < len(argv):
            return Path(argv[i + 1])
    return BUILD_DIR


def missing(anchor: Path | None, build: Path) -> list[str]:
    """What stops the anchor from running here, each with how to fix it."""
    if anchor is None:
        return ["the anchor folder (side_by_side.py): expected ../shared/anchors/java next "
                "to the repository, /work/shared/anchors/java, or $RMQARROW_ANCHOR_DIR"]
    problems = [f"`{tool}` (JDK 17) on PATH" for tool in ("java", "javac")
                if shutil.which(tool) is None]
    if not (build / "classes").is_dir():
        problems.append(
            f"the compiled anchor in {build}/classes: build it with\n"
            f"      cd {anchor} && ./build.sh ROCKETMQ_GIT_DIR {build}\n"
            "    where ROCKETMQ_GIT_DIR is a git directory of apache/rocketmq "
            "(e.g. a clone of https://github.com/apache/rocketmq)")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help") and anchor_dir() is None:
        print(__doc__)
        return 0
    anchor = anchor_dir()
    problems = missing(anchor, build_dir(args))
    if problems:
        print("bench_anchor: not run; missing:", *(f"  - {p}" for p in problems), sep="\n")
        return 0
    assert anchor is not None
    env = dict(os.environ, RMQARROW_PYTHON=sys.executable)
    cmd = [sys.executable, str(anchor / "side_by_side.py"), *args]
    print("$ " + " ".join(cmd), flush=True)
    with tempfile.TemporaryDirectory(prefix="rmqarrow-anchor-") as shim:
        # The anchor names the module of the pre-layering tree (``rmqarrow.hashing``);
        # a sitecustomize in its process maps that name to ``rmqarrow.kernels.hashing``.
        Path(shim, "sitecustomize.py").write_text(_SHIM)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [shim, str(ROOT), env.get("PYTHONPATH")]))
        return subprocess.run(cmd, cwd=anchor, env=env, check=False).returncode


_SHIM = """\
import importlib
import sys

try:
    importlib.import_module("rmqarrow.hashing")
except ImportError:
    try:
        sys.modules["rmqarrow.hashing"] = importlib.import_module("rmqarrow.kernels.hashing")
    except ImportError:
        pass
"""


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    """For ``run.py``: no rows (run this file or ``make bench-anchor`` for the anchor)."""
    return []


if __name__ == "__main__":
    sys.exit(main())
