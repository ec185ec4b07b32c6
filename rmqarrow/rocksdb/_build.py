"""Rebuild the RocksDB message index from a CommitLog, as the broker's ``buildIndex`` would.

Every message record is dispatched in commit-log order with the fields the broker's
``DispatchRequest`` carries (topic, KEYS, TAGS, UNIQ_KEY, offset, store time, sys flag,
size) and written one message a batch (:mod:`._rules`, rules 5-12).  The database is
written into a staging folder beside the destination and renamed into place when
complete, so a crash never leaves a half-built index under the destination's name.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rmqarrow._broker import check_store_writable
from rmqarrow._paths import local_path
from rmqarrow.commitlog import CommitLogReader
from rmqarrow.errors import OutputExistsError
from rmqarrow.rocksdb._index import RocksDBIndex

__all__ = ["RocksDBBuild", "build_from_commitlog"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RocksDBBuild:
    """What a rebuild did: messages read, messages indexed, records written, seconds."""

    path: Path
    messages: int
    indexed: int
    records: int
    seconds: float

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "messages": self.messages,
            "indexed": self.indexed,
            "records": self.records,
            "seconds": round(self.seconds, 3),
        }


def build_from_commitlog(
    commitlog_dir: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    lenient: bool = False,
    progress: Callable[[int], None] | None = None,
    force: bool = False,
) -> RocksDBBuild:
    """A new RocksDB index at ``dest`` (absent or empty) from the CommitLog's messages.

    A ``dest`` in the store of a running RocketMQ broker is refused
    (:func:`rmqarrow._broker.check_store_writable`; ``force`` only for a copy whose
    ``abort`` is left without a ``lock`` file)."""
    out = local_path(dest)
    check_store_writable(out, force=force)
    if out.exists() and any(out.iterdir()):
        raise OutputExistsError(
            f"{out}: exists and is not empty; choose a new directory or remove it first"
        )
    staging = out.parent / f".{out.name}.rmqarrow-building"
    shutil.rmtree(staging, ignore_errors=True)
    started = time.perf_counter()
    messages = indexed = records = 0
    reader = CommitLogReader(commitlog_dir, lenient=lenient)
    try:
        with RocksDBIndex.create(staging) as w:
            for r in reader.records():
                messages += 1
                n = w.build_index(
                    r.topic,
                    r.keys,
                    r.tags,
                    r.uniq_key,
                    r.physical_offset,
                    r.store_timestamp,
                    r.sys_flag,
                    r.total_size,
                )
                indexed += n > 0
                records += n
                if progress is not None and messages % 10_000 == 0:
                    progress(messages)
            w.flush()
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _log.info("%s: %d messages, %d indexed, %d records", out, messages, indexed, records)
    return RocksDBBuild(out, messages, indexed, records, time.perf_counter() - started)
