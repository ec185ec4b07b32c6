"""Bulk forms of the IndexFile and IndexService operations (reference version).

Each function here must leave exactly the bytes, and give exactly the answers, of the
one-at-a-time operation it stands for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .hashing import index_key_hashes
from .records import RECORD_COLUMNS, MessageRecord

if TYPE_CHECKING:
    from .indexfile import IndexFile
    from .service import IndexService

__all__ = ["build_index_batch", "put_keys", "select_many"]


def put_keys(
    f: IndexFile,
    keys: pa.Array | pa.ChunkedArray | Sequence[str],
    phy_offsets: np.ndarray | Sequence[int],
    store_timestamps: np.ndarray | Sequence[int],
) -> int:
    hashes = index_key_hashes(keys)
    offsets = np.asarray(phy_offsets, dtype=np.int64)
    stamps = np.asarray(store_timestamps, dtype=np.int64)
    done = 0
    for h, o, t in zip(hashes.tolist(), offsets.tolist(), stamps.tolist(), strict=True):
        if not f._put_hash(h, o, t):
            break
        done += 1
    return done


def select_many(
    f: IndexFile,
    keys: pa.Array | pa.ChunkedArray | Sequence[str],
    max_num: int | np.ndarray,
    begin: int | np.ndarray,
    end: int | np.ndarray,
) -> pa.Table:
    hashes = index_key_hashes(keys)
    n = len(hashes)
    max_nums = np.broadcast_to(np.asarray(max_num, dtype=np.int64), (n,))
    begins = np.broadcast_to(np.asarray(begin, dtype=np.int64), (n,))
    ends = np.broadcast_to(np.asarray(end, dtype=np.int64), (n,))
    query: list[int] = []
    found: list[int] = []
    for i in range(n):
        out: list[int] = []
        f._select_hash(int(hashes[i]), int(max_nums[i]), int(begins[i]), int(ends[i]), out)
        query.extend([i] * len(out))
        found.extend(out)
    return pa.table(
        {"query": pa.array(query, pa.int64()), "phy_offset": pa.array(found, pa.int64())}
    )


def build_index_batch(service: IndexService, records: pa.Table | pa.RecordBatch) -> None:
    columns = {name: records.column(name).to_pylist() for name in RECORD_COLUMNS}
    for row in zip(*columns.values(), strict=True):
        topic, keys, uniq, offset, ts, flag = row
        service.build_index(MessageRecord(topic, keys, uniq, offset, ts, flag or 0))
