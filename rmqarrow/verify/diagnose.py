"""Why an engine's answer differs from the native one: traced walks and chain checks.

:func:`trace_query` repeats the native lookup (the one walk of :mod:`rmqarrow.kernels.walk`,
through its step hook) over a store's files, recording for every file whether it was
searched, which positions the walk visited and why it stopped. Beside it, it lists the
slot's entries in descending position (what a valid chain is, and what the SQL engines walk)
and the plain "hash equal and time in range" set. :func:`explain` compares an engine's
answer with these and says what can be told: out-of-order store times cutting a chain early,
the file-stop rule, a damaged chain (the walk and the slot's entries disagree), offsets no
rule accounts for.

:func:`check_chains` scans whole files for damaged chains, vectorized: in a file RocketMQ
wrote, every entry's ``prev_index`` is the previous position of its slot (0 for the first)
and every slot head is the last position of its slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rmqarrow.format.hashing import index_key_hash
from rmqarrow.format.java import java_long
from rmqarrow.format.layout import map_regions
from rmqarrow.format.queries import Query
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.kernels.chains import chain_links
from rmqarrow.kernels.walk import EMPTY_SLOT, OLDER_THAN_BEGIN, committed_slot_heads, walk_chain

__all__ = [
    "ChainDamage",
    "FileTrace",
    "QueryTrace",
    "check_chains",
    "explain",
    "set_answer",
    "trace_query",
]


@dataclass
class FileTrace:
    """The native walk of one query through one file."""

    file_name: str
    searched: bool  # isTimeMatched and a valid slot head
    slot: int
    walked: list[int] = field(default_factory=list)  # positions read, in order
    hits: list[int] = field(default_factory=list)  # positions returned
    stop: str = ""  # why the walk in this file ended
    cut_position: int = 0  # position whose time < begin ended the walk (0: none)
    cut_time: int = 0
    slot_positions: list[int] = field(default_factory=list)  # the slot's entries, desc
    set_hits: list[int] = field(default_factory=list)  # hash equal + time in range, desc
    offsets: dict[int, int] = field(default_factory=dict)  # position -> phy_offset
    times: dict[int, int] = field(default_factory=dict)  # position -> store time read
    stops_walk: bool = False  # file-stop rule: begin_timestamp < begin

    @property
    def chain_damaged(self) -> bool:
        """The walk left the slot's descending entries before a rule ended it."""
        n = len(self.walked)
        if self.stop == "empty slot" and self.slot_positions:
            return True
        if self.walked != self.slot_positions[:n]:
            return True
        cut_short = self.stop in ("max_num reached", "entry older than begin")
        return self.searched and not cut_short and n < len(self.slot_positions)


@dataclass
class QueryTrace:
    query: Query
    key_hash: int
    files: list[FileTrace]  # newest first, only those the walk reached or skipped
    answer: list[int]  # native offsets
    unreached: list[FileTrace]  # older files the file-stop rule or max_num left out


def _slot_entries(m: object, f: IndexFile, slot: int) -> np.ndarray:
    entries = m.entries[1 : max(f.index_count, 1)]  # type: ignore[attr-defined]
    hashes = entries["key_hash"].astype(np.int64)
    slots = np.fmod(hashes, f.geometry.hash_slot_num)
    return np.flatnonzero(slots == slot)[::-1] + 1  # positions, descending


