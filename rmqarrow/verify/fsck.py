"""``rmqarrow check``: a store's fsck, file by file.

On top of the size and header checks of :mod:`rmqarrow.index.health` it reads every healthy
file's entries and slots and reports chain damage: entries whose ``prev_index`` is off their
slot's chain (:func:`rmqarrow.verify.diagnose.check_chains`), pointers out of range,
forward links (the only way a chain can cycle), negative time diffs; with a CommitLog,
entries whose offset is not the start of any message there.  A file with any of these gets
status ``damaged chains`` (``dangling offsets`` for the CommitLog check).

A damaged CommitLog is reported as such: each damaged spot becomes an entry of its own
(status ``damaged CommitLog``, the CommitLog file and physical offset), and index entries
pointing into the part of the CommitLog that damage left unread are counted as
``unverified``, never as dangling: only an offset inside a part that was read, or past
the log's end, is dangling.  Offsets before the log's oldest file point at messages the
broker's expiry deleted; they are counted as ``expired``, not dangling.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rmqarrow.commitlog import CommitLogReader, CommitLogWarning
from rmqarrow.format.layout import GeometryHint, map_regions
from rmqarrow.index.health import (
    READ_AS_ROCKETMQ,
    FileHealth,
    StoreHealth,
    expired_during_run,
    store_health,
)
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.kernels.put import uncommitted_entries
from rmqarrow.kernels.stream import entry_chunks
from rmqarrow.kernels.walk import committed_slot_heads
from rmqarrow.verify.diagnose import check_chains

__all__ = [
    "DAMAGED_CHAINS",
    "DAMAGED_COMMITLOG",
    "DANGLING",
    "ChainReport",
    "check_store",
    "damage_summary",
]

DAMAGED_CHAINS = "damaged chains"
DANGLING = "dangling offsets"
DAMAGED_COMMITLOG = "damaged CommitLog"


def damage_summary(damaged: list[FileHealth], total: int) -> str:
    """What the readers do with the damaged files: which they skip, which they still read.

    ``query``, ``export`` and ``verify`` skip a file for its size or header only
    (:attr:`FileHealth.skipped_by_readers`); a file with damaged chains or offsets is
    still read, as RocketMQ would read it (``verify`` also reports damaged chains).
    """
    logs = [f for f in damaged if f.status == DAMAGED_COMMITLOG]
    index = [f for f in damaged if f.status != DAMAGED_COMMITLOG]
    skipped = sum(f.skipped_by_readers for f in index)
    misread = sum(f.status in READ_AS_ROCKETMQ for f in index)
    lines = [f"{len(index)} of {total - len(logs)} files damaged:"] if index else []
    if skipped:
        lines.append(
            f"- query, export and verify skip the {skipped} with a bad size or "
            "header (--strict refuses them)"
        )
    if misread:
        lines.append(
            f"- query and export still read the {misread} with a header RocketMQ "
            "misreads, as RocketMQ would: a time-ranged lookup may miss their "
            "entries"
        )
    if len(index) > skipped + misread:
        lines.append(
            f"- query and export still read the {len(index) - skipped - misread} "
            "with damaged chains or offsets, as RocketMQ would (a slot head out of "
            "range is an empty slot): a lookup there may miss entries or return "
            "offsets where no message starts; DuckDB and Spark over an export find "
            "entries by hash and may answer more there (verify reports damaged "
            "chains)"
        )
    if logs:
        lines.append(
            f"{len(logs)} damaged spot(s) in the CommitLog: the rest of each "
            "damaged CommitLog file is not read (query --resolve and the messages "
            "table miss its messages); index entries pointing there are not judged"
        )
    return "\n".join(lines)


@dataclass
class ChainReport:
    """Counts of chain problems in one file (all 0 in a file RocketMQ wrote)."""

    off_chain: int = 0  # prev_index not the previous entry of the slot
    bad_heads: int = 0  # slot head not the slot's newest entry
    out_of_range: int = 0  # prev_index or slot head outside 0..index_count-1
    forward_links: int = 0  # prev_index >= own position (cycles need one)
    negative_time_diffs: int = 0
    dangling: int = 0  # with a CommitLog: offsets that start no message
    #: with a CommitLog: offsets into a part that CommitLog damage left unread
    unverified: int = 0
    #: with a CommitLog: offsets before its oldest file (deleted by the broker's expiry)
    expired: int = 0
    #: heads past the header walked back to committed entries: not damage, a write in
    #: progress or interrupted (the next writable open rolls it back)
    uncommitted_heads: int = 0
    #: entries written past the header's count (a writer killed, or still writing, between
    #: appending them and updating the header): not damage, invisible to RocketMQ
    uncommitted_entries: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def chains_ok(self) -> bool:
        return not (
            self.off_chain
            or self.bad_heads
            or self.out_of_range
            or self.forward_links
            or self.negative_time_diffs
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in (
                "off_chain",
                "bad_heads",
                "out_of_range",
                "forward_links",
                "negative_time_diffs",
                "dangling",
                "unverified",
                "expired",
                "uncommitted_heads",
                "uncommitted_entries",
                "examples",
            )
        }


@dataclass
class _Log:
    """What the CommitLog check knows: message offsets, and the ranges it could not read."""

    messages: np.ndarray  # sorted physical offsets of every message read
    min_offset: int
    unread: list[tuple[int, int]]  # physical [start, end) left unread by damage

    def judge(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Masks over ``offsets``: dangling, unverified (in an unread range), expired."""
        expired = offsets < self.min_offset
        unverified = np.zeros(offsets.size, dtype=bool)
        for a, b in self.unread:
            unverified |= (offsets >= a) & (offsets < b)
        unverified &= ~expired
        dangling = ~_starts_message(self.messages, offsets) & ~unverified & ~expired
        return dangling, unverified, expired


