"""Delta datasets: a full export, an incremental run, and the same two to ``s3://``, side by
side in one run.

A store of 6 full files (``--full``: RocketMQ's default geometry, 5,000,000 x 20,000,000,
19,999,999 entries and 420 MB a file; quick: 100,000 x 400,000) is exported, in one run:

- ``delta export (baseline)``: :func:`export_store` to a local path (Parquet parts
  committed as Delta tables through delta-rs), ``--reps`` times; the row gives the
  median, ``runs`` every time.  rmqarrow no longer writes the older manifest layout, the
  baseline of this benchmark's earlier records (``benchmarks/results/delta-*.json``);
  ``git checkout a3fa257`` runs that comparison again;
- ``delta incremental``: a Delta dataset exported while the newest file held all but the
  last ``GROW`` entries (1,000,000; quick: 20,000: its header's count set back, which is
  how a live broker's file looks between two puts), then brought up to the grown store by
  :func:`sync_store`, against the Delta export's median;
- ``s3 delta export`` / ``s3 delta incremental``: the same two to ``s3://`` on a local S3
  server (:mod:`rmqarrow.testing.s3_server`: the Versity S3 Gateway when ``make s3-server``
  built it, else moto) that this benchmark starts and kills by its pid.  The gateway keeps
  the objects on disk in the run's work directory, moto in its process's memory: a full
  run holds about 3 GB there.  Each row's ``server`` names the one that ran.
  An incremental run that the library refuses for a URI is recorded as refused, with its
  one-line message.

``bytes`` is every file the dataset holds (parts, Delta logs and pins).  The targets: an
export to ``s3://`` within 1.1x of the local export's time and size, an incremental run at
most 1/10 of a full export's time; each row says its ratio, what it is taken
against and whether it meets its target; ``load`` is the 1-minute load average when the
step ended (the benchmarks share 2 cores with other work).  Where an export's time goes:
``after_write_s`` is its time after the last progress update before its end (about when
the entries were written): the files table, the commit and, to ``s3://``, the upload of
the parts; ``cpu_s`` the exporting process's CPU time (every thread's) and
``server_cpu_s`` the S3 server's during the export (it runs on the same cores: with
``os.cpu_count()`` cores an export to it cannot take less than the two CPU times over the
cores, whatever overlaps).

Run alone: ``python benchmarks/bench_delta.py [--full] [--reps N] [--workdir DIR]
[--out FILE]`` (``--out``: a dated JSON record with the load and the command).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _data import full_files_store, reset_peak, rss_mb, set_index_count
from _report import print_rows, write_record
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.manifest import read_manifest

from rmqarrow import Geometry
from rmqarrow.errors import UnsupportedLocationError
from rmqarrow.testing.s3_server import S3Server, start_server, stop_server

FILES = 6
MB = 1_000_000
#: the targets: export to s3:// / local export, time and size; incremental / full
EXPORT_TARGET = 1.1
INCREMENTAL_TARGET = 0.1


def _measured(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """``fn()``'s wall seconds, the process's peak RSS (MB) while it ran, its result."""
    gc.collect()
    reset_peak()
    t = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t
    return seconds, rss_mb()[1], result


def _export(
    store: Path, out: Path | str, **kw: Any
) -> tuple[float, float, Any, float, float | None]:
    """:func:`export_store` measured as :func:`_measured`, the seconds until its last
    progress update before the end (about when the entries were written, the rest being
    the files table, the commit and, to ``s3://``, the upload) and this process's CPU
    seconds meanwhile (every thread's)."""
    mark: dict[str, float] = {}

    def seen(update: Any) -> None:  # a rmqarrow ProgressUpdate
        if not update.finished:
            mark["written"] = time.perf_counter()

    def go() -> Any:
        mark["start"] = time.perf_counter()
        return export_store(store, out, progress=seen, **kw)

    cpu_before = _cpu_seconds(os.getpid())
    seconds, peak, manifest = _measured(go)
    cpu_after = _cpu_seconds(os.getpid())
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return seconds, peak, manifest, mark.get("written", mark["start"]) - mark["start"], cpu


def _cpu_seconds(pid: int) -> float | None:
    """A process's user + system CPU seconds so far (Linux's /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _local_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _s3_bytes(server: S3Server, uri: str) -> int:
    from pyarrow import fs

    s3 = fs.S3FileSystem(endpoint_override=server.endpoint)
    infos = s3.get_file_info(fs.FileSelector(uri.removeprefix("s3://"), recursive=True))
    return sum(i.size or 0 for i in infos if i.type == fs.FileType.File)


def _s3_delete(server: S3Server, uri: str) -> None:
    """Drop a dataset from the server (moto holds it in memory, the gateway on disk).
    Objects first, then the directories deepest first: the gateway's posix backend keeps a
    directory for each prefix and refuses to delete one that still holds anything, which
    a single recursive delete, sending the prefixes in the same batch as their objects,
    runs into."""
    from pyarrow import fs

    s3 = fs.S3FileSystem(endpoint_override=server.endpoint)
    root = uri.removeprefix("s3://")
    infos = s3.get_file_info(fs.FileSelector(root, recursive=True))
    for info in infos:
        if info.type == fs.FileType.File:
            s3.delete_file(info.path)
    dirs = [i.path for i in infos if i.type == fs.FileType.Directory]
    for path in [*sorted(dirs, key=lambda p: p.count("/"), reverse=True), root]:
        s3.delete_dir(path)


@contextmanager
def _s3(workdir: Path) -> Iterator[tuple[S3Server, str]]:
    """An S3 server of this run and a new bucket on it, the AWS settings pointing at it
    in this process's environment meanwhile; the server is killed by its pid after."""
    from pyarrow import fs

    server, proc = start_server(workdir / "s3-server.log")
    saved = {k: os.environ.get(k) for k in server.env()}
    try:
        os.environ.update(server.env())
        bucket = f"rmqarrow-bench-{uuid.uuid4().hex[:8]}"
        fs.S3FileSystem(endpoint_override=server.endpoint, allow_bucket_creation=True).create_dir(
            bucket
        )
        yield server, f"s3://{bucket}"
    finally:
        stop_server(proc)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def _before_growth(newest: Path, index_count: int) -> Iterator[None]:
    """The newest file as it was before its last entries: its header's count set back."""
    old = set_index_count(newest, index_count)
    try:
        yield
    finally:
        set_index_count(newest, old)


def _ratio_row(
    bench: str,
    variant: str,
    entries: int,
    seconds: float | None,
    nbytes: int | None,
    peak: float | None,
    *,
    runs: list[float] | None = None,
    vs: str = "",
    time_ratio: float | None = None,
    size_ratio: float | None = None,
    target: str = "",
    met: bool | None = None,
    after_write: float | None = None,
    server_cpu: float | None = None,
    cpu: float | None = None,
    note: str = "",
) -> dict[str, Any]:
    r: dict[str, Any] = {
        "benchmark": bench,
        "variant": variant,
        "items": entries,
        "seconds": None if seconds is None else round(seconds, 3),
        "per_s": None if not seconds else round(entries / seconds),
        "peak_rss_mb": None if peak is None else round(peak, 1),
        "mb": None if nbytes is None else round(nbytes / MB, 1),
        "bytes": nbytes,
        "vs": vs,
        "time_ratio": None if time_ratio is None else round(time_ratio, 3),
        "size_ratio": None if size_ratio is None else round(size_ratio, 4),
        "target": target,
        "met": met,
        "load": round(os.getloadavg()[0], 2),
    }
    if after_write is not None:
        r["after_write_s"] = round(after_write, 3)
    if cpu is not None:
        r["cpu_s"] = round(cpu, 1)
    if server_cpu is not None:
        r["server_cpu_s"] = round(server_cpu, 1)
    if runs is not None:
        r["runs"] = [round(s, 3) for s in runs]
    r["note"] = note
    return r


def run(
    full: bool,
    workdir: Path,
    reps: int | None = None,
    geometry: Geometry | None = None,
    grow: int | None = None,
) -> list[dict[str, Any]]:
    """The benchmark rows (see the module doc); ``geometry`` and ``grow`` replace the
    sizes ``full`` picks (the harness's own test runs tiny files)."""
    g = geometry or (Geometry(5_000_000, 20_000_000) if full else Geometry(100_000, 400_000))
    grow = grow or (1_000_000 if full else 20_000)
    reps = reps or (3 if full else 2)
    geo = {"hash_slot_num": g.hash_slot_num, "index_num": g.index_num}
    bench = f"delta layout, {FILES} files {g.hash_slot_num}x{g.index_num}"
    store = full_files_store(workdir, g, FILES)
    newest = sorted(store.iterdir())[-1]
    short = g.index_num - grow  # the newest file's header count before it grew
    work = workdir / "delta-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    rows: list[dict[str, Any]] = []
    try:
        # the Delta dataset the incremental run brings up to date; this export also
        # warms the page cache with the store for the timed runs below
        inc = work / "ds-incremental"
        with _before_growth(newest, short):
            t_before, _, _ = _measured(lambda: export_store(store, inc, **geo))
        entries = int(read_manifest(inc)["tables"]["entries"]["rows"]) + grow

        times: list[float] = []
        rest: list[float] = []
        cpus: list[float] = []
        size, peak_max = 0, 0.0
        for _ in range(reps):
            out = work / "ds-delta"
            seconds, peak, manifest, written, cpu = _export(store, out, **geo)
            if int(manifest["tables"]["entries"]["rows"]) != entries:
                raise RuntimeError(f"delta export: {manifest['tables']} for {entries}")
            times.append(seconds)
            if cpu is not None:
                cpus.append(cpu)
            rest.append(seconds - written)
            size, peak_max = _local_bytes(out), max(peak_max, peak)
            shutil.rmtree(out)
        t_delta = statistics.median(times)
        rows.append(
            _ratio_row(
                bench,
                "delta export (baseline)",
                entries,
                t_delta,
                size,
                peak_max,
                runs=times,
                after_write=statistics.median(rest),
                cpu=statistics.median(cpus) if cpus else None,
                note=f"median of {reps}",
            )
        )

        seconds, peak, result = _measured(lambda: sync_store(store, inc, **geo))
        if result.grown != [newest.name] or result.entries != grow:
            raise RuntimeError(f"incremental run: {result} (expected {grow} entries)")
        if int(read_manifest(inc)["tables"]["entries"]["rows"]) != entries:
            raise RuntimeError("the incremental dataset does not hold the grown store")
        rows.append(
            _ratio_row(
                bench,
                f"delta incremental (+{grow:,} entries)",
                entries,
                seconds,
                _local_bytes(inc),
                peak,
                vs="delta export (baseline)",
                time_ratio=seconds / t_delta,
                target=f"time <= {INCREMENTAL_TARGET}x",
                met=seconds / t_delta <= INCREMENTAL_TARGET,
                note=(
                    f"the dataset was a Delta export of the store before growth "
                    f"({t_before:.2f} s, untimed warm-up)"
                ),
            )
        )
        shutil.rmtree(inc)
        rows += _s3_rows(bench, work, store, newest, short, geo, entries, grow, t_delta, size)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _s3_rows(
    bench: str,
    work: Path,
    store: Path,
    newest: Path,
    short: int,
    geo: dict[str, int],
    entries: int,
    grow: int,
    t_delta: float,
    size: int,
) -> list[dict[str, Any]]:
    """The export and the incremental run to ``s3://`` on a local S3 server."""
    rows: list[dict[str, Any]] = []
    with _s3(work) as (server, bucket):
        inc = f"{bucket}/incremental"
        with _before_growth(newest, short):
            t_before, _, _ = _measured(lambda: export_store(store, inc, **geo))
        try:
            seconds, peak, result = _measured(lambda: sync_store(store, inc, **geo))
        except UnsupportedLocationError as exc:
            rows.append(
                _ratio_row(
                    bench,
                    f"s3 delta incremental (+{grow:,} entries)",
                    entries,
                    None,
                    None,
                    None,
                    vs="s3 delta export",
                    target=f"time <= {INCREMENTAL_TARGET}x",
                    met=None,
                    note=f"refused: {exc}",
                )
            )
            incremental = None
        else:
            if result.entries != grow:
                raise RuntimeError(f"s3 incremental run: {result} (expected {grow} entries)")
            incremental = (seconds, peak, _s3_bytes(server, inc))
        _s3_delete(server, inc)

        whole = f"{bucket}/full"
        cpu_before = _cpu_seconds(server.pid)
        seconds, peak, manifest, written, cpu = _export(store, whole, **geo)
        cpu_after = _cpu_seconds(server.pid)
        server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        if int(manifest["tables"]["entries"]["rows"]) != entries:
            raise RuntimeError(f"s3 export: {manifest['tables']} for {entries}")
        nbytes = _s3_bytes(server, whole)
        time_ratio, size_ratio = seconds / t_delta, nbytes / size
        rows.insert(
            0,
            _ratio_row(
                bench,
                "s3 delta export",
                entries,
                seconds,
                nbytes,
                peak,
                runs=[seconds],
                vs="delta export (baseline)",
                time_ratio=time_ratio,
                size_ratio=size_ratio,
                target=f"time and size <= {EXPORT_TARGET}x",
                met=time_ratio <= EXPORT_TARGET and size_ratio <= EXPORT_TARGET,
                after_write=seconds - written,
                server_cpu=server_cpu,
                cpu=cpu,
                note=f"one run; the export before growth took {t_before:.2f} s",
            ),
        )
        if incremental is not None:
            t_inc, peak_inc, inc_bytes = incremental
            rows.append(
                _ratio_row(
                    bench,
                    f"s3 delta incremental (+{grow:,} entries)",
                    entries,
                    t_inc,
                    inc_bytes,
                    peak_inc,
                    vs="s3 delta export",
                    time_ratio=t_inc / seconds,
                    target=f"time <= {INCREMENTAL_TARGET}x",
                    met=t_inc / seconds <= INCREMENTAL_TARGET,
                )
            )
        _s3_delete(server, whole)
    for row in rows:
        row["server"] = server.kind
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each row's ratio and whether it meets its target, by variant."""
    return {
        r["variant"]: {
            "seconds": r["seconds"],
            "mb": r["mb"],
            "vs": r["vs"],
            "time_ratio": r["time_ratio"],
            "size_ratio": r["size_ratio"],
            "target": r["target"],
            "met": r["met"],
        }
        for r in rows
    }


def _command(argv: list[str]) -> str:
    """The command line as recorded: the work folder, a path of this machine, as DIR."""
    words = ["python", "benchmarks/bench_delta.py"]
    for i, word in enumerate(argv):
        if i and argv[i - 1] == "--workdir":
            word = "DIR"
        elif word.startswith("--workdir="):
            word = "--workdir=DIR"
        words.append(word)
    return " ".join(words)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--full", action="store_true", help="RocketMQ's default geometry")
    parser.add_argument("--reps", type=int, help="exports of each layout (full 3, quick 2)")
    parser.add_argument("--workdir", type=Path, help="where to put generated data (kept)")
    parser.add_argument("--out", type=Path, help="write a dated JSON record of the run here")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = run(args.full, args.workdir, args.reps)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            rows = run(args.full, Path(tmp), args.reps)
    print_rows(rows)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_record(
            args.out,
            rows,
            command=_command(sys.argv[1:] if argv is None else argv),
            started=started,
            load_before=load_before,
            summary=summary(rows),
        )
        print(f"record: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