def _trace_file(f: IndexFile, q: Query, h: int, out: list[int]) -> FileTrace:
    slot = h % f.geometry.hash_slot_num
    m = map_regions(f.path, f.geometry, writable=False)
    try:
        ft = FileTrace(f.name, False, slot)
        entries = m.entries
        begin_ts = f.begin_timestamp
        positions = _slot_entries(m, f, slot)
        ft.slot_positions = positions.tolist()
        for p in ft.slot_positions:
            hash_read, offset, diff, _prev = entries[p].item()
            t = java_long(begin_ts + diff * 1000)
            ft.offsets[p], ft.times[p] = offset, t
            if hash_read == h and diff >= 0 and q.begin <= t <= q.end:
                ft.set_hits.append(p)
        ft.stops_walk = f.begin_timestamp < q.begin
        if not f.is_time_matched(q.begin, q.end):
            ft.stop = "file time span outside [begin, end]"
            return ft

        def step(position: int, offset: int, t: int | None, hit: bool) -> None:
            ft.walked.append(position)
            if t is not None:
                ft.offsets[position], ft.times[position] = offset, t
                ft.cut_position, ft.cut_time = position, t
            if hit:
                ft.hits.append(position)

        ft.stop = walk_chain(m, f.state, h, q.max_num, q.begin, q.end, out, step)
        ft.searched = ft.stop != EMPTY_SLOT
        if ft.stop != OLDER_THAN_BEGIN:
            ft.cut_position = ft.cut_time = 0
        return ft
    finally:
        m.close()


def trace_query(files: Sequence[IndexFile], q: Query) -> QueryTrace:
    """The native lookup of ``q`` over ``files`` (oldest first), with every decision."""
    h = index_key_hash(q.key)
    out: list[int] = []
    traces: list[FileTrace] = []
    unreached: list[FileTrace] = []
    stopped = q.max_num <= 0
    for f in reversed(files):
        if stopped:
            ft = _trace_file(f, q._replace(max_num=0), h, [])
            ft.stop = "not reached (an earlier file ended the walk)"
            unreached.append(ft)
            continue
        ft = _trace_file(f, q, h, out)
        traces.append(ft)
        if f.begin_timestamp < q.begin or len(out) >= q.max_num:
            stopped = True
    return QueryTrace(q, h, traces, out, unreached)


def explain(trace: QueryTrace, got: Sequence[int]) -> list[str]:
    """Reasons ``got`` differs from the native answer, as far as the index tells them."""
    reasons: list[str] = []
    native = trace.answer
    q = trace.query
    if sorted(native) == sorted(got) and native != list(got):
        reasons.append(
            "same offsets in a different order (native order: newest file first, "
            "position descending)"
        )
    extra = [o for o in got if o not in native]
    missing = [o for o in native if o not in got]
    for ft in trace.files:
        if ft.chain_damaged:
            reasons.append(
                f"damaged chain in file {ft.file_name} slot {ft.slot}: the native walk read "
                f"positions {_short(ft.walked)} ({ft.stop}) but the slot holds "
                f"{_short(ft.slot_positions)}; engines that read the slot's entries instead "
                "of following prev_index answer differently"
            )
    for ft in trace.files:
        if ft.cut_position:
            beyond = [p for p in ft.set_hits if p < ft.cut_position]
            shown = [ft.offsets[p] for p in beyond]
            if beyond and (not extra or set(shown) & set(extra)):
                reasons.append(
                    f"out-of-order store times: in file {ft.file_name} the native chain stops "
                    f"at position {ft.cut_position} (store time {ft.cut_time} < begin "
                    f"{q.begin}); entries at positions {_short(beyond)} (offsets "
                    f"{_short(shown)}) match key and time but lie past the cut, so the native "
                    "lookup does not return them"
                )
    stop_file = next((ft for ft in trace.files if ft.stops_walk), None)
    late = [(ft, [ft.offsets[p] for p in ft.set_hits]) for ft in trace.unreached if ft.set_hits]
    if stop_file is not None and late and len(native) < q.max_num:
        offs = [o for _, os_ in late for o in os_]
        older = _short([f.file_name for f, _ in late])
        reasons.append(
            f"file-stop rule: the native walk ends after file {stop_file.file_name} (its "
            f"begin_timestamp < begin {q.begin}); older files {older} still hold matching "
            f"offsets {_short(offs)} (out-of-order store times across files)"
        )
    if extra and not any(r.startswith(("out-of-order", "file-stop", "damaged")) for r in reasons):
        reasons.append(
            f"offsets {_short(extra)} are not in the native answer and no native rule explains them"
        )
    if missing and not any(r.startswith("damaged") for r in reasons):
        if len(got) >= q.max_num and len(native) >= q.max_num:
            reasons.append(
                f"both hold max_num={q.max_num} offsets but not the same ones: the "
                "engine's order differs from the native walk"
            )
        else:
            reasons.append(f"native offsets {_short(missing)} are missing from the engine's answer")
    return reasons


