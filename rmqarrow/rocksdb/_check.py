"""``check`` for a RocksDB message index: what RocketMQ would misread or never find.

Findings, each with its kind: ``unparsed_key`` (a key of the ``default`` family that is
neither a record nor bookkeeping: RocketMQ's prefix scans step over or stop at it),
``value_size`` (a value that is not 8 bytes: the record is skipped by every query, a
bookkeeping value fails every query), ``hour_mismatch`` (a record whose store time lies
outside its key's hour: queries look for it in the wrong bucket), ``bookkeeping_behind``
(``lastOffsetPy`` below the highest offset indexed: a broker restarting would index those
messages again; ``lastStoreTimeStamp`` below the newest store time is a warning, RocketMQ
takes it from the last record of a batch only), ``bookkeeping_missing`` and, with a
CommitLog, ``outside_commitlog`` (an hour bucket before the CommitLog's first or after its
last message: left by expiry, which deletes only 168 hours, or from another store).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqarrow.commitlog import CommitLogReader
from rmqarrow.rocksdb._index import RocksDBIndex
from rmqarrow.rocksdb._layout import (
    BOOKKEEPING_KEYS,
    LAST_OFFSET_PY,
    LAST_STORE_TIMESTAMP,
    LONG,
    be_long,
    hour_of,
)
from rmqarrow.rocksdb._records import decode_key

__all__ = ["RocksDBCheck", "RocksDBFinding", "check_rocksdb"]

_SHOWN = 20  # findings kept per kind (the counts are complete)


@dataclass(frozen=True)
class RocksDBFinding:
    kind: str
    key: str  # hex of the key (or its name for bookkeeping)
    detail: str
    error: bool = True  # False: a warning (what RocketMQ itself leaves behind)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "key": self.key,
            "detail": self.detail,
            "severity": "error" if self.error else "warning",
        }


@dataclass
class RocksDBCheck:
    """The result: counts, findings (the first 20 of each kind), and the time spans."""

    path: Path
    records: int = 0
    hours: int = 0
    first_hour: int | None = None
    last_hour: int | None = None
    max_offset: int | None = None
    max_store_time: int | None = None
    last_offset_py: int | None = None
    last_store_timestamp: int | None = None
    commitlog_span: tuple[int, int] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[RocksDBFinding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.error for f in self.findings)

    def add(self, kind: str, key: bytes | str, detail: str, *, error: bool = True) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.counts[kind] <= _SHOWN:
            text = key if isinstance(key, str) else key.hex()
            self.findings.append(RocksDBFinding(kind, text, detail, error))

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "ok": self.ok,
            "records": self.records,
            "hours": self.hours,
            "first_hour": self.first_hour,
            "last_hour": self.last_hour,
            "max_offset": self.max_offset,
            "max_store_time": self.max_store_time,
            "last_offset_py": self.last_offset_py,
            "last_store_timestamp": self.last_store_timestamp,
            "commitlog_span": list(self.commitlog_span) if self.commitlog_span else None,
            "counts": dict(self.counts),
            "findings": [f.to_dict() for f in self.findings],
        }


def check_rocksdb(
    path: str | os.PathLike[str], *, commitlog: str | os.PathLike[str] | None = None
) -> RocksDBCheck:
    """Every key of the ``default`` family checked (streamed); the CommitLog's time span
    compared with the hour buckets when ``commitlog`` is given."""
    with RocksDBIndex.open(path) as index:
        result = RocksDBCheck(index.path)
        hours: set[int] = set()
        for k, v in index.iter_pairs():
            if k in BOOKKEEPING_KEYS:
                continue
            result.records += 1
            d = decode_key(k)
            if d.problem is not None:
                result.add("unparsed_key", k, d.problem)
            if len(v) != LONG.size:
                result.add(
                    "value_size",
                    k,
                    f"value of {len(v)} bytes, expected 8 (a store "
                    "time): every query skips the record",
                )
                continue
            store_time = be_long(v)
            if d.hour is not None:
                hours.add(d.hour)
                if d.problem is None and hour_of(store_time) != d.hour:
                    result.add(
                        "hour_mismatch",
                        k,
                        f"store time {store_time} is not in the "
                        f"key's hour {d.hour}: queries look for it elsewhere",
                    )
            if d.problem is None and d.offset is not None:
                result.max_offset = max(result.max_offset or d.offset, d.offset)
                result.max_store_time = max(result.max_store_time or store_time, store_time)
        _bookkeeping(index, result)
    result.hours = len(hours)
    if hours:
        result.first_hour, result.last_hour = min(hours), max(hours)
    if commitlog is not None:
        _against_commitlog(result, Path(commitlog), sorted(hours))
    return result


def _bookkeeping(index: RocksDBIndex, result: RocksDBCheck) -> None:
    values: dict[bytes, int | None] = {}
    for name in (LAST_OFFSET_PY, LAST_STORE_TIMESTAMP):
        raw = index.get(name)
        if raw is None:
            values[name] = None
            if result.records:
                result.add(
                    "bookkeeping_missing",
                    name.decode(),
                    "absent (reads as 0); RocketMQ never writes lastOffsetPy while "
                    "every message indexed is at offset 0",
                    error=False,
                )
        elif len(raw) != LONG.size:
            values[name] = None
            result.add(
                "value_size",
                name.decode(),
                f"value of {len(raw)} bytes, expected 8: every query returns a null offset list",
            )
        else:
            values[name] = be_long(raw)
    result.last_offset_py = values[LAST_OFFSET_PY]
    result.last_store_timestamp = values[LAST_STORE_TIMESTAMP]
    if result.max_offset is not None and (result.last_offset_py or 0) < result.max_offset:
        result.add(
            "bookkeeping_behind",
            "lastOffsetPy",
            f"{result.last_offset_py or 0} is below the highest offset indexed "
            f"{result.max_offset}: a restarting broker indexes those messages again",
        )
    if (
        result.max_store_time is not None
        and (result.last_store_timestamp or 0) < result.max_store_time
    ):
        result.add(
            "bookkeeping_behind",
            "lastStoreTimeStamp",
            f"{result.last_store_timestamp or 0} is below the newest store time "
            f"indexed {result.max_store_time} (RocketMQ takes it from the last record "
            "of a write batch only)",
            error=False,
        )


def _against_commitlog(result: RocksDBCheck, commitlog: Path, hours: list[int]) -> None:
    first = last = None
    for r in CommitLogReader(commitlog, lenient=True).records():
        t = r.store_timestamp
        first = t if first is None else min(first, t)
        last = t if last is None else max(last, t)
    if first is None or last is None:
        result.add(
            "outside_commitlog",
            str(commitlog),
            "the CommitLog holds no message; every hour bucket is outside it",
            error=bool(hours),
        )
        return
    result.commitlog_span = (first, last)
    lo, hi = hour_of(first), hour_of(last)
    for h in hours:
        if h < lo or h > hi:
            if h < lo:  # expiry deletes only 168 hours: older buckets stay behind
                result.add(
                    "outside_commitlog",
                    str(h),
                    f"hour bucket {h} lies before the "
                    f"CommitLog's first message ({first}): left behind by expiry",
                    error=False,
                )
            else:
                result.add(
                    "outside_commitlog",
                    str(h),
                    f"hour bucket {h} lies after the "
                    f"CommitLog's last message ({last}): not this store's index",
                )