def _read_log(commitlog: Path) -> tuple[_Log, list[FileHealth]]:
    """The CommitLog's message offsets, and one finding per damaged spot (the reader's
    warnings are turned into these findings, never shown raw)."""
    reader = CommitLogReader(commitlog, lenient=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CommitLogWarning)
        parts = [
            file.start_offset + np.asarray(found, dtype=np.int64)
            for file, _buf, found in reader.positions()
        ]
    messages = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    findings = []
    for problem in reader.problems:
        start, end = problem.unread
        fh = FileHealth(
            problem.path,
            _size(problem.path),
            DAMAGED_COMMITLOG,
            f"physical offset {problem.physical_offset}: {problem.reason}; "
            f"offsets {start}..{end - 1} not read",
        )
        findings.append(fh)
    log = _Log(messages, reader.min_offset, [p.unread for p in reader.problems])
    return log, findings


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _chain_report(f: IndexFile, log: _Log | None) -> ChainReport:
    rep = ChainReport()
    damage = check_chains([f], max_examples=3)
    if damage:
        rep.off_chain, rep.bad_heads = damage[0].bad_entries, damage[0].bad_heads
        rep.examples += damage[0].examples
    m = map_regions(f.path, f.geometry, writable=False)
    try:
        count = max(f.index_count, 1)
        heads, rep.uncommitted_heads = committed_slot_heads(m, count)
        rep.uncommitted_entries = uncommitted_entries(m, count)
        rep.out_of_range += int(((heads < 0) | (heads >= count)).sum())
        negative: list[int] = []
        dangling: list[tuple[int, int]] = []
        for a, b in entry_chunks(m, count - 1):  # one chunk resident at a time
            e = m.entries[a:b]
            prev = e["prev_index"].astype(np.int64)
            out = (prev < 0) | (prev >= count)
            rep.out_of_range += int(out.sum())
            rep.forward_links += int(((prev >= np.arange(a, b)) & ~out).sum())
            neg = np.flatnonzero(e["time_diff"] < 0)
            rep.negative_time_diffs += int(neg.size)
            if neg.size and not negative:
                negative.append(a + int(neg[0]))
            if log is not None:
                offsets = e["phy_offset"].astype(np.int64)
                bad, unverified, expired = log.judge(offsets)
                rep.unverified += int(unverified.sum())
                rep.expired += int(expired.sum())
                missing = np.flatnonzero(bad)
                rep.dangling += int(missing.size)
                if missing.size and not dangling:
                    dangling.append((a + int(missing[0]), int(offsets[missing[0]])))
            del e
        if negative and len(rep.examples) < 5:
            rep.examples.append(f"position {negative[0]} has a negative time diff")
        if dangling:
            position, offset = dangling[0]
            rep.examples.append(
                f"position {position} points at offset {offset}, where no message starts"
            )
    finally:
        m.close()
    return rep