def _short(values: Sequence[object], limit: int = 12) -> str:
    items = list(values)
    text = ", ".join(str(v) for v in items[:limit])
    return f"[{text}{', ...' if len(items) > limit else ''}]"


@dataclass(frozen=True)
class ChainDamage:
    """One file's chain problems: entries or slot heads off their slot's order."""

    file_name: str
    bad_entries: int
    bad_heads: int
    examples: list[str]

    def describe(self) -> str:
        return (
            f"{self.file_name}: {self.bad_entries} entries with a prev_index off their "
            f"slot's chain, {self.bad_heads} slot heads not at their slot's newest entry; "
            f"e.g. {'; '.join(self.examples)}"
        )


def check_chains(files: Sequence[IndexFile], max_examples: int = 3) -> list[ChainDamage]:
    """Every file whose chains are not its slots' entries in descending position."""
    damaged = []
    for f in files:
        m = map_regions(f.path, f.geometry, writable=False)
        try:
            n = max(f.index_count, 1) - 1
            # heads past the header (a write in progress or interrupted) as readers see them
            stored, _ = committed_slot_heads(m, n + 1)
            compiled = chain_links(m, n, max_examples)
            if compiled is not None:  # one pass, no sort (same findings)
                count, bad_at, want, heads = compiled
                bad_heads = np.flatnonzero(stored != heads)
                if count or bad_heads.size:
                    prev_of = m.entries["prev_index"]
                    slot_num = f.geometry.hash_slot_num
                    hashes = m.entries["key_hash"]
                    examples = [
                        f"position {p} (slot {int(np.fmod(int(hashes[p]), slot_num))})"
                        f" prev_index {int(prev_of[p])}, expected {int(x)}"
                        for p, x in zip(bad_at.tolist(), want.tolist(), strict=True)
                    ] + [
                        f"slot {s} head {int(stored[s])}, expected {int(heads[s])}"
                        for s in bad_heads[: max(0, max_examples - count)]
                    ]
                    damaged.append(ChainDamage(f.name, count, int(bad_heads.size), examples))
                continue
            e = m.entries[1 : n + 1]
            slot = np.fmod(e["key_hash"].astype(np.int64), f.geometry.hash_slot_num)
            prev = e["prev_index"].astype(np.int64)
            order = np.argsort(slot, kind="stable")
            same = np.zeros(n, dtype=bool)
            same[1:] = slot[order][1:] == slot[order][:-1]
            expected = np.zeros(n, dtype=np.int64)
            expected[order[1:][same[1:]]] = order[:-1][same[1:]] + 1
            bad = np.flatnonzero(prev != expected)
            heads = np.zeros(f.geometry.hash_slot_num, dtype=np.int64)
            last = np.ones(n, dtype=bool)
            last[:-1] = ~same[1:]  # the last of each slot run in (slot, position) order
            ok = slot[order][last] >= 0
            heads[slot[order][last][ok]] = order[last][ok] + 1
            bad_heads = np.flatnonzero(stored != heads)
            if bad.size or bad_heads.size:
                examples = [
                    f"position {p + 1} (slot {int(slot[p])}) prev_index {int(prev[p])}, "
                    f"expected {int(expected[p])}"
                    for p in bad[:max_examples]
                ] + [
                    f"slot {s} head {int(stored[s])}, expected {int(heads[s])}"
                    for s in bad_heads[: max(0, max_examples - int(bad.size))]
                ]
                damaged.append(ChainDamage(f.name, int(bad.size), int(bad_heads.size), examples))
            del e
        finally:
            m.close()
    return damaged


def set_answer(trace: QueryTrace) -> list[int]:
    """What a plain "hash equal and time in range" filter returns, in native order
    (newest file first, position descending), capped at ``max_num``."""
    offsets = [ft.offsets[p] for ft in trace.files + trace.unreached for p in ft.set_hits]
    return offsets[: max(trace.query.max_num, 0)]
