"""``IndexService.build_index_batch``: ``build_index`` on each record of a table, vectorized.

Keys are expanded by :mod:`rmqarrow.kernels.expand` (UNIQ_KEY, then the KEYS tokens),
rollbacks skipped, the end-offset guard computed as a running maximum, and files rolled
exactly when the one-by-one service rolls them: the same files, bytes and roll timing.

:func:`check_record_values` is for records read from an input file (``build --from``):
it refuses, naming the row, values no broker writes, which the service itself takes as
RocketMQ's does (a negative offset is skipped by the guard, epoch seconds become 1970).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.java import JAVA_LONG_MIN
from rmqarrow.kernels.expand import expand_keys, record_columns
from rmqarrow.kernels.hashing import index_key_hashes
from rmqarrow.kernels.put import put_hashes

if TYPE_CHECKING:
    from rmqarrow.index.service import IndexService

__all__ = ["build_index_batch", "check_record_values"]
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


#: Store times in [10^8, 10^11) are epoch *seconds* (1973..5138) far more likely than
#: milliseconds (1970-01-02..1973-03-03): the window :func:`rmqarrow.format.times.parse_time`
#: refuses too.  Smaller values are left alone (synthetic test times, RocketMQ's 0).
_SECONDS_LOW, _SECONDS_HIGH = 10**8, 10**11


def _utc(ms: int) -> str:
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return "out of range"


def check_record_values(
    records: pa.Table | pa.RecordBatch, *, first_row: int = 1, source: str = "records"
) -> None:
    """Refuse input records no broker writes, in one line naming the row and the fix.

    ``first_row`` is the number of the batch's first record over the whole input, counted
    from 1 (a CSV's header line not counted).  Refused:

    * a negative ``commit_log_offset``: CommitLog offsets start at 0 (RocketMQ's guard would
      skip the record silently, indexing nothing);
    * a negative ``store_timestamp``, or one in the epoch-*seconds* window (10^8..10^11)
      while store times are epoch milliseconds: all of the batch so, or mixed with ms.

    ``IndexService`` itself takes any value, as RocketMQ's does: this is for input files.
    """
    cols = record_columns(records)
    offsets, stamps = cols.commit_log_offset, cols.store_timestamp
    bad = np.flatnonzero(offsets < 0)
    if bad.size:
        i = int(bad[0])
        raise InvalidValueError(
            f"{source}: row {first_row + i}: commit_log_offset {int(offsets[i])} is negative "
            f"({bad.size} such rows in this batch); CommitLog offsets start at 0 (RocketMQ's "
            "guard would skip the record and index nothing): fix the offsets"
        )
    bad = np.flatnonzero(stamps < 0)
    if bad.size:
        i = int(bad[0])
        raise InvalidValueError(
            f"{source}: row {first_row + i}: store_timestamp {int(stamps[i])} is before 1970 "
            f"({bad.size} such rows in this batch); give store times as epoch milliseconds"
        )
    bad = np.flatnonzero((stamps >= _SECONDS_LOW) & (stamps < _SECONDS_HIGH))
    if bad.size:
        i, v = int(bad[0]), int(stamps[bad[0]])
        millis = np.flatnonzero(stamps >= _SECONDS_HIGH)
        mixed = (
            f" while row {first_row + int(millis[0])} holds milliseconds ({int(stamps[millis[0]])})"
            if millis.size
            else ""
        )
        raise InvalidValueError(
            f"{source}: row {first_row + i}: store_timestamp {v} looks like epoch seconds "
            f"({_utc(v * 1000)} as seconds, {_utc(v)} as milliseconds; {bad.size} such rows "
            f"in this batch){mixed}; store times are epoch milliseconds: multiply the "
            "seconds by 1000"
        )
