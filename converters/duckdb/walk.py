"""The SQL of the DuckDB lookup: the key-hash macro and the native walk as joins.

Constant text only: nothing user-supplied is ever formatted into it (keys and values
arrive as macro arguments bound from parameters, or as rows of a registered table).

It reads two relations that :mod:`rmqarrow.converters.duckdb.sql` registers on each connection:

``_rmq_files``
    one row per index file: ``newest_rank`` (0 = newest, Java string order of names),
    ``file_name``, ``begin_timestamp``, ``end_timestamp``, ``newer_min_begin`` (the least
    ``begin_timestamp`` of every newer file; Long.MAX for the newest), ``hash_slot_num``,
    ``index_count``, ``min_store_timestamp`` and ``min_time_diff`` of its entries;
``_rmq_entries``
    the entries with ``newest_rank`` in place of ``file_name`` (an int join key instead
    of a string: the string costs more than the rest of a bulk join together).

The walk of ``IndexService.queryOffset`` (``rmqarrow/_rules.py``) becomes:

* a file is searched when ``max_num > 0``, it holds entries, ``[begin, end]`` touches its
  time span (``isTimeMatched``) and no newer file has ``begin_timestamp < begin``
  (``begin <= newer_min_begin``: the walk over files stops after such a file);
* the chain of slot ``h % hash_slot_num`` is the slot's entries in descending position
  (in every file RocketMQ writes); the walk ends at the first entry older than ``begin``
  or with a negative time diff.  When the file holds no such entry for this ``begin``
  (``begin <= min_store_timestamp`` and ``min_time_diff >= 0``, the usual case), the hits
  are just the slot's entries with hash ``h`` and time in range (``plain``, one equi-join);
  otherwise only positions above the last such entry count (``cut``, a window max over
  the slot's entries);
* hits are ordered newest file first, position descending; the first ``max_num`` kept.
"""

from __future__ import annotations

from rmqarrow.format.java import JAVA_LONG_MAX

__all__ = ["HASH_MACROS_SQL", "LOOKUP_COLUMNS", "LOOKUP_MACROS_SQL", "walk_sql"]

#: Columns of ``index_lookup`` (``index_lookups`` puts ``query_id`` first).
LOOKUP_COLUMNS = ("ordinal", "phy_offset", "file_name", "position", "store_timestamp", "key_hash")

#: ``_rmq_utf16_hash``: Java's String.hashCode over UTF-16 code units (unsigned 32-bit);
#: ``index_key_hash``: abs() of it as a signed int32, Integer.MIN_VALUE (abs = 2**31) -> 0.
#: The key is split into characters in one pass (``string_split(k, '')``): linear in its
#: length (a ``substring`` per character was quadratic: 320 k characters took 89 s).
HASH_MACROS_SQL = """
CREATE OR REPLACE TEMP MACRO _rmq_utf16_hash(k) AS list_reduce(
  flatten(list_transform(
    list_transform(list_filter(string_split(k, ''), lambda c: c <> ''), lambda c: unicode(c)),
    lambda cp: CASE WHEN cp > 65535
      THEN [55296 + ((cp - 65536) >> 10), 56320 + ((cp - 65536) & 1023)]
      ELSE [cp] END)),
  lambda acc, u: (acc * 31 + u) % 4294967296, 0::BIGINT);
CREATE OR REPLACE TEMP MACRO index_key_hash(k) AS
  (abs(((_rmq_utf16_hash(k) + 2147483648) % 4294967296) - 2147483648) % 2147483648)::INTEGER;
"""


