"""Each side's run: RocketMQ's Java in a fresh JVM, rmqarrow in this process."""

from __future__ import annotations

import gc
import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from anchor._input import AnchorInput
from anchor._setup import DRIVER_CLASS, AnchorSetupError, Build

__all__ = ["JAVA_LONG_MAX", "JavaRunError", "Settings", "run_java", "run_python", "warm_python"]

JAVA_LONG_MAX = 2**63 - 1


class JavaRunError(AnchorSetupError):
    """The Java driver failed (its command and output are kept in a log)."""


@dataclass(frozen=True)
class Settings:
    """What both sides are asked to do."""

    slots: int
    entries: int
    max_num: int
    warmup_keys: int
    warmup_rounds: int
    java_opts: str


def run_java(
    build: Build, settings: Settings, input_path: Path, index: Path, answers: Path, log: Path
) -> dict[str, Any]:
    """One fresh JVM: warm-up, hash, putKey loop, selectPhyOffset loop, flush (timed inside).
    When it fails, its command and output go to ``log`` (outside the temporary work folder)."""
    cmd = [
        build.jdk.java,
        *build.jvm_flags,
        *shlex.split(settings.java_opts),
        "-cp",
        os.pathsep.join(build.classpath),
        DRIVER_CLASS,
        str(input_path),
        str(index),
        str(answers),
        "--slots",
        str(settings.slots),
        "--entries",
        str(settings.entries),
        "--max-num",
        str(settings.max_num),
        "--warmup-keys",
        str(settings.warmup_keys),
        "--warmup-rounds",
        str(settings.warmup_rounds),
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    jvm_wall = time.perf_counter() - started
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        log.write_text(f"$ {shlex.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
        lines = proc.stderr.strip().splitlines() or ["no output"]
        # A Java stack trace's first line names the exception; its last is only a frame.
        last = next((ln for ln in lines if "Exception" in ln or "Error" in ln), lines[-1])
        raise JavaRunError(f"the Java driver exited {proc.returncode}: {last} (log: {log})")
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    result["jvm_wall_s"] = jvm_wall
    result["stderr"] = proc.stderr.strip()
    return result


class _Clock:
    """Wall, process CPU (every thread) and main-thread CPU around one timed call."""

    def __init__(self) -> None:
        gc.collect()
        self.wall = time.perf_counter()
        self.cpu = time.process_time()
        self.thread = time.thread_time()

    def stop(self, out: dict[str, Any], name: str) -> None:
        out[f"{name}_wall_s"] = time.perf_counter() - self.wall
        out[f"{name}_cpu_s"] = time.process_time() - self.cpu
        out[f"{name}_main_thread_cpu_s"] = time.thread_time() - self.thread


def warm_python(inp: AnchorInput, keys: pa.Array, workdir: Path, settings: Settings) -> None:
    """Load (numba: compile) rmqarrow's kernels on a small file of their own, once."""
    from rmqarrow import IndexFile, index_key_hashes

    w = max(1, min(settings.warmup_keys, inp.n))
    path = workdir / "python.warmup.index"
    path.unlink(missing_ok=True)
    index_key_hashes(keys.slice(0, w))
    with IndexFile.create(path, max(1, w // 4), w + 1) as f:
        f.put_keys(keys.slice(0, w), inp.phy_offsets[:w], inp.store_timestamps[:w])
        picks = inp.lookups[:w] % w if inp.q else np.arange(w)
        f.select_phy_offsets_many(keys.take(picks), settings.max_num, 0, JAVA_LONG_MAX)
    path.unlink()


def run_python(
    inp: AnchorInput, keys: pa.Array, lookup_keys: pa.Array, settings: Settings, index: Path
) -> tuple[dict[str, Any], pa.Table]:
    """rmqarrow's side, in this process: hash, ``put_keys``, ``select_phy_offsets_many``,
    ``flush``; the lookups' answer table is returned for the checks."""
    from rmqarrow import IndexFile, index_key_hashes

    out: dict[str, Any] = {"n": inp.n, "q": inp.q}
    clock = _Clock()
    hashes = index_key_hashes(keys)
    clock.stop(out, "hash")
    del hashes
    index.unlink(missing_ok=True)
    started = time.perf_counter()
    f = IndexFile.create(index, settings.slots, settings.entries)
    out["create_wall_s"] = time.perf_counter() - started
    try:
        clock = _Clock()
        out["stored"] = f.put_keys(keys, inp.phy_offsets, inp.store_timestamps)
        clock.stop(out, "build")
        clock = _Clock()
        table = f.select_phy_offsets_many(lookup_keys, settings.max_num, 0, JAVA_LONG_MAX)
        clock.stop(out, "lookup")
        out["found"] = table.num_rows
        # As the Java side: header written and the map forced to disk (msync).
        started = time.perf_counter()
        f.flush()
        out["flush_wall_s"] = time.perf_counter() - started
    finally:
        f.close()
    return out, table
