"""``rmqarrow query --explain``: why a lookup returned what it did, file by file.

Built on :func:`rmqarrow.verify.diagnose.trace_query` (the native walk through its step
hook).  For each file, newest first, one line: skipped by its time span, slot empty, the
chain cut by an entry older than ``begin``, the key's hash present only outside the time
window, ``max_num`` reached, the end of the chain, a damaged chain; files the walk never
reached and damaged files left out are named too.  With a CommitLog the hits are read back
and hash collisions (another key with the same hash) are counted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rmqarrow.commitlog import resolve
from rmqarrow.format.layout import map_regions
from rmqarrow.format.queries import Query
from rmqarrow.format.times import format_time
from rmqarrow.index.health import FileHealth
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.kernels.walk import (
    CYCLE,
    EMPTY_SLOT,
    END_OF_CHAIN,
    MAX_NUM_REACHED,
    NEGATIVE_TIME_DIFF,
    OLDER_THAN_BEGIN,
    PAST_THE_FILE,
    PREV_INVALID,
)
from rmqarrow.verify.diagnose import FileTrace, trace_query

__all__ = ["BROKER_BATCH_CAP", "explain_query"]

#: RocketMQ's ``maxMsgsNumBatch`` default: the broker answers at most this many offsets
BROKER_BATCH_CAP = 64
_SPAN_SKIP = "file time span outside [begin, end]"


def _hash_outside_window(f: IndexFile, key_hash: int, q: Query) -> list[int]:
    """Store times of entries with the key's hash that lie outside ``[begin, end]``."""
    m = map_regions(f.path, f.geometry, writable=False)
    try:
        e = m.entries[1 : max(f.index_count, 1)]
        where = np.flatnonzero(e["key_hash"].astype(np.int64) == key_hash)
        diffs = e["time_diff"][where].astype(np.int64)
        del e
    finally:
        m.close()
    times = [f.begin_timestamp + int(d) * 1000 for d in diffs]
    return [t for t in times if not q.begin <= t <= q.end]


def _file_line(f: IndexFile, ft: FileTrace, key_hash: int, q: Query) -> str:
    name = ft.file_name
    hits = len(ft.hits)
    if ft.stop == _SPAN_SKIP:
        return (
            f"{name}: skipped: it holds [{format_time(f.begin_timestamp)}, "
            f"{format_time(f.end_timestamp)}], outside the window"
        )
    if ft.chain_damaged:
        return (
            f"{name}: damaged chain in slot {ft.slot}: the walk read positions "
            f"{ft.walked[:8]} ({ft.stop}) but the slot holds {ft.slot_positions[:8]}; "
            f"{hits} offsets; run `rmqarrow check`"
        )
    if ft.stop == EMPTY_SLOT:
        return f"{name}: slot {ft.slot} is empty: no key with this hash slot in the file"
    text = f"{name}: {hits} offsets from {len(ft.walked)} entries walked in slot {ft.slot}"
    if ft.stop == MAX_NUM_REACHED:
        return f"{text}; stopped: max_num {q.max_num} reached (older matches not read)"
    if ft.stop == OLDER_THAN_BEGIN:
        beyond = [p for p in ft.set_hits if p < ft.cut_position]
        text += (
            f"; chain cut at position {ft.cut_position}: its store time "
            f"{ft.cut_time} is older than begin {q.begin}"
        )
        if beyond:
            text += (
                f"; {len(beyond)} matching entries lie past the cut (out-of-order store "
                "times) and are not returned, as RocketMQ does"
            )
        return text
    if ft.stop in (CYCLE, PAST_THE_FILE, PREV_INVALID, NEGATIVE_TIME_DIFF):
        return f"{text}; stopped: {ft.stop} (damage: run `rmqarrow check`)"
    if ft.stop == END_OF_CHAIN and not hits:
        outside = _hash_outside_window(f, key_hash, q)
        if outside:
            return (
                f"{text}; the key's hash is in the file {len(outside)} times but only "
                f"outside the window (e.g. store time {outside[0]} = "
                f"{format_time(outside[0])})"
            )
        return f"{text}; the key's hash is not in the slot's chain"
    return f"{text}; {ft.stop}"


def explain_query(
    files: Sequence[IndexFile],
    q: Query,
    *,
    skipped: Sequence[FileHealth] = (),
    commitlog: str | os.PathLike[str] | None = None,
) -> list[str]:
    """Lines explaining the native answer to ``q`` over ``files`` (oldest first)."""
    trace = trace_query(files, q)
    by_name = {f.name: f for f in files}
    lines = [
        f"{q.key!r}: hash {trace.key_hash}, window [{q.begin}, {q.end}], max_num "
        f"{q.max_num}: {len(trace.answer)} offsets"
    ]
    for ft in trace.files:
        lines.append(_file_line(by_name[ft.file_name], ft, trace.key_hash, q))
    if len(trace.answer) >= q.max_num:
        why = f"max_num {q.max_num} reached in newer files"
    else:
        stop = next((ft.file_name for ft in trace.files if ft.stops_walk), "a newer file")
        why = (
            f"the walk ends after {stop}, whose begin time is before begin {q.begin} "
            "(RocketMQ's file-stop rule)"
        )
    for ft in trace.unreached:
        more = f"; it holds {len(ft.set_hits)} matching entries" if ft.set_hits else ""
        lines.append(f"{ft.file_name}: not searched: {why}{more}")
    for fh in skipped:
        lines.append(f"{fh.name}: left out: {fh.status}" + (f" ({fh.detail})" if fh.detail else ""))
    if q.max_num > BROKER_BATCH_CAP:
        lines.append(
            f"note: a broker answers at most {BROKER_BATCH_CAP} offsets "
            "(maxMsgsNumBatch); rmqarrow applies no such cap"
        )
    if commitlog is not None and trace.answer and "#" in q.key:
        topic, _, key = q.key.partition("#")
        result = resolve(Path(commitlog), topic, key, list(dict.fromkeys(trace.answer)))
        if result.dropped:
            lines.append(
                f"hash collision: {result.dropped} of the offsets hold another key with "
                f"the same hash (offsets {list(result.dropped_offsets)[:8]})"
            )
        else:
            lines.append("no hash collision: every offset holds this topic and key")
    if not trace.answer and "#" not in q.key:
        lines.append("the key has no '#': RocketMQ indexes TOPIC#KEY; pass --topic")
    return lines
