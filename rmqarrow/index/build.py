"""``IndexService.build_index_batch``: ``build_index`` on each record of a table, vectorized.

Keys are expanded by :mod:`rmqarrow.kernels.expand` (UNIQ_KEY, then the KEYS tokens),
rollbacks skipped, the end-offset guard computed as a running maximum, and files rolled
exactly when the one-by-one service rolls them: the same files, bytes and roll timing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from rmqarrow.format.java import JAVA_LONG_MIN
from rmqarrow.kernels.expand import expand_keys, record_columns
from rmqarrow.kernels.hashing import index_key_hashes
from rmqarrow.kernels.put import put_hashes

if TYPE_CHECKING:
    from rmqarrow.index.service import IndexService

__all__ = ["build_index_batch"]
_LONG_MIN = np.int64(JAVA_LONG_MIN)


def build_index_batch(service: IndexService, records: pa.Table | pa.RecordBatch) -> None:
    """``build_index`` on each record in order; the same files, bytes and roll timing."""
    n = records.num_rows
    if n == 0:
        return
    cols = record_columns(records)
    expanded = expand_keys(records, skip=cols.rollback)
    hashes = index_key_hashes(expanded.keys)
    counts = expanded.counts
    key_start = np.cumsum(counts) - counts
    has_keys = counts > 0
    rec_off = cols.commit_log_offset
    rec_ts = cols.store_timestamp
    # a record's key ranges are contiguous: key k belongs to expanded.record[k]
    r0 = 0
    while r0 < n:
        f = service.last_file_for_write()  # at the start of record r0, as build_index
        room = f.geometry.index_num - f.index_count
        r1 = min(n, r0 + max(4 * room, 1 << 16))
        seg_off = rec_off[r0:r1]
        cand = np.where(has_keys[r0:r1], seg_off, _LONG_MIN)
        guard = np.empty(r1 - r0, dtype=np.int64)
        guard[0] = f.end_phy_offset
        if r1 - r0 > 1:
            np.maximum(np.maximum.accumulate(cand[:-1]), f.end_phy_offset, out=guard[1:])
        kept = has_keys[r0:r1] & (seg_off >= guard)
        filled = np.cumsum(np.where(kept, counts[r0:r1], 0))
        j = int(np.searchsorted(filled, room, side="left"))
        last = r0 + j if j < filled.size else r1 - 1
        a, b = int(key_start[r0]), int(key_start[last] + counts[last])
        rec = expanded.record[a:b]
        sel = a + np.flatnonzero(kept[rec - r0])
        rec_sel = expanded.record[sel]
        done = put_hashes(f, hashes[sel], rec_off[rec_sel], rec_ts[rec_sel])
        while done < sel.size:  # the record overflowed: roll mid-record, as put_key fails
            f = service.new_file()
            rest = sel[done:]
            done += put_hashes(f, hashes[rest], rec_off[rec_sel[done:]], rec_ts[rec_sel[done:]])
        r0 = last + 1
