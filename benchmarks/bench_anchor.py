"""rmqarrow side by side with RocketMQ's own Java ``IndexFile``, on one input, in one run.

    make bench-anchor [RELEASE=X.Y.Z | ROCKETMQ=/path/to/rocketmq] [ARGS="--n 4000000 --repeats 3"]
    python benchmarks/bench_anchor.py [--release X.Y.Z | --rocketmq PATH] [--n N ...] [--repeats R]

By default RocketMQ's ``IndexFile`` is the one in the released
``org.apache.rocketmq:rocketmq-store`` jar (the newest release, or ``--release``), which
Maven fetches from Maven Central with its dependencies into a cache on first use
(``$RMQARROW_ANCHOR_CACHE``, else ``~/.cache/rmqarrow/rocketmq-store``); the harness's Java
driver (``anchor/java/``) is compiled against it into ``build/anchor/``.  With
``--rocketmq``, ``IndexFile`` is compiled unchanged from that source checkout (a clone of
https://github.com/apache/rocketmq) with the harness's stand-ins instead.
For each N, ``--repeats`` runs per side, alternating: a fresh JVM puts the N keys into a
new index file with ``putKey`` and answers the lookups with ``selectPhyOffset``; then
rmqarrow does the same with ``put_keys`` and ``select_phy_offsets_many``.  After each pair
the two files must be byte-identical and every answer equal.  Prints the side-by-side
table (wall and CPU seconds, rates, Java/rmqarrow) and writes a dated JSON record to
``benchmarks/results/anchor-*.json``.  Exits 2 with one line when the JDK, Maven, the
release or the checkout is missing, 1 when a check fails.  See
``benchmarks/anchor/README.md``.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

DEFAULT_JAVA_OPTS = "-Xms6g -Xmx6g -XX:+UseG1GC"
#: The Java side's index file name: a broker names each index file by its creation time,
#: and RocketMQ's DefaultMappedFile reads the name as a number.
JAVA_INDEX_NAME = "20250615000000000"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from anchor._setup import DEFAULT_RELEASE

    p = argparse.ArgumentParser(
        prog="bench_anchor.py",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        # no abbreviations: the record rewrites --rocketmq's path, spelled in full
        allow_abbrev=False,
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--release",
        default=None,
        metavar="X.Y.Z",
        help="the RocketMQ release whose rocketmq-store jar runs, from Maven Central "
        f"(default: {DEFAULT_RELEASE}, the newest that resolves)",
    )
    source.add_argument(
        "--rocketmq",
        default=None,
        metavar="PATH",
        help="run IndexFile compiled from this RocketMQ source checkout instead of a release",
    )
    p.add_argument(
        "--n",
        type=int,
        nargs="+",
        default=[19_999_999],
        help="keys put into each file (at most entries - 1: a full file)",
    )
    p.add_argument("--repeats", type=int, default=3, help="runs per side, alternating")
    p.add_argument("--lookups", type=int, default=1_000_000)
    p.add_argument("--max-num", type=int, default=64, help="maxNum of each lookup")
    p.add_argument("--slots", type=int, default=5_000_000, help="hash slots (RocketMQ's default)")
    p.add_argument(
        "--entries", type=int, default=20_000_000, help="index entries (RocketMQ's default)"
    )
    p.add_argument("--seed", type=int, default=7, help="seed of the lookup picks")
    p.add_argument(
        "--warmup-keys",
        type=int,
        default=200_000,
        help="keys of each warm-up pass (on a small file of its own)",
    )
    p.add_argument(
        "--warmup-rounds",
        type=int,
        default=3,
        help="Java's warm-up passes before the timed loops (rmqarrow: one)",
    )
    p.add_argument("--java-opts", default=DEFAULT_JAVA_OPTS)
    p.add_argument(
        "--build-dir",
        type=Path,
        default=ROOT / "build" / "anchor",
        help="where RocketMQ's IndexFile and the driver are compiled",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the input and index files go (default: a temporary folder); "
        "given, a run whose sides disagree leaves its files there",
    )
    p.add_argument(
        "--results-dir",
        type=Path,
        default=HERE / "results",
        help="where the JSON run record is written",
    )
    args = p.parse_args(argv)
    bad = [n for n in args.n if not 1 <= n < args.entries]
    if bad or args.repeats < 1 or args.lookups < 1:
        p.error(
            f"expected 1 <= N < entries ({args.entries:,}), repeats >= 1 and lookups "
            f">= 1; got N={bad or args.n}, repeats={args.repeats}, lookups={args.lookups}"
        )
    return args


def bench_n(args: argparse.Namespace, n: int, workdir: Path, build: Any) -> dict[str, Any]:
    """All runs of one N: input, warm-up, alternating pairs, checks, summary."""
    from anchor import _checks, _input, _record, _sides

    from rmqarrow import Geometry

    settings = _sides.Settings(
        args.slots, args.entries, args.max_num, args.warmup_keys, args.warmup_rounds, args.java_opts
    )
    started = time.perf_counter()
    inp = _input.generate(n, args.lookups, args.seed)
    input_path = workdir / f"input-{n}.bin"
    inp.write(input_path)
    keys = inp.keys()
    lookup_keys = keys.take(inp.lookups)
    print(
        f"N={n:,}: input ready in {time.perf_counter() - started:.1f} s "
        f"(keys like {keys[0].as_py()}); load {_record.load_now()['1m']}",
        flush=True,
    )
    _sides.warm_python(inp, keys, workdir, settings)
    # A folder of the Java side's own: its index file and warm-up files are named by numbers.
    java_dir = workdir / "java"
    java_dir.mkdir(exist_ok=True)
    runs: list[dict[str, Any]] = []
    for r in range(1, args.repeats + 1):
        java_index, java_answers = java_dir / JAVA_INDEX_NAME, workdir / "java.answers"
        py_index = workdir / "rmqarrow.index"
        for stale in (java_index, java_answers, py_index):
            stale.unlink(missing_ok=True)
        load_java = _record.load_now()
        java = _sides.run_java(
            build,
            settings,
            input_path,
            java_index,
            java_answers,
            args.build_dir / "java-driver.log",
        )
        if java.get("stderr"):
            print(java["stderr"], file=sys.stderr)
        load_py = _record.load_now()
        py, answers = _sides.run_python(inp, keys, lookup_keys, settings, py_index)
        files = _checks.compare_files(java_index, py_index)
        same = _checks.compare_answers(
            _checks.read_java_answers(java_answers), answers, inp.lookups, inp.phy_offsets
        )
        del answers
        runs.append(
            {
                "repeat": r,
                "java": java,
                "rmqarrow": py,
                "files": files,
                "answers": same,
                "load_before_java": load_java,
                "load_before_rmqarrow": load_py,
            }
        )
        print(
            f"  run {r}: build Java {java['build_wall_s']:.3f} s, rmqarrow "
            f"{py['build_wall_s']:.3f} s; lookups Java {java['lookup_wall_s']:.3f} s, "
            f"rmqarrow {py['lookup_wall_s']:.3f} s; files identical {files['identical']}, "
            f"answers equal {same['equal']}",
            flush=True,
        )
        agreed = files["identical"] and same["equal"] and same["every_query_found_its_key"]
        if not agreed and args.workdir:
            print(
                f"  run {r}: the two sides disagree; input, index and answer files are "
                f"kept in {workdir}",
                flush=True,
            )
            break
        for done in (java_index, java_answers, py_index):
            done.unlink(missing_ok=True)
    else:
        input_path.unlink()
        java_dir.rmdir()
    checks = {
        "files_identical": sum(r["files"]["identical"] for r in runs),
        "answers_equal": sum(r["answers"]["equal"] for r in runs),
        "own_key_found": sum(r["answers"]["every_query_found_its_key"] for r in runs),
        "sha256": runs[0]["files"]["sha256"],
        "offsets": runs[0]["answers"]["offsets"],
    }
    checks["all_passed"] = all(
        checks[k] == len(runs) for k in ("files_identical", "answers_equal", "own_key_found")
    )
    return {
        "n": n,
        "q": args.lookups,
        "key_chars": _input.WIDTH,
        "geometry": [args.slots, args.entries],
        "file_size": Geometry(args.slots, args.entries).file_size,
        "runs": runs,
        "summary": _record.summarize(runs),
        "checks": checks,
    }


def _without_checkout_path(argv: list[str]) -> list[str]:
    """The command line with the checkout's path written as ``$ROCKETMQ``: the record must
    not name local folders."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] == "--rocketmq":
            arg = "$ROCKETMQ"
        elif arg.startswith("--rocketmq="):
            arg = "--rocketmq=$ROCKETMQ"
        out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from anchor import _record, _setup

    try:
        jdk = _setup.find_jdk()
        source: _setup.Checkout | _setup.Release
        if args.rocketmq is not None:
            source = _setup.find_checkout(args.rocketmq)
        else:
            version = args.release or _setup.DEFAULT_RELEASE
            source = _setup.resolve_release(version, notify=lambda m: print(m, flush=True))
        build = _setup.compile_anchor(source, jdk, args.build_dir)
    except _setup.AnchorSetupError as e:
        print(f"bench-anchor: {e}", file=sys.stderr)
        return 2
    done = "reused from" if build.reused else "compiled into"
    if isinstance(source, _setup.Release):
        fetched = (
            f"fetched by Maven in {source.resolve_seconds:.0f} s"
            if source.resolve_seconds
            else "cached"
        )
        print(
            f"RocketMQ {source.version}: IndexFile from {source.store_jar.name} ({fetched}, "
            f"{len(list(source.lib.glob('*.jar')))} jars in {source.lib}); driver {done} "
            f"{build.classes} ({jdk.version})",
            flush=True,
        )
        provenance: dict[str, Any] = {
            "source": "release",
            "release": source.version,
            "artifact": f"{_setup.STORE_ARTIFACT}:{source.version}",
            "store_jar_sha256": source.store_jar_sha256,
            "jars": sorted(j.name for j in source.lib.glob("*.jar")),
        }
    else:
        print(
            f"RocketMQ {source.commit or '(no git commit)'}: IndexFile {done} "
            f"{build.classes} ({jdk.version})",
            flush=True,
        )
        if source.modified:
            print(
                "bench-anchor: warning: the checkout's IndexFile sources differ from its "
                "HEAD; this is not RocketMQ's released code",
                file=sys.stderr,
            )
        provenance = {
            "source": "checkout",
            "commit": source.commit,
            "modified": source.modified,
            "sources": source.blobs,
        }
    context: dict[str, Any] = {
        "kind": "anchor",
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python benchmarks/bench_anchor.py "
        + shlex.join(_without_checkout_path(sys.argv[1:] if argv is None else argv)),
        "machine": _record.machine(),
        "load_at_start": _record.load_now(),
        "rmqarrow": _record.rmqarrow_identity(),
        "rocketmq": provenance,
        "java": {"version": jdk.version, "options": args.java_opts, "flags": build.jvm_flags},
        "settings": {
            k: getattr(args, k)
            for k in (
                "repeats",
                "lookups",
                "max_num",
                "slots",
                "entries",
                "seed",
                "warmup_keys",
                "warmup_rounds",
            )
        },
    }
    results: list[dict[str, Any]] = []
    tmp = None if args.workdir else tempfile.mkdtemp(prefix="rmqarrow-anchor-")
    workdir = args.workdir or Path(tmp or ".")
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        for n in args.n:
            results.append(bench_n(args, n, workdir, build))
    except _setup.AnchorSetupError as e:
        print(f"bench-anchor: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    context["load_at_end"] = _record.load_now()
    first = results[0]["runs"][0]["java"]
    context["java"]["runtime"] = f"{first['java_vm']} {first['java_version']}"
    print()
    for res in results:
        print(_record.table(res, context))
        print()
    record = {**context, "results": results, "ok": all(r["checks"]["all_passed"] for r in results)}
    path = _record.write_record(args.results_dir, record)
    print(f"record: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if not record["ok"]:
        print("bench-anchor: the two sides disagree (see the checks line above)", file=sys.stderr)
        return 1
    return 0


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    """For ``run.py``: no rows (the anchor needs a JDK and Maven, and runs for minutes;
    run ``make bench-anchor``)."""
    return []


if __name__ == "__main__":
    sys.exit(main())
