"""Readers and exports of a store a writer is appending to.

A writer process appends batches (entries, then slot heads, then the header) to one
file while this process queries it through read-only handles opened once (the CLI's
open-then-query pattern) and exports it.  Every answer must be a complete newest-first
run of the key's offsets, never shorter than what the handle saw when it was opened;
every dataset must import byte-identical to the file at the count it recorded.

Before: a reader that saw 5 offsets answered ``[]`` once the writer moved the slot head
past its cached count (30% of lookups missed entries), and 2 of 46 exports wrote a
dataset ``import`` rejected (``slot 5 head 11 points past the entries``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.importer import import_dataset
from rmqarrow.converters.parquet.manifest import read_manifest

from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService

SLOTS, INDEX = 16, 60_000
KEYS = 7
BATCH = 40
RECORDS = 25_000  # 50 000 entries, one file
PAUSE_AT = 20_000  # the writer waits here until the reader has exported twice

WRITER = f"""
import os, sys, time
import pyarrow as pa
from rmqarrow.index.service import IndexService
def batch(a, b):
    return pa.table({{
        "topic": ["T"] * (b - a),
        "keys": [f"k{{i % {KEYS}}}" for i in range(a, b)],
        "uniq_key": [f"u{{i}}" for i in range(a, b)],
        "commit_log_offset": pa.array([1000 + 100 * i for i in range(a, b)], pa.int64()),
        "store_timestamp": pa.array([1_700_000_000_000 + i for i in range(a, b)], pa.int64()),
        "sys_flag": pa.array([0] * (b - a), pa.int32()),
    }})
s = IndexService(sys.argv[1], {SLOTS}, {INDEX}, 1 << 20)
s.load()
for a in range(0, {RECORDS}, {BATCH}):
    if a == {PAUSE_AT}:  # a slow reader still gets its exports of the live file
        waited = time.monotonic()
        while not os.path.exists(sys.argv[3]) and time.monotonic() - waited < 120:
            time.sleep(0.01)
    s.build_index_batch(batch(a, a + {BATCH}))
    if a == 0:
        open(sys.argv[2], "w").close()
    time.sleep(0.004)
s.close()
"""


def _offsets(key: int, records: int) -> list[int]:
    """The key's offsets among the first ``records`` records, newest first."""
    return [1000 + 100 * i for i in range(records - 1, -1, -1) if i % KEYS == key]


def _check(answer: list[int], key: int, at_open: int) -> int:
    """A complete newest-first run of the key's offsets, at least ``at_open`` long."""
    assert len(answer) >= at_open
    if answer:
        newest = (answer[0] - 1000) // 100
        assert answer == _offsets(key, newest + 1)
    return len(answer)


def _reference(tmp: Path, records: int) -> bytes:
    """The file as the writer leaves it after ``records`` records, built in one go.

    Built once per count: two exports taken after the writer's last batch share a count,
    and building into the same directory again would append (RocketMQ re-indexes the
    record at ``endPhyOffset``), giving a file that is not the writer's."""
    d = tmp / f"ref{records}"
    if d.exists():
        (path,) = [p for p in d.iterdir() if p.name.isdigit()]
        return path.read_bytes()
    s = IndexService(d, SLOTS, INDEX, 1 << 20)
    s.load()
    for a in range(0, records, BATCH):
        b = min(a + BATCH, records)
        s.build_index_batch(
            pa.table(
                {
                    "topic": ["T"] * (b - a),
                    "keys": [f"k{i % KEYS}" for i in range(a, b)],
                    "uniq_key": [f"u{i}" for i in range(a, b)],
                    "commit_log_offset": pa.array(
                        [1000 + 100 * i for i in range(a, b)], pa.int64()
                    ),
                    "store_timestamp": pa.array(
                        [1_700_000_000_000 + i for i in range(a, b)], pa.int64()
                    ),
                    "sys_flag": pa.array([0] * (b - a), pa.int32()),
                }
            )
        )
    path = s.files[0].path
    s.close()
    return path.read_bytes()


def test_readers_and_exports_of_a_live_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    ready, exported = tmp_path / "ready", tmp_path / "exported"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store), str(ready), str(exported)])
    try:
        while not ready.exists():
            assert writer.poll() is None, "the writer died"
            time.sleep(0.01)
        (path,) = list(store.iterdir())
        answers = exports = 0
        datasets: list[Path] = []
        while writer.poll() is None or answers < 50:
            f = IndexFile.open(path, SLOTS, INDEX)  # opened once, queried while it grows
            at_open = {k: len(f.select_phy_offsets(f"T#k{k}", 1 << 20)) for k in range(KEYS)}
            for _ in range(3):
                for k in range(KEYS):
                    got = f.select_phy_offsets(f"T#k{k}", 1 << 20)
                    at_open[k] = _check(got, k, at_open[k])
                    table = f.select_phy_offsets_many([f"T#k{k}"], 1 << 20)
                    _check(table.column("phy_offset").to_pylist(), k, at_open[k])
                    answers += 1
            f.close()
            if writer.poll() is None and exports < 8:
                ds = tmp_path / f"ds{exports}"
                export_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
                datasets.append(ds)
                exports += 1
                if exports == 2:
                    exported.touch()
        assert writer.wait(60) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
    assert exports >= 2
    for ds in datasets:
        count = read_manifest(ds)["source"]["files"][0]["index_count"]
        (back,) = import_dataset(ds, tmp_path / f"{ds.name}-back")
        assert (count - 1) % 2 == 0
        assert back.read_bytes() == _reference(tmp_path, (count - 1) // 2), ds.name
    # the writer finished: the store is whole and consistent
    f = IndexFile.open(path, SLOTS, INDEX)
    assert f.entry_count == 2 * RECORDS
    assert int(np.count_nonzero(f.regions.slots)) == f.hash_slot_count
    for k in range(KEYS):
        assert f.select_phy_offsets(f"T#k{k}", 1 << 20) == _offsets(k, RECORDS)
    f.close()