def _starts_message(messages: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """For each offset: is it the physical offset of a message (``messages`` sorted)?"""
    if not messages.size:
        return np.zeros(offsets.size, dtype=bool)
    found = np.minimum(np.searchsorted(messages, offsets), messages.size - 1)
    hit: np.ndarray = messages[found] == offsets
    return hit


def check_store(
    store: str | os.PathLike[str],
    geometry: GeometryHint = GeometryHint.NONE,
    *,
    commitlog: str | os.PathLike[str] | None = None,
) -> tuple[StoreHealth, dict[str, ChainReport]]:
    """Every file's health, chain checks included (per healthy file name)."""
    health = store_health(store, geometry)
    log, log_findings = _read_log(Path(commitlog)) if commitlog is not None else (None, [])
    reports: dict[str, ChainReport] = {}
    g = health.geometry
    for fh in health.healthy:
        try:
            with IndexFile.open(fh.path, geometry=g) as f:
                f.pin()  # one header for every check of the file, however it grows
                rep = _chain_report(f, log)
        except FileNotFoundError:
            if fh.path.exists():
                raise
            expired_during_run(fh.path)
            health.files.remove(fh)
            continue
        reports[fh.name] = rep
        _apply(fh, rep)
    health.files.extend(log_findings)
    return health, reports


def _apply(fh: FileHealth, rep: ChainReport) -> None:
    before = fh.detail if fh.status in READ_AS_ROCKETMQ else ""
    if not rep.chains_ok:
        fh.status = DAMAGED_CHAINS
        parts = [
            f"{n} {label}"
            for n, label in (
                (rep.off_chain, "entries off their slot's chain"),
                (rep.bad_heads, "slot heads not at their newest entry"),
                (rep.out_of_range, "pointers out of range"),
                (rep.forward_links, "forward links"),
                (rep.negative_time_diffs, "negative time diffs"),
            )
            if n
        ]
        fh.detail = ", ".join(parts)
    elif rep.dangling:
        fh.status = DANGLING
        fh.detail = f"{rep.dangling} entries point at no message in the CommitLog"
    if before and fh.detail != before:
        fh.detail = f"{fh.detail}; {before}"
    for n, note in (
        (rep.unverified, "point into a part of the CommitLog that damage left unread (not judged)"),
        (
            rep.expired,
            "point before the CommitLog's oldest file (messages the broker's expiry deleted)",
        ),
    ):
        if n:
            fh.detail = f"{fh.detail}; {n} entries {note}" if fh.detail else f"{n} entries {note}"
    if rep.uncommitted_entries:
        note = (
            f"{rep.uncommitted_entries} entries written past the header's indexCount (a "
            "writer killed between appending them and updating the header, or one still "
            "writing): RocketMQ's load trusts the header, so the broker never sees them "
            "and its next put overwrites them; every reader and export read the file as of "
            "its header; the next build or writable open clears them"
        )
        fh.detail = f"{fh.detail}; {note}" if fh.detail else note
    if rep.uncommitted_heads:
        note = (
            f"{rep.uncommitted_heads} slot heads point past the header's indexCount "
            "(a write in progress, or one interrupted by a crash): readers use the "
            "committed entries; the next build or writable open rolls the file back"
        )
        fh.detail = f"{fh.detail}; {note}" if fh.detail else note
