"""Per-file entry facts of an exported dataset, read from the Parquet footers.

Every DuckDB connection needs, per index file, the smallest store time and time diff of
its entries (``_rmq_files``, the walk's file-stop rule).  As SQL that is a full scan of
every entries part: seconds per connection, growing with the store.  An exporter's
parts each hold one file's entries and carry exact min/max statistics for every integer
column, so the same minima come from the footers (kilobytes) instead.  When any row
group lacks statistics, None: the caller keeps the SQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["FACTS_SCHEMA", "entry_facts"]

FACTS_SCHEMA = pa.schema(
    [
        ("newest_rank", pa.int32()),
        ("min_store_timestamp", pa.int64()),
        ("min_time_diff", pa.int32()),
    ]
)


def _part_minima(path: str) -> tuple[int, int] | bool | None:
    """(min store_timestamp, min time_diff) of one part; False without rows; None when a
    row group has no exact statistics."""
    meta = pq.ParquetFile(path).metadata
    names = meta.schema.names
    columns = [names.index(c) for c in ("store_timestamp", "time_diff")]
    lows: list[int | None] = [None, None]
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        if rg.num_rows == 0:
            continue
        for k, c in enumerate(columns):
            stats = rg.column(c).statistics
            if stats is None or not stats.has_min_max:
                return None
            low = int(stats.min)
            current = lows[k]
            lows[k] = low if current is None else min(current, low)
    if lows[0] is None or lows[1] is None:
        return False
    return lows[0], lows[1]


def entry_facts(parts: Mapping[int, Sequence[str]]) -> pa.Table | None:
    """``newest_rank, min_store_timestamp, min_time_diff`` for each rank whose parts
    (``parts[rank]``, each holding only that file's entries) have rows; None when some
    part's statistics cannot tell."""
    rows = []
    for rank, paths in parts.items():
        found = [_part_minima(p) for p in paths]
        if any(f is None for f in found):
            return None
        lows = [f for f in found if isinstance(f, tuple)]
        if lows:
            rows.append(
                {
                    "newest_rank": rank,
                    "min_store_timestamp": min(t for t, _ in lows),
                    "min_time_diff": min(d for _, d in lows),
                }
            )
    return pa.Table.from_pylist(rows, schema=FACTS_SCHEMA)