def walk_sql(queries: str, *, by_slot: bool) -> str:
    """The native lookup over ``queries`` (query_id, key_hash, max_num, begin_ms, end_ms).

    ``by_slot`` adds the slot to the plain join: one query then prunes a slot-sorted
    Parquet file to one row group; many queries would only pay for reading the column.
    """
    slot_join = "AND e.slot = qf.slot" if by_slot else ""
    return f"""
WITH q AS ({queries}),
qf AS (
  SELECT q.query_id, q.key_hash, q.max_num, q.begin_ms, q.end_ms, f.newest_rank,
         (q.key_hash % f.hash_slot_num)::INTEGER AS slot,
         (q.begin_ms > f.min_store_timestamp OR f.min_time_diff < 0) AS needs_cut
  FROM q CROSS JOIN _rmq_files f
  WHERE q.max_num > 0 AND f.index_count > 1
    AND q.begin_ms <= f.newer_min_begin
    AND ((q.begin_ms < f.begin_timestamp AND q.end_ms > f.end_timestamp)
         OR (q.begin_ms >= f.begin_timestamp AND q.begin_ms <= f.end_timestamp)
         OR (q.end_ms >= f.begin_timestamp AND q.end_ms <= f.end_timestamp))
),
plain AS (
  SELECT qf.query_id, qf.max_num, qf.newest_rank, e.position, e.phy_offset,
         e.store_timestamp, e.key_hash
  FROM qf JOIN _rmq_entries e
    ON e.newest_rank = qf.newest_rank AND e.key_hash = qf.key_hash {slot_join}
  WHERE NOT qf.needs_cut AND e.store_timestamp BETWEEN qf.begin_ms AND qf.end_ms
),
cut_window AS (
  SELECT qf.query_id, qf.max_num, qf.newest_rank, e.position, e.phy_offset,
         e.store_timestamp, e.key_hash,
         e.key_hash = qf.key_hash AND e.time_diff >= 0
           AND e.store_timestamp BETWEEN qf.begin_ms AND qf.end_ms AS hit,
         coalesce(max(CASE WHEN e.store_timestamp < qf.begin_ms OR e.time_diff < 0
                           THEN e.position END)
                  OVER (PARTITION BY qf.query_id, qf.newest_rank), 0) AS cutoff
  FROM qf JOIN _rmq_entries e ON e.newest_rank = qf.newest_rank AND e.slot = qf.slot
  WHERE qf.needs_cut
),
hits AS (
  SELECT * FROM plain
  UNION ALL
  SELECT query_id, max_num, newest_rank, position, phy_offset, store_timestamp, key_hash
  FROM cut_window WHERE hit AND position > cutoff
),
ranked AS (
  SELECT query_id,
         row_number() OVER (PARTITION BY query_id ORDER BY newest_rank, position DESC)
           AS ordinal,
         max_num, newest_rank, phy_offset, position, store_timestamp, key_hash
  FROM hits
  QUALIFY ordinal <= max_num
)
SELECT r.query_id, r.ordinal, r.phy_offset, f.file_name, r.position, r.store_timestamp,
       r.key_hash
FROM ranked r JOIN _rmq_files f ON f.newest_rank = r.newest_rank
"""


_ONE_QUERY = (
    "SELECT 0 AS query_id, index_key_hash(lookup_key) AS key_hash, "
    "lookup_max_num::BIGINT AS max_num, {begin}::BIGINT AS begin_ms, {end}::BIGINT AS end_ms"
)
_MANY_QUERIES = (
    "SELECT query_id, key_hash::INTEGER AS key_hash, max_num::BIGINT AS max_num, "
    "begin_ms::BIGINT AS begin_ms, end_ms::BIGINT AS end_ms FROM query_table(tbl)"
)
_ONE = walk_sql(_ONE_QUERY.format(begin="lookup_begin", end="lookup_end"), by_slot=True)
_ONE_ALL_TIME = walk_sql(_ONE_QUERY.format(begin="0", end=str(JAVA_LONG_MAX)), by_slot=True)
_MANY = walk_sql(_MANY_QUERIES, by_slot=False)
_COLUMNS = ", ".join(LOOKUP_COLUMNS)

#: ``index_lookup(key, max_num[, begin_ms, end_ms])`` and ``index_lookups('table')``.
LOOKUP_MACROS_SQL = f"""
CREATE OR REPLACE TEMP MACRO index_lookup(lookup_key, lookup_max_num) AS TABLE
  (SELECT {_COLUMNS} FROM ({_ONE_ALL_TIME}) ORDER BY ordinal),
(lookup_key, lookup_max_num, lookup_begin, lookup_end) AS TABLE
  (SELECT {_COLUMNS} FROM ({_ONE}) ORDER BY ordinal);
CREATE OR REPLACE TEMP MACRO index_lookups(tbl) AS TABLE
  SELECT * FROM ({_MANY}) ORDER BY query_id, ordinal;
"""
