"""Bounded memory: a multi-file store built from a Parquet file streamed in batches."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rmqarrow import IndexService
from rmqarrow.cli import main

T0 = 1_700_000_000_000
SLOTS, INDEX_NUM = 1024, 4096  # a file holds 4,095 keys: the input fills many files


def write_records(path: Path, n: int) -> int:
    """``n`` records with a UNIQ_KEY and two KEYS tokens each; returns the key count."""
    ids = pa.array(np.arange(n, dtype=np.int64))
    text = pc.cast(ids, pa.string())
    keys = pc.binary_join_element_wise(
        pc.binary_join_element_wise("order-", text, ""),
        pc.binary_join_element_wise("user-", text, ""),
        " ",
    )
    table = pa.table(
        {
            "topic": pa.array(["TopicMemory"] * n),
            "keys": keys,
            "uniq_key": pc.binary_join_element_wise("uniq-0123456789abcdef-", text, ""),
            "commit_log_offset": pa.array(np.arange(n, dtype=np.int64) * 300),
            "store_timestamp": pa.array(T0 + np.arange(n, dtype=np.int64)),
            "sys_flag": pa.array(np.zeros(n, dtype=np.int32)),
        }
    )
    pq.write_table(table, path, row_group_size=10_000)
    return 3 * n


def build_peak(tmp: Path, n: int, batch_rows: int) -> tuple[int, int]:
    """(tracemalloc peak bytes of a CLI build, entries written)."""
    source = tmp / f"records-{n}.parquet"
    keys = write_records(source, n)
    store = tmp / f"store-{n}"
    tracemalloc.start()
    try:
        code = main(
            [
                "build",
                str(store),
                "--from",
                str(source),
                "--batch-rows",
                str(batch_rows),
                "--hash-slot-num",
                str(SLOTS),
                "--index-num",
                str(INDEX_NUM),
            ]
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 0
    with IndexService(store, SLOTS, INDEX_NUM, read_only=True) as s:
        s.load()
        entries = sum(f.entry_count for f in s.files)
        assert len(s.files) == -(-keys // (INDEX_NUM - 1))
    assert entries == keys
    return peak, entries


def test_streamed_build_memory_does_not_grow_with_input(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    small_peak, _ = build_peak(tmp_path, 20_000, 5_000)
    large_peak, entries = build_peak(tmp_path, 200_000, 5_000)
    capsys.readouterr()
    # 600,000 keys over 147 files; the key data alone is ~20 MB and the numeric columns
    # 4.8 MB as numpy, yet the traced peak stays that of one 5,000-row batch.
    assert entries == 600_000
    assert large_peak < 8 * 2**20, large_peak
    assert large_peak < 2 * small_peak + 2**20, (small_peak, large_peak)
