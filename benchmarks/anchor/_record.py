"""The side-by-side table and the dated JSON run record (machine, load, commits, figures)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["load_now", "machine", "rmqarrow_identity", "summarize", "table", "write_record"]

ROOT = Path(__file__).resolve().parents[2]

#: (name, what runs on the Java side | on rmqarrow's, what the count counts)
SECTIONS = (
    ("build", "putKey loop | put_keys", "keys"),
    ("lookup", "selectPhyOffset loop | select_phy_offsets_many", "lookups"),
    ("hash", "String.hashCode | index_key_hashes", "keys"),
)


def load_now() -> dict[str, float | None]:
    """The load averages and, where the kernel reports it, the CPU pressure (PSI avg10 %)."""
    one, five, fifteen = os.getloadavg()
    pressure = None
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        pressure = float(line.split("avg10=")[1].split()[0])
    except (OSError, IndexError, ValueError):
        pass
    return {
        "1m": round(one, 2),
        "5m": round(five, 2),
        "15m": round(fifteen, 2),
        "cpu_pressure_avg10": pressure,
    }


def _first_line(path: str, prefix: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    mem = _first_line("/proc/meminfo", "MemTotal")
    return {
        "cpu": _first_line("/proc/cpuinfo", "model name") or platform.processor(),
        "cpus": os.cpu_count(),
        "memory": mem,
        "system": platform.platform(),
        "python": platform.python_version(),
    }


def _git(*args: str) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def rmqarrow_identity() -> dict[str, Any]:
    """The measured rmqarrow: version, commit, uncommitted changes, hash kernel."""
    import rmqarrow
    from rmqarrow.kernels.hashing import kernel_name

    status = _git("status", "--porcelain", "--", "rmqarrow", "converters")
    return {
        "version": rmqarrow.__version__,
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_changes": None if status is None else bool(status),
        "hash_kernel": kernel_name(),
    }


def _stats(values: list[float]) -> dict[str, float]:
    return {"best": min(values), "median": statistics.median(values)}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Best and median of each timed section, per side, and Java's time over rmqarrow's."""
    out: dict[str, Any] = {}
    for name, _, _ in SECTIONS:
        for clock in ("wall", "cpu"):
            key = f"{name}_{clock}_s"
            java = _stats([r["java"][key] for r in runs])
            py = _stats([r["rmqarrow"][key] for r in runs])
            out[key] = {
                "java": java,
                "rmqarrow": py,
                "java_over_rmqarrow": {k: _ratio(java[k], py[k]) for k in java},
            }
    for key in ("flush_wall_s", "create_wall_s"):
        out[key] = {
            "java": _stats([r["java"][key] for r in runs]),
            "rmqarrow": _stats([r["rmqarrow"][key] for r in runs]),
        }
    return out


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def _fmt_rate(count: int, seconds: float) -> str:
    rate = count / seconds if seconds > 0 else float("inf")
    return f"{rate / 1e6:.2f} M" if rate >= 1e4 else f"{rate:,.0f}"


def table(result: dict[str, Any], context: dict[str, Any]) -> str:
    """The side-by-side table of one N, with its load, checks and provenance lines."""
    runs, summary = result["runs"], result["summary"]
    n, q = result["n"], result["q"]
    geo = result["geometry"]
    head = (
        f"N = {n:,} keys ({result['key_chars']} chars), {q:,} lookups; "
        f"{geo[0]:,} slots x {geo[1]:,} entries ({result['file_size']:,} bytes); "
        f"{len(runs)} runs per side, alternating"
    )
    w = 46
    lines = [
        head,
        f"{'':{w}}{'RocketMQ Java':>22}{'rmqarrow':>22}{'Java / rmqarrow':>18}",
        f"{'':{w}}{'median':>11}{'best':>11}{'median':>11}{'best':>11}{'median':>9}{'best':>9}",
    ]
    for name, what, unit in SECTIONS:
        count = n if unit == "keys" else q
        lines.append(f"{name} ({what})")
        for clock, label in (("wall", "wall"), ("cpu", "CPU")):
            s = summary[f"{name}_{clock}_s"]
            j, p, r = s["java"], s["rmqarrow"], s["java_over_rmqarrow"]
            lines.append(
                f"{'  ' + label + ' seconds':{w}}{j['median']:>9.3f} s{j['best']:>9.3f} s"
                f"{p['median']:>9.3f} s{p['best']:>9.3f} s"
                f"{r['median']:>8.2f}x{r['best']:>8.2f}x"
            )
            per = "/s" if clock == "wall" else " per CPU-s"
            lines.append(
                f"{'  ' + unit + per:{w}}{_fmt_rate(count, j['median']):>11}"
                f"{_fmt_rate(count, j['best']):>11}{_fmt_rate(count, p['median']):>11}"
                f"{_fmt_rate(count, p['best']):>11}"
            )
    f = summary["flush_wall_s"]
    lines.append(
        f"{'flush after build (force | flush), wall':{w}}"
        f"{f['java']['median']:>9.3f} s{f['java']['best']:>9.3f} s"
        f"{f['rmqarrow']['median']:>9.3f} s{f['rmqarrow']['best']:>9.3f} s"
    )
    lines.append(
        "CPU seconds: Java = the driver thread running the loop (JIT and GC threads "
        "not counted); rmqarrow = the whole process, every thread."
    )
    lines.append("Java / rmqarrow = Java's time over rmqarrow's (above 1: rmqarrow is faster).")
    lines.append(
        "load (1-min avg, CPU pressure %) before each run: "
        + ", ".join(
            f"J{r['repeat']} {_load(r['load_before_java'])} R{r['repeat']} "
            f"{_load(r['load_before_rmqarrow'])}"
            for r in runs
        )
    )
    c = result["checks"]
    lines.append(
        f"checks: index files byte-identical {c['files_identical']}/{len(runs)} (sha256 "
        f"{c['sha256'][:16]}...), answers equal {c['answers_equal']}/{len(runs)} "
        f"({q:,} queries, {c['offsets']:,} offsets), every query found its key "
        f"{c['own_key_found']}/{len(runs)}"
    )
    rmq, java, ours = context["rocketmq"], context["java"], context["rmqarrow"]
    if rmq["source"] == "release":
        origin = f"RocketMQ {rmq['release']} ({rmq['artifact']} from Maven Central, as released)"
    else:
        state = {True: "MODIFIED in the checkout", False: "unchanged", None: "not a git tree"}
        origin = f"RocketMQ {rmq['commit'] or '(commit unknown)'} ({state[rmq['modified']]})"
    lines.append(
        f"{origin}, "
        f"{java.get('runtime', java['version'])}, JVM options {java['options']!r}; rmqarrow "
        f"{(ours['commit'] or '?')[:12]}"
        f"{' with uncommitted changes' if ours['uncommitted_changes'] else ''}"
        f" ({ours['hash_kernel']} kernel); {context['machine']['cpus']} CPUs"
    )
    return "\n".join(lines)


def _load(load: dict[str, float | None]) -> str:
    p = load["cpu_pressure_avg10"]
    return f"{load['1m']}" + ("" if p is None else f" ({p:.0f})")


def write_record(results_dir: Path, record: dict[str, Any]) -> Path:
    """``results_dir/anchor-<UTC date and time>.json``; never replaces an earlier record."""
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = results_dir / f"anchor-{stamp}.json"
    k = 1
    while path.exists():
        k += 1
        path = results_dir / f"anchor-{stamp}-{k}.json"
    path.write_text(json.dumps(record, indent=1, default=str) + "\n")
    return path
