"""A store built from the demo stream: several files, rollbacks, out-of-order times."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmqarrow.demo.run import demo_geometry, index_keys_of, read_index_records, write_demo_commitlog
from rmqarrow.index.service import IndexService

MESSAGES = 1500


@dataclass(frozen=True)
class GeneratedStore:
    root: Path
    store: Path
    records: Any  # pyarrow.Table of index records
    keys: list[str]
    hash_slot_num: int
    index_num: int


def build_generated(root: Path, messages: int = MESSAGES, seed: int = 7) -> GeneratedStore:
    """A store built from the demo stream (several files, rollbacks, out-of-order times)."""
    root.mkdir(parents=True, exist_ok=True)
    commitlog, _late = write_demo_commitlog(root, messages, seed)
    records = read_index_records(commitlog)
    hsn, inum = demo_geometry(messages)
    store = root / "store"
    with IndexService(store, hsn, inum) as service:
        service.build_index_batch(records)
        service.flush()
    return GeneratedStore(root, store, records, index_keys_of(records), hsn, inum)


def append_records(g: GeneratedStore, first: int, n: int) -> None:
    """``n`` more records (``first`` ..) put into ``g``'s store as a broker would, after its
    newest message: the newest file grows, new files roll."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = int(pc.max(g.records.column("store_timestamp")).as_py())
    batch = pa.table(
        {
            "topic": ["T"] * n,
            "keys": [f"k{i % 7}" for i in range(first, first + n)],
            "uniq_key": [f"u{i}" for i in range(first, first + n)],
            "commit_log_offset": pa.array([10**9 + 100 * i for i in range(first, first + n)]),
            "store_timestamp": pa.array([ts + i for i in range(first, first + n)], pa.int64()),
            "sys_flag": pa.array([0] * n, pa.int32()),
        }
    )
    service = IndexService(g.store, g.hash_slot_num, g.index_num)
    service.load()
    try:
        service.build_index_batch(batch)
    finally:
        service.close()
