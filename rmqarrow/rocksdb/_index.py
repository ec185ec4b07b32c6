"""``RocksDBIndex``: RocketMQ's RocksDB message index, written as the broker writes it and
read offline, read-only."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rmqarrow._closing import Closing
from rmqarrow.errors import ClosedIndexError, InvalidValueError, ReadOnlyIndexError
from rmqarrow.format.broker_config import DEFAULT_MAX_MSGS_NUM_BATCH, DEFAULT_MAX_QUERY_DAYS
from rmqarrow.rocksdb._db import Shadow, create_db, open_shadow, resolve_db_dir, rocksdict_module
from rmqarrow.rocksdb._explain import explain_query
from rmqarrow.rocksdb._layout import (
    BOOKKEEPING_KEYS,
    DEFAULT_CF,
    DELETE_END_SUFFIX,
    HOUR_MS,
    KEY_SPLIT,
    LAST_OFFSET_PY,
    LAST_STORE_TIMESTAMP,
    TYPE_UNIQUE,
    hour_of,
    java_utf8,
    long_bytes,
)
from rmqarrow.rocksdb._rules import records_for_message
from rmqarrow.rocksdb._walk import (
    QueryOffsetResult,
    RocksDBQuery,
    Search,
    bookkeeping,
    query_offset,
    search,
)

__all__ = [
    "DEFAULT_MAX_MSGS_NUM_BATCH",
    "DEFAULT_MAX_QUERY_DAYS",
    "RocksDBIndex",
    "answer_queries",
]

_log = logging.getLogger(__name__)

#: ``deleteExpiredIndex`` removes this many hours
EXPIRY_HOURS = 168


class _IterSource:
    """One column family of an open database as a :class:`~._walk.KeySource`."""

    def __init__(self, db: Any) -> None:
        self._db = db

    def seek(self, key: bytes) -> Iterator[tuple[bytes, bytes]]:
        it = self._db.iter()
        it.seek(key)
        while it.valid():
            yield it.key(), it.value()
            it.next()

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(key)
        return value


class RocksDBIndex(Closing):
    """A RocksDB message index: :meth:`create` a new one, or :meth:`open` one read-only.

    ``max_msgs_num_batch`` and ``max_query_days`` are the broker's ``maxMsgsNumBatch`` and
    ``maxRocksDBIndexQueryDays`` (they shape :meth:`query_offset`).
    """

    def __init__(
        self,
        path: Path,
        db: Any,
        shadow: Shadow | None,
        *,
        max_msgs_num_batch: int,
        max_query_days: int,
    ) -> None:
        for name, v in (
            ("max_msgs_num_batch", max_msgs_num_batch),
            ("max_query_days", max_query_days),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InvalidValueError(f"{name} must be an int >= 0, got {v!r}")
        self.path = path
        self._db = db
        self._shadow = shadow
        self.max_msgs_num_batch = max_msgs_num_batch
        self.max_query_days = max_query_days
        self._last_delete_hour = 0

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
        max_query_days: int = DEFAULT_MAX_QUERY_DAYS,
    ) -> RocksDBIndex:
        """A new database at ``path`` (absent or empty) to write with :meth:`build_index`."""
        p = Path(path)
        return cls(
            p,
            create_db(p),
            None,
            max_msgs_num_batch=max_msgs_num_batch,
            max_query_days=max_query_days,
        )

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
        max_query_days: int = DEFAULT_MAX_QUERY_DAYS,
    ) -> RocksDBIndex:
        """The database at ``path`` (or a broker root's ``rocksdbstore/``), read-only: the
        directory is never written or locked, also while a broker holds it open."""
        source = resolve_db_dir(Path(path))
        shadow = open_shadow(source)
        return cls(
            source,
            shadow.db,
            shadow,
            max_msgs_num_batch=max_msgs_num_batch,
            max_query_days=max_query_days,
        )

    # -- state ------------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        return self._shadow is not None

    @property
    def closed(self) -> bool:
        return self._db is None

    def close(self) -> None:
        if self._shadow is not None:
            self._shadow.close()
        elif self._db is not None:
            self._db.close()
        self._db = None

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "writable"
        return f"<RocksDBIndex {str(self.path)!r} {mode}{' closed' if self.closed else ''}>"

    def _live(self) -> Any:
        if self._db is None:
            raise ClosedIndexError(f"{self.path}: this RocksDB index was closed; open it again")
        return self._db

    def _writable(self) -> Any:
        db = self._live()
        if self._shadow is not None:
            raise ReadOnlyIndexError(
                f"{self.path}: opened read-only; use RocksDBIndex.create for a database to write"
            )
        return db

    def _family(self, name: str) -> Any:
        db = self._live()
        if name == DEFAULT_CF:
            return db
        try:
            return db.get_column_family(name)
        except Exception:  # rocksdict raises a bare Exception for an unknown family
            raise InvalidValueError(
                f"{self.path}: no column family {name!r}; it has "
                f"{', '.join(self.column_families())}"
            ) from None

    def column_families(self) -> list[str]:
        """The families the database holds (RocketMQ: default, timer, trans)."""
        names: list[str] = rocksdict_module().Rdict.list_cf(self._db_path())
        return names

    def _db_path(self) -> str:
        db = self._live()
        return str(db.path())

    # -- reading ----------------------------------------------------------------------------

    def pairs(self, family: str = DEFAULT_CF) -> list[tuple[bytes, bytes]]:
        """Every ``(key, value)`` of ``family`` in RocksDB (bytewise) order."""
        return list(self.iter_pairs(family))

    def iter_pairs(
        self, family: str = DEFAULT_CF, start: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """The pairs of ``family`` streamed in order, from ``start`` (or the first key)."""
        items: Iterator[tuple[bytes, bytes]] = self._family(family).items(from_key=start)
        return items

    def get(self, key: bytes, family: str = DEFAULT_CF) -> bytes | None:
        value: bytes | None = self._family(family).get(key)
        return value

    def last_record_key(self) -> bytes | None:
        """The last index record's key (the bookkeeping keys skipped), None when empty."""
        it = self._live().iter()
        it.seek_to_last()
        while it.valid():
            k: bytes = it.key()
            if k not in BOOKKEEPING_KEYS:
                return k
            it.prev()
        return None

    def estimate_records(self) -> int:
        """RocksDB's estimate of the ``default`` family's keys (no scan), bookkeeping
        excluded."""
        n = self._live().property_int_value("rocksdb.estimate-num-keys")
        return max(int(n or 0) - len(BOOKKEEPING_KEYS), 0)

    @property
    def last_offset_py(self) -> int | None:
        """``lastOffsetPy`` (0 when absent, None when unreadable)."""
        return bookkeeping(self.get)[1]

    @property
    def last_store_timestamp(self) -> int | None:
        """``lastStoreTimeStamp`` (0 when absent, None when unreadable)."""
        return bookkeeping(self.get)[0]

    def run_search(self, plan: Search) -> list[int] | None:
        """One ``queryOffsetForIndex`` over the ``default`` family."""
        return search(_IterSource(self._live()), plan)

    def query_offset(
        self,
        topic: str,
        key: str,
        max_num: int,
        begin: int,
        end: int,
        index_type: str | None = None,
        last_key: str | None = None,
        *,
        now: int | None = None,
    ) -> QueryOffsetResult | None:
        """``IndexRocksDBStore.queryOffset``: None where RocketMQ returns null."""
        return self.answer(
            RocksDBQuery(topic, key, max_num, begin, end, index_type, last_key), now=now
        )

    def answer(self, q: RocksDBQuery, *, now: int | None = None) -> QueryOffsetResult | None:
        """:meth:`query_offset` for one :class:`RocksDBQuery`."""
        self._live()
        return query_offset(
            q,
            self.get,
            self.run_search,
            max_msgs_num_batch=self.max_msgs_num_batch,
            max_query_days=self.max_query_days,
            now=now,
        )

    def explain(self, q: RocksDBQuery, *, now: int | None = None) -> list[str]:
        """Lines saying why :meth:`answer` gives what it gives (an empty answer above all:
        a refused window, no such bucket, the type fallback, the cap)."""
        return explain_query(
            _IterSource(self._live()),
            q,
            max_msgs_num_batch=self.max_msgs_num_batch,
            max_query_days=self.max_query_days,
            now=now,
        )

    def answers(
        self, queries: Sequence[RocksDBQuery], *, now: int | None = None
    ) -> list[QueryOffsetResult | None]:
        return [self.answer(q, now=now) for q in queries]

    # -- writing ----------------------------------------------------------------------------

    def build_index(
        self,
        topic: str | None,
        keys: str | None,
        tags: str | None,
        uniq_key: str | None,
        commit_log_offset: int,
        store_timestamp: int,
        sys_flag: int,
        msg_size: int,
    ) -> int:
        """``buildIndex`` then ``writeRecordsForIndex`` for one message, as one write batch;
        returns the records written (0 for a dropped message)."""
        db = self._writable()
        last_ts, last_off = bookkeeping(self.get)
        records = records_for_message(
            topic,
            keys,
            tags,
            uniq_key,
            commit_log_offset,
            store_timestamp,
            sys_flag,
            msg_size,
            last_off or 0,
        )
        if records is None:
            if commit_log_offset < 0 or msg_size <= 0:
                _log.warning(
                    "message at offset %d (size %d) not indexed: RocketMQ refuses "
                    "a negative offset or a size <= 0",
                    commit_log_offset,
                    msg_size,
                )
            return 0
        batch = rocksdict_module().WriteBatch(raw_mode=True)
        written = 0
        for r in records:
            hour = hour_of(r.store_time)
            if hour <= 0:
                _log.info(
                    "record %r at offset %d skipped: store time %d is before 1970-01-01T01:00Z",
                    r.middle,
                    r.offset,
                    r.store_time,
                )
                continue
            key = long_bytes(hour) + java_utf8(r.middle) + long_bytes(r.offset)
            batch.put(key, long_bytes(r.store_time))
            written += 1
        last = records[-1]
        if last.index_type == TYPE_UNIQUE:
            if last_off is None or last.offset > last_off:
                batch.put(LAST_OFFSET_PY, long_bytes(last.offset))
            if last_ts is None or last.store_time > last_ts:
                batch.put(LAST_STORE_TIMESTAMP, long_bytes(last.store_time))
        db.write(batch)
        return written

    def delete_records_for_index(self, store_time: int, hours: int) -> bool:
        """``deleteRecordsForIndex``: the records of the hours ``[hour(store_time) - hours h,
        hour(store_time)]`` removed in one range delete; False when nothing was attempted
        or RocksDB refused the range (a negative start)."""
        db = self._writable()
        if store_time < 0 or hours <= 0:
            return False
        end = hour_of(store_time)
        start = end - hours * HOUR_MS
        sep = KEY_SPLIT.encode()
        begin_key = long_bytes(start) + sep
        end_key = long_bytes(end) + sep + DELETE_END_SUFFIX
        if begin_key > end_key:
            _log.info(
                "range delete of hours %d..%d refused, as RocksDB refuses it: the start "
                "key sorts after the end key",
                start,
                end,
            )
            return False
        db.delete_range(begin_key, end_key)
        return True

    def delete_expired_index(self, commitlog_creation_time: int) -> bool:
        """``deleteExpiredIndex`` given the earliest CommitLog file's creation time (ms)."""
        hour = hour_of(commitlog_creation_time - HOUR_MS)
        if hour == self._last_delete_hour:
            return False
        done = self.delete_records_for_index(hour, EXPIRY_HOURS)
        self._last_delete_hour = hour
        return done

    def flush(self) -> None:
        """Write the memtables to table files (a writer's database, for a copy)."""
        self._writable().flush()


def answer_queries(
    source: str | os.PathLike[str],
    queries: Sequence[RocksDBQuery],
    *,
    max_msgs_num_batch: int = DEFAULT_MAX_MSGS_NUM_BATCH,
    max_query_days: int = DEFAULT_MAX_QUERY_DAYS,
    now: int | None = None,
) -> list[QueryOffsetResult | None]:
    """The native engine: the database at ``source`` opened read-only, each query walked."""
    with RocksDBIndex.open(
        source, max_msgs_num_batch=max_msgs_num_batch, max_query_days=max_query_days
    ) as index:
        return index.answers(queries, now=now)
