"""A follower over many rounds against a fresh export of the final store, in one run.

A writer (in this process: :class:`IndexService` and :class:`CommitLogWriter`, files of
``--index-num`` entries, so the store rolls files as it grows) appends a batch of
records before each of ``--rounds`` incremental runs (:func:`sync_store` with the
CommitLog, as ``export --follow --commitlog`` does a round).  Then the final store is
exported whole.  Side by side: the parts each table has, and DuckDB's time to count the
entries and to look one key up (``slot`` and ``key_hash``), best of 9 after a warm-up, over each
dataset's parts.  The goal: the follower's dataset within 1.5x of the fresh export's.
``vs_baseline``: the fresh export's lookup time over the follower's.  Run alone:
``python benchmarks/bench_follow.py [--rounds N] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import duckdb
import pyarrow as pa
from _report import print_rows, write_record
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.parts import duckdb_literal, table_parts

from rmqarrow.commitlog import CommitLogWriter, Message
from rmqarrow.format.hashing import index_key_hash
from rmqarrow.index.service import IndexService

SLOTS, INDEX = 64, 2000
T0 = 1_700_000_000_000
TABLES = ("files", "slots", "entries", "messages")


def _batch(a: int, b: int, offsets: list[int]) -> pa.Table:
    return pa.table(
        {
            "topic": ["T"] * (b - a),
            "keys": [f"k{i % 97}" for i in range(a, b)],
            "uniq_key": [f"u{i}" for i in range(a, b)],
            "commit_log_offset": pa.array(offsets, pa.int64()),
            "store_timestamp": pa.array([T0 + i for i in range(a, b)], pa.int64()),
            "sys_flag": pa.array([0] * (b - a), pa.int32()),
        }
    )


def _query_seconds(ds: Path, probe: int) -> dict[str, float]:
    con = duckdb.connect()
    for t in ("entries",):
        files = [duckdb_literal(p) for p in table_parts(ds, t)]
        con.read_parquet(files).create_view(t)
    out = {}
    for name, sql in (
        ("count_s", "SELECT count(*) FROM entries"),
        (
            "lookup_s",
            f"SELECT phy_offset FROM entries WHERE slot = {probe % SLOTS} "
            f"AND key_hash = {probe} ORDER BY file_name, position",
        ),
    ):
        con.sql(sql).fetchall()  # warm: file metadata cached, as for any open connection
        times = []
        for _ in range(9):
            t = time.perf_counter()
            con.sql(sql).fetchall()
            times.append(time.perf_counter() - t)
        out[name] = min(times)  # the least disturbed by other load
    return out


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    """``benchmarks/run.py``'s entry: 100 rounds of 300 records (``full``: 3,000)."""
    return follow_rows(100, 3000 if full else 300, workdir)


def follow_rows(rounds: int, per_round: int, workdir: Path) -> list[dict[str, Any]]:
    store, log_dir = workdir / "index", workdir / "commitlog"
    followed, fresh = workdir / "ds-follow", workdir / "ds-fresh"
    service = IndexService(store, SLOTS, INDEX, 1 << 20)
    service.load()
    log = CommitLogWriter(log_dir, mapped_file_size=256 * 1024)
    n = 0
    follow_seconds = 0.0
    try:
        for _ in range(rounds):
            offsets = []
            for i in range(n, n + per_round):
                result = log.append(Message(topic="T", body=b"x" * 64, keys=[f"k{i % 97}"]))
                offsets.append(result.physical_offset)
            log._flush()  # the writer's buffer reaches the file: a broker's put is visible
            assert log._out is not None
            log._out.flush()
            service.build_index_batch(_batch(n, n + per_round, offsets))
            n += per_round
            t = time.perf_counter()
            sync_store(store, followed, hash_slot_num=SLOTS, index_num=INDEX, commitlog=log_dir)
            follow_seconds += time.perf_counter() - t
        service.close()
        t = time.perf_counter()
        export_store(store, fresh, hash_slot_num=SLOTS, index_num=INDEX, commitlog=log_dir)
        fresh_seconds = time.perf_counter() - t
    finally:
        log.close()
    probe = index_key_hash("T#k5")
    load = os.getloadavg()[0]
    rows = []
    measured = {}
    for variant, ds, seconds in (
        ("fresh export (baseline)", fresh, fresh_seconds),
        (f"follower after {rounds} rounds", followed, follow_seconds),
    ):
        parts = {t: len(table_parts(ds, t)) for t in TABLES}
        q = _query_seconds(ds, probe)
        measured[variant] = (parts, q)
        rows.append(
            {
                "benchmark": f"follow {rounds} rounds x {per_round} records, {SLOTS}x{INDEX}",
                "variant": variant,
                "items": n,
                "seconds": round(seconds, 3),
                **{f"parts_{t}": parts[t] for t in TABLES},
                "count_s": round(q["count_s"], 5),
                "lookup_s": round(q["lookup_s"], 5),
                "note": f"load {load:.1f}",
            }
        )
    base, follow = rows
    base["vs_baseline"] = 1.0
    follow["vs_baseline"] = round(base["lookup_s"] / follow["lookup_s"], 2)
    for key in ("count_s", "lookup_s"):
        follow[f"{key}_ratio"] = round(follow[key] / base[key], 2)
    follow["parts_ratio_max"] = round(
        max(follow[f"parts_{t}"] / base[f"parts_{t}"] for t in TABLES), 2
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--per-round", type=int, default=300, help="records a round")
    parser.add_argument("--out", type=Path, help="JSON results file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = follow_rows(args.rounds, args.per_round, Path(tmp))
    print_rows(rows)
    if args.out is not None:
        write_record(args.out, rows)


if __name__ == "__main__":
    main()
