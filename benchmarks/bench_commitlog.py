"""CommitLog benchmarks: scan and index-record rates next to the raw disk read rate.

A CommitLog is generated with :class:`rmqarrow.commitlog.CommitLogWriter` in ``workdir``
(~64 MiB by default, 1 GiB with ``--full``; kept and reused between runs), then:

- ``raw read`` (baseline): read every file sequentially into a buffer;
- ``full scan``: :func:`iter_records`, every header field decoded, bodies left lazy;
- ``index_records``: the vectorized Arrow path the index build reads;
- ``messages table``: :func:`rmqarrow.converters.arrow.messages.messages_reader` (hosts decoded
  too).

Every row counts the same records, so ``vs_baseline`` is the row's records/s divided by
the raw read's (the raw read "processes" the records by merely reading their bytes).
The files were just written or read, so the raw read is usually served from the page cache.

Run alone: ``python benchmarks/bench_commitlog.py [--full] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import peak_rss_mb, print_rows

from rmqarrow.commitlog import CommitLogWriter, Message, index_records, iter_records

MIB = 1024 * 1024


def _generate(target: Path, total_bytes: int, mapped: int, seed: int = 7) -> int:
    """Write messages until ~total_bytes; the number of records."""
    rng = random.Random(seed)
    pool = rng.randbytes(1 << 16)
    topics = ["TopicTest", "OrderTopic", "payments-eu_1", "%RETRY%GID_demo", "T" * 150]
    tags = [None, "TagA", "TagB", "a||b"]
    written = 0
    n = 0
    with CommitLogWriter(target, mapped_file_size=mapped) as w:
        while written < total_bytes:
            body_len = rng.choice((0, 64, 256, 700, 1024, 2048))
            start = rng.randrange(0, len(pool) - body_len)
            keys = None if n % 5 == 0 else " ".join(f"order-{n}-{j}" for j in range(n % 3 + 1))
            r = w.append(
                Message(
                    topic=topics[n % len(topics)],
                    body=pool[start : start + body_len],
                    keys=keys,
                    tags=tags[n % len(tags)],
                    uniq_key=f"C0A80A05{n:024X}",
                    properties={"CLUSTER": "DefaultCluster", "WAIT": "true"},
                    queue_id=n % 8,
                    queue_offset=n // 8,
                    sys_flag=0xC if n % 997 == 0 else 0,
                    born_timestamp=1_709_251_200_000 + n,
                    store_timestamp=1_709_251_200_005 + n,
                    born_host=f"10.0.{n % 200}.{n % 250}:{30000 + n % 30000}",
                    store_host="192.168.10.5:10911" if n % 4 else "[2001:db8:0:0:0:0:0:5]:10911",
                )
            )
            written = r.physical_offset + r.total_size
            n += 1
    return n


def _ensure_store(workdir: Path, full: bool) -> tuple[Path, int, float]:
    total = 1024 * MIB if full else 64 * MIB
    mapped = 256 * MIB if full else 16 * MIB
    root = workdir / f"commitlog_{total // MIB}m"
    marker = root / "generated.json"
    if marker.exists():
        info = json.loads(marker.read_text())
        return root / "commitlog", int(info["records"]), float(info["seconds"])
    root.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    n = _generate(root / "commitlog", total, mapped)
    seconds = time.perf_counter() - t
    marker.write_text(json.dumps({"records": n, "seconds": seconds}))
    return root / "commitlog", n, seconds


def _raw_read(store: Path) -> int:
    buf = bytearray(8 * MIB)
    view = memoryview(buf)
    total = 0
    for f in sorted(store.iterdir()):
        with open(f, "rb", buffering=0) as fh:
            while True:
                got = fh.readinto(view)
                if not got:
                    break
                total += got
    return total


def _full_scan(store: Path) -> int:
    n = 0
    for r in iter_records(store):
        n += 1
        _ = r.properties_raw, r.topic
    return n


def _index_records(store: Path) -> int:
    return sum(b.num_rows for b in index_records(store))


def _messages(store: Path) -> int:
    from rmqarrow.converters.arrow.messages import messages_reader

    return sum(b.num_rows for b in messages_reader(store))


def _warm_up(store: Path | None = None) -> None:
    """Load the compiled kernels (numba cache: the walk, and the index-record pass over
    ``store``'s first file) before anything is timed."""
    from rmqarrow.commitlog._walk import record_positions

    record_positions(bytes(64), 64, 64, 0, 0, True)
    if store is not None:
        next(iter(index_records(store, batch_rows=16)), None)


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    """The benchmark rows (see the module doc)."""
    store, records, gen_seconds = _ensure_store(workdir, full)
    _warm_up(store)
    rows: list[dict[str, Any]] = []
    t = time.perf_counter()
    nbytes = _raw_read(store)
    base = time.perf_counter() - t
    base_rate = records / base
    rows.append(
        {
            "benchmark": "commitlog scan",
            "variant": "raw read (baseline)",
            "items": records,
            "seconds": round(base, 4),
            "per_s": round(base_rate),
            "vs_baseline": 1.0,
            "peak_rss_mb": round(peak_rss_mb(), 1),
            "note": f"{nbytes / MIB:.0f} MiB at {nbytes / MIB / base:.0f} MiB/s",
        }
    )
    for variant, fn in (
        ("full scan (iter_records)", _full_scan),
        ("index_records (Arrow)", _index_records),
        ("messages table (Arrow)", _messages),
    ):
        t = time.perf_counter()
        n = fn(store)
        seconds = time.perf_counter() - t
        if n != records:
            raise RuntimeError(f"{variant}: {n} records, expected {records}")
        rows.append(
            {
                "benchmark": "commitlog scan",
                "variant": variant,
                "items": n,
                "seconds": round(seconds, 4),
                "per_s": round(n / seconds),
                "vs_baseline": round(n / seconds / base_rate, 4),
                "peak_rss_mb": round(peak_rss_mb(), 1),
                "note": f"{nbytes / MIB / seconds:.0f} MiB/s of log",
            }
        )
    rows.append(
        {
            "benchmark": "commitlog scan",
            "variant": "writer (generation)",
            "items": records,
            "seconds": round(gen_seconds, 4),
            "per_s": round(records / gen_seconds),
            "vs_baseline": round(records / gen_seconds / base_rate, 4),
            "note": "measured when the store was generated (may be an earlier run)",
        }
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1 GiB CommitLog (default ~64 MiB)")
    parser.add_argument("--workdir", type=Path, help="where the generated log is kept")
    args = parser.parse_args(argv)
    if args.workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            print_rows(run(args.full, Path(tmp)))
    else:
        print_rows(run(args.full, args.workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
