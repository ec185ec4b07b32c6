"""RocketMQ's RocksDB message index (RIP-82) next to the classic IndexFile, same messages.

``M`` messages (each: one KEYS token, a TAGS value, its UNIQ_KEY; store times rising by
0..2 ms from 2025-06-02, offsets rising) are indexed both ways, cached in ``workdir``:

- the RocksDB index as the broker's ``buildIndex`` writes it: 3 records a message (K, T,
  U) and the bookkeeping keys, written in write batches of 100,000 records (the same pairs
  ``RocksDBIndex.build_index`` writes one message at a time, which is too slow for 20 M);
- IndexFiles (RocketMQ's default geometry, 5,000,000 slots x 20,000,000 entries) holding
  the same messages: 2 entries a message (the key and the message id; tags are not
  indexed there).

Rows (``vs_baseline``: the rate over the IndexFile row of the same benchmark; the note
holds ``/proc/loadavg``):

- ``export records``: the whole index to Parquet (``rmqarrow export``), records (RocksDB)
  or entries (IndexFile) per second;
- ``key query``: one key looked up, median latency over 50 keys (as ``rmqarrow query``
  does it: RocksDB ``queryOffset`` with type K over a one-day window, IndexFile
  ``queryOffset`` over all time), opening excluded.

Sizes: ``--quick`` (``make bench``) 100,000 messages; default and ``--full`` 6,700,000
messages = 20.1 M RocksDB records and 13.4 M IndexFile entries.  Run alone:
``python benchmarks/bench_rocksdb.py [--quick|--full] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from _report import print_rows, row, set_ratios, timed

T0 = 1_748_822_400_000  # 2025-06-02T00:00Z
HOUR = 3_600_000
TOPICS = ("OrderTopic", "PayTopic", "ShipTopic", "AuditTopic")
_L = struct.Struct(">q")


def _load() -> str:
    try:
        return "loadavg " + " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "loadavg n/a"


def messages(n: int) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(7)
    return {
        "times": T0 + np.cumsum(rng.integers(0, 3, n, dtype=np.int64)),
        "offsets": np.arange(n, dtype=np.int64) * 300,
    }


def _uniq(i: int) -> str:
    return f"7F0000010001{i:020X}"


def rocksdb_index(workdir: Path, n: int) -> Path:
    """The RocksDB database of ``n`` messages (cached)."""
    import rocksdict

    path = workdir / f"rocksdb-{n}"
    if (path / "CURRENT").exists():
        return path
    tmp = workdir / f".rocksdb-{n}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    from rmqarrow.rocksdb import RocksDBIndex

    RocksDBIndex.create(tmp).close()  # the three families, as RocketMQ creates them
    opts = rocksdict.Options(raw_mode=True)
    cfs = {name: rocksdict.Options(raw_mode=True) for name in ("timer", "trans")}
    db = rocksdict.Rdict(str(tmp), options=opts, column_families=cfs)
    wo = rocksdict.WriteOptions()
    wo.disable_wal = True
    m = messages(n)
    times, offsets = m["times"].tolist(), m["offsets"].tolist()
    batch = rocksdict.WriteBatch(raw_mode=True)
    pending = 0
    for i in range(n):
        t, off, topic = times[i], offsets[i], TOPICS[i % 4]
        h, v, o, u = _L.pack(t - t % HOUR), _L.pack(t), _L.pack(off), _uniq(i)
        batch.put(h + f"@{topic}@K@key-{i}@{u}@".encode() + o, v)
        batch.put(h + f"@{topic}@T@Tag{i % 16}@{u}@".encode() + o, v)
        batch.put(h + f"@{topic}@U@{u}@".encode() + o, v)
        pending += 3
        if pending >= 100_000:
            db.write(batch, wo)
            batch = rocksdict.WriteBatch(raw_mode=True)
            pending = 0
    batch.put(b"lastOffsetPy", _L.pack(offsets[-1]))
    batch.put(b"lastStoreTimeStamp", _L.pack(times[-1]))
    db.write(batch, wo)
    db.flush()
    db.compact_range(None, None)
    db.close()
    (tmp / "rocksdict-config.json").unlink(missing_ok=True)
    os.replace(tmp, path)
    return path


def index_store(workdir: Path, n: int) -> Path:
    """IndexFiles of the same ``n`` messages, RocketMQ's default geometry (cached)."""
    import rmqarrow

    path = workdir / f"indexfile-{n}"
    if path.exists():
        return path
    tmp = workdir / f".indexfile-{n}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    m = messages(n)
    step = 1_000_000
    with rmqarrow.IndexService(tmp, 5_000_000, 20_000_000) as s:
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            s.build_index_batch(
                pa.table(
                    {
                        "topic": [TOPICS[i % 4] for i in range(lo, hi)],
                        "keys": [f"key-{i}" for i in range(lo, hi)],
                        "uniq_key": [_uniq(i) for i in range(lo, hi)],
                        "commit_log_offset": m["offsets"][lo:hi],
                        "store_timestamp": m["times"][lo:hi],
                        "sys_flag": np.zeros(hi - lo, np.int32),
                    }
                )
            )
    os.replace(tmp, path)
    return path


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def run(full: bool, workdir: Path, quick: bool | None = None) -> list[dict[str, Any]]:
    import rmqarrow
    from rmqarrow.rocksdb import RocksDBIndex

    n = 100_000 if (quick if quick is not None else not full) else 6_700_000
    rows: list[dict[str, Any]] = []
    cached = (workdir / f"rocksdb-{n}").exists(), (workdir / f"indexfile-{n}").exists()
    t_build_r, rdb = timed(lambda: rocksdb_index(workdir, n))
    t_build_i, store = timed(lambda: index_store(workdir, n))
    note = f"{n:,} messages; {_load()}"
    records, entries = 3 * n, 2 * n
    out = workdir / "out"
    shutil.rmtree(out, ignore_errors=True)
    with rmqarrow.open(store) as s:
        t_i, _ = timed(lambda: s.export(out / "indexfile"))
    rows.append(
        row("export records", "IndexFile -> Parquet (entries)", entries, t_i, f"baseline; {note}")
    )
    with rmqarrow.open(rdb) as s:
        t_r, manifest = timed(lambda: s.export(out / "rocksdb"))
    assert manifest["tables"]["rocksdb_records"]["rows"] == records
    rows.append(row("export records", "RocksDB index -> Parquet (records)", records, t_r, note))
    shutil.rmtree(out, ignore_errors=True)

    m = messages(n)
    rng = np.random.default_rng(3)
    picks = rng.integers(0, n, 50).tolist()
    times = m["times"].tolist()
    lat_r: list[float] = []
    with RocksDBIndex.open(rdb) as r:
        for i in picks:
            begin = times[i] - times[i] % 86_400_000
            t = time.perf_counter()
            a = r.query_offset(TOPICS[i % 4], f"key-{i}", 64, begin, begin + 86_400_000, "K")
            lat_r.append(time.perf_counter() - t)
            assert a is not None and a.phy_offsets == [i * 300], (i, a)
    lat_i: list[float] = []
    with rmqarrow.IndexService(store, 5_000_000, 20_000_000, read_only=True) as svc:
        svc.load()
        for i in picks:
            t = time.perf_counter()
            res = svc.query_offset(TOPICS[i % 4], f"key-{i}", 64)
            lat_i.append(time.perf_counter() - t)
            assert i * 300 in res.phy_offsets, (i, res)
    rows.append(
        row(
            "key query",
            "IndexFile queryOffset (median of 50)",
            1,
            _median_ms(lat_i) / 1000,
            f"baseline; {note}",
            latency_ms=round(_median_ms(lat_i), 3),
        )
    )
    rows.append(
        row(
            "key query",
            "RocksDB queryOffset, type K, 1 day (median of 50)",
            1,
            _median_ms(lat_r) / 1000,
            note,
            latency_ms=round(_median_ms(lat_r), 3),
        )
    )
    if not any(cached):  # a cached index was not built by this run: no build figures
        rows.append(
            row(
                "build",
                "IndexFile build_index_batch (entries)",
                entries,
                t_build_i,
                f"baseline; {note}",
            )
        )
        rows.append(row("build", "RocksDB write batches (records)", records, t_build_r, note))
    return set_ratios(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="100,000 messages (make bench)")
    size.add_argument("--full", action="store_true", help="6.7 M messages, 20.1 M records")
    parser.add_argument("--workdir", type=Path, help="where to keep the generated indexes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rmqarrow-bench-rocksdb-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        print_rows(run(args.full, workdir, quick=args.quick))


if __name__ == "__main__":
    main()
