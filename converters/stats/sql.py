"""Index-health analysis in DuckDB SQL over the ``files``/``slots``/``entries`` views.

Every figure is one SQL statement (the constants below, also the README's examples) run
on a :func:`rmqarrow.converters.duckdb.sql.connect` connection, with values only as bound
parameters:

``TIME_RANGE_SQL`` / ``TIME_RANGE_SUMMARY_SQL``
    what was indexed between ``t1`` and ``t2`` (ms, inclusive), with no key: something
    RocketMQ's own index cannot answer (apache/rocketmq#4710);
``SLOT_LOAD_SQL``
    how many slots hold k entries, next to the Poisson expectation
    ``hash_slot_num * P(X = k)``, ``X ~ Poisson(entries / hash_slot_num)``, summed over files;
``CHAIN_DEPTH_SQL``
    how many entries sit at depth d of their chain (a lookup of that entry reads d
    entries), next to ``hash_slot_num * P(X >= d)``;
``HOT_KEYS_SQL``
    the key hashes with the most entries;
``FILES_SQL``
    per file: time coverage, entry and slot fill, out-of-order store times;
``FILE_DEPTH_SQL``
    per file: the chain depth of its median entry, of its 99th percentile and deepest
    (so thousands of files show which ones lookups walk far in);
``CHAIN_CHECK_SQL``
    whether every chain is what RocketMQ's ``putKey`` leaves (each entry's ``prev_index``
    the previous position of its slot, each slot head its last position, no negative time
    diff): the condition under which the set-based SQL lookup equals the pointer walk;
    any count above 0 names a damaged file (``rmqarrow verify`` tells more);
``DUPLICATES_SQL`` / ``DUPLICATES_SUMMARY_SQL``
    physical offsets indexed more than once (several keys of one message, or the same
    key re-indexed, e.g. after a broker restart replays the commit log).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from rmqarrow.converters.duckdb.lazy import statement_error
from rmqarrow.converters.duckdb.runner import fetch_arrow, registered, run_arrow
from rmqarrow.converters.duckdb.sql import EXPECTED_KEY_TEXTS_SQL
from rmqarrow.converters.stats.html import render_html
from rmqarrow.converters.stats.streamed import scan

from rmqarrow._progress import ProgressCallback
from rmqarrow.errors import InvalidValueError, RmqArrowError
from rmqarrow.format.times import format_time
from rmqarrow.kernels.hashing import index_key_hashes

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import duckdb
    from rmqarrow.converters.stats.streamed import Figures

__all__ = [
    "CHAIN_CHECK_SQL",
    "CHAIN_DEPTH_SQL",
    "DUPLICATES_SQL",
    "DUPLICATES_SUMMARY_SQL",
    "FILES_SQL",
    "FILE_DEPTH_SQL",
    "HOT_KEYS_SQL",
    "HOT_KEY_OFFSETS_SQL",
    "SLOT_LOAD_SQL",
    "SUMMARY_SQL",
    "TIME_RANGE_SQL",
    "TIME_RANGE_SUMMARY_SQL",
    "IndexStats",
    "chain_check",
    "chain_depth",
    "collect",
    "duplicates",
    "duplicates_summary",
    "file_coverage",
    "file_depth",
    "hot_keys",
    "named_hot_keys",
    "slot_load",
    "summary",
    "time_range",
    "time_range_summary",
]

SUMMARY_SQL = """
SELECT (SELECT count(*) FROM files) AS files,
       count(*) AS entries,
       (SELECT sum(index_num - 1) FROM files)::BIGINT AS capacity,
       count(DISTINCT key_hash) AS distinct_key_hashes,
       count(DISTINCT phy_offset) AS distinct_offsets,
       min(store_timestamp) AS first_store_ms,
       max(store_timestamp) AS last_store_ms
FROM entries
"""

TIME_RANGE_SQL = """
SELECT file_name, position, key_hash, phy_offset, store_timestamp
FROM entries
WHERE store_timestamp BETWEEN $t1 AND $t2
ORDER BY store_timestamp, phy_offset, file_name, position
LIMIT $limit
"""

TIME_RANGE_SUMMARY_SQL = """
SELECT file_name, count(*) AS entries,
       count(DISTINCT key_hash) AS key_hashes,
       min(store_timestamp) AS first_ms, max(store_timestamp) AS last_ms,
       min(phy_offset) AS min_offset, max(phy_offset) AS max_offset
FROM entries
WHERE store_timestamp BETWEEN $t1 AND $t2
GROUP BY file_name
ORDER BY file_name
"""

# The inputs of the two distributions: each file's slot count ``s`` and entries ``n``, and
# how many slots (summed over files) hold each non-zero load.  The streamed figures of a
# large dataset (rmqarrow.converters.stats.streamed) register tables of these names and
# run the same tails.
_LOAD_INPUTS = """
file_fill AS (
  SELECT f.file_name, f.hash_slot_num::DOUBLE AS s, count(e.position)::DOUBLE AS n
  FROM files f LEFT JOIN entries e ON e.file_name = f.file_name
  GROUP BY f.file_name, f.hash_slot_num
),
load_slots AS (
  SELECT load, count(*) AS slots
  FROM (SELECT count(*) AS load FROM entries GROUP BY file_name, slot) GROUP BY load
)"""

# Poisson pmf as exp(-l + k ln l - lgamma(k+1)); a file with no entries has all slots at 0.
_SLOT_LOAD_TAIL = """
observed AS (
  SELECT load, slots FROM load_slots
  UNION ALL
  SELECT 0, (SELECT sum(s) FROM file_fill)::BIGINT
            - (SELECT coalesce(sum(slots), 0) FROM load_slots)
),
ks AS (SELECT range AS k FROM range(0, (SELECT coalesce(max(load), 0) FROM load_slots) + 2)),
expected AS (
  SELECT k, sum(CASE WHEN n = 0 THEN CASE WHEN k = 0 THEN s ELSE 0 END
                     ELSE s * exp(-(n / s) + k * ln(n / s) - lgamma(k + 1)) END) AS poisson
  FROM ks CROSS JOIN file_fill GROUP BY k
)
SELECT ks.k::INTEGER AS load, coalesce(o.slots, 0)::BIGINT AS slots, e.poisson AS poisson_slots
FROM ks LEFT JOIN observed o ON o.load = ks.k JOIN expected e ON e.k = ks.k
ORDER BY load
"""

# The entries at depth d are one per slot holding d or more: counted from the slots' loads
# (a group-by), not by numbering every chain (a window sort of every entry).
_CHAIN_DEPTH_TAIL = """
deepest AS (SELECT coalesce(max(load), 0) AS depth FROM load_slots),
observed AS (
  SELECT r.range AS depth, sum(p.slots) AS entries
  FROM range(1, (SELECT depth FROM deepest) + 1) r JOIN load_slots p ON p.load >= r.range
  GROUP BY r.range
),
ks AS (SELECT range AS k FROM range(0, (SELECT depth FROM deepest) + 2)),
pmf AS (
  SELECT file_fill.file_name, s, k,
         CASE WHEN n = 0 THEN CASE WHEN k = 0 THEN 1.0 ELSE 0.0 END
              ELSE exp(-(n / s) + k * ln(n / s) - lgamma(k + 1)) END AS p
  FROM ks CROSS JOIN file_fill
),
tail AS (  -- P(X >= d) = 1 - P(X <= d - 1)
  SELECT file_name, s, k + 1 AS d,
         greatest(1.0 - sum(p) OVER (PARTITION BY file_name ORDER BY k), 0.0) AS p_at_least
  FROM pmf
),
expected AS (SELECT d, sum(s * p_at_least) AS poisson FROM tail GROUP BY d)
SELECT e.d::INTEGER AS depth, coalesce(o.entries, 0)::BIGINT AS entries,
       e.poisson AS poisson_entries
FROM expected e LEFT JOIN observed o ON o.depth = e.d
WHERE e.d <= (SELECT depth FROM deepest) + 1
ORDER BY depth
"""

SLOT_LOAD_SQL = f"WITH {_LOAD_INPUTS},{_SLOT_LOAD_TAIL}"
CHAIN_DEPTH_SQL = f"WITH {_LOAD_INPUTS},{_CHAIN_DEPTH_TAIL}"

HOT_KEYS_SQL = """
WITH top AS (  -- the keys first (a count per hash), then the details of those alone
  SELECT key_hash, count(*) AS entries FROM entries
  GROUP BY key_hash ORDER BY entries DESC, key_hash LIMIT $top
)
SELECT t.key_hash, t.entries, count(DISTINCT e.phy_offset) AS offsets,
       count(DISTINCT e.file_name) AS files,
       min(e.store_timestamp) AS first_ms, max(e.store_timestamp) AS last_ms
FROM top t JOIN entries e ON e.key_hash = t.key_hash
GROUP BY t.key_hash, t.entries
ORDER BY t.entries DESC, t.key_hash
"""

# Per file from its entries in position order (``file_entries``, also registered by the
# streamed figures), then joined to the header of every file.
_FILE_ENTRIES = """
ordered AS (
  SELECT file_name, store_timestamp,
         store_timestamp < max(store_timestamp) OVER (
           PARTITION BY file_name ORDER BY position
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS backwards
  FROM entries
),
file_entries AS (
  SELECT file_name, count(*) AS entries, min(store_timestamp) AS first_entry_ms,
         max(store_timestamp) AS last_entry_ms,
         count(*) FILTER (WHERE backwards) AS out_of_order
  FROM ordered GROUP BY file_name
)"""

_FILES_TAIL = """
SELECT f.file_name, f.begin_timestamp, f.end_timestamp,
       (f.end_timestamp::DOUBLE - f.begin_timestamp::DOUBLE) / 1000.0 AS span_s,
       coalesce(p.entries, 0)::BIGINT AS entries, (f.index_num - 1)::BIGINT AS capacity,
       CASE WHEN f.index_num > 1 THEN coalesce(p.entries, 0) / (f.index_num - 1) END AS fill,
       f.hash_slot_count::BIGINT AS slots_used, f.hash_slot_num::BIGINT AS hash_slot_num,
       f.hash_slot_count / f.hash_slot_num AS slot_fill,
       p.first_entry_ms, p.last_entry_ms, coalesce(p.out_of_order, 0)::BIGINT AS out_of_order
FROM files f LEFT JOIN file_entries p ON p.file_name = f.file_name
ORDER BY f.file_name
"""

FILES_SQL = f"WITH {_FILE_ENTRIES}{_FILES_TAIL}"

# A slot of load L holds one entry at each depth 1..L: per file, the entries at depth d are
# its slots of load >= d (group-bys, no window over every entry), then the first depth
# whose running count reaches 50 % / 99 % of the file's entries.
FILE_DEPTH_SQL = """
WITH loads AS (SELECT file_name, count(*) AS load FROM entries GROUP BY file_name, slot),
per_load AS (SELECT file_name, load, count(*) AS slots FROM loads GROUP BY file_name, load),
at_depth AS (
  SELECT p.file_name, r.range AS depth, sum(p.slots) AS n
  FROM per_load p
  JOIN range(1, (SELECT coalesce(max(load), 0) FROM per_load) + 1) r ON p.load >= r.range
  GROUP BY p.file_name, r.range
),
running AS (
  SELECT file_name, depth,
         sum(n) OVER (PARTITION BY file_name ORDER BY depth) AS reached,
         sum(n) OVER (PARTITION BY file_name) AS total
  FROM at_depth
)
SELECT file_name,
       min(depth) FILTER (WHERE reached >= 0.5 * total)::INTEGER AS depth_p50,
       min(depth) FILTER (WHERE reached >= 0.99 * total)::INTEGER AS depth_p99,
       max(depth)::INTEGER AS depth_max
FROM running GROUP BY file_name ORDER BY file_name
"""

CHAIN_CHECK_SQL = """
WITH links AS (
  SELECT prev_index,
         coalesce(lag(position) OVER (PARTITION BY file_name, slot ORDER BY position), 0)
           AS expected_prev
  FROM entries
),
last AS (SELECT file_name, slot, max(position) AS head FROM entries GROUP BY file_name, slot)
SELECT (SELECT count(*) FROM links WHERE prev_index <> expected_prev) AS broken_links,
       (SELECT count(*) FROM last l FULL JOIN slots s
          ON s.file_name = l.file_name AND s.slot = l.slot
        WHERE l.head IS DISTINCT FROM s.head) AS wrong_heads,
       (SELECT count(*) FROM entries WHERE time_diff < 0) AS negative_time_diffs
"""

DUPLICATES_SQL = """
WITH top AS (  -- the offsets first (a count per offset), then the details of those alone
  SELECT phy_offset, count(*) AS entries FROM entries
  GROUP BY phy_offset HAVING count(*) > 1
  ORDER BY entries DESC, phy_offset LIMIT $top
)
SELECT t.phy_offset, t.entries, count(DISTINCT e.key_hash) AS key_hashes,
       count(DISTINCT e.file_name) AS files,
       t.entries - count(DISTINCT (e.key_hash, e.file_name)) AS same_key_repeats
FROM top t JOIN entries e ON e.phy_offset = t.phy_offset
GROUP BY t.phy_offset, t.entries
ORDER BY t.entries DESC, t.phy_offset
"""

DUPLICATES_SUMMARY_SQL = """
WITH per_offset AS (
  SELECT phy_offset, count(*) AS n FROM entries GROUP BY phy_offset
),
pairs AS (SELECT key_hash, phy_offset, count(*) AS n FROM entries GROUP BY ALL)
SELECT (SELECT count(*) FROM per_offset) AS distinct_offsets,
       (SELECT count(*) FROM per_offset WHERE n > 1) AS offsets_with_several_entries,
       (SELECT coalesce(sum(n - 1), 0) FROM per_offset)::BIGINT AS extra_entries,
       (SELECT count(*) FROM pairs WHERE n > 1) AS repeated_key_offset_pairs,
       (SELECT coalesce(sum(n - 1), 0) FROM pairs)::BIGINT AS repeated_key_offset_entries
"""


def _table(con: duckdb.DuckDBPyConnection, sql: str, **params: Any) -> pa.Table:
    return fetch_arrow(con, sql, params or None)


def _row(con: duckdb.DuckDBPyConnection, sql: str, **params: Any) -> dict[str, Any]:
    rows: list[dict[str, Any]] = _table(con, sql, **params).to_pylist()
    return rows[0]


def summary(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Counts and the time span of the whole index."""
    return _row(con, SUMMARY_SQL)


def time_range(con: duckdb.DuckDBPyConnection, t1: int, t2: int, limit: int = 1000) -> pa.Table:
    """Entries stored between ``t1`` and ``t2`` (ms, inclusive), oldest first, at most ``limit``."""
    return _table(con, TIME_RANGE_SQL, t1=t1, t2=t2, limit=limit)


def time_range_summary(con: duckdb.DuckDBPyConnection, t1: int, t2: int) -> pa.Table:
    """Per file: how much was indexed between ``t1`` and ``t2``."""
    return _table(con, TIME_RANGE_SUMMARY_SQL, t1=t1, t2=t2)


def slot_load(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """``load, slots, poisson_slots`` for load 0 .. max + 1."""
    return _table(con, SLOT_LOAD_SQL)


def chain_depth(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """``depth, entries, poisson_entries`` for depth 1 .. max + 1."""
    return _table(con, CHAIN_DEPTH_SQL)


def hot_keys(con: duckdb.DuckDBPyConnection, top: int = 10) -> pa.Table:
    """The ``top`` key hashes by number of entries."""
    return _table(con, HOT_KEYS_SQL, top=top)


#: Offsets of each hot hash whose messages are read to name it (every message of a key
#: names it; a few find the names of a hash several keys share), and names shown per hash.
_NAME_OFFSETS = 32
_NAMES_SHOWN = 5

#: Up to ``$per`` offsets of each of the hashes ``$hashes`` (the hot keys alone).
HOT_KEY_OFFSETS_SQL = """
SELECT DISTINCT phy_offset FROM (
  SELECT phy_offset,
         row_number() OVER (PARTITION BY key_hash ORDER BY phy_offset) AS n
  FROM entries WHERE list_contains($hashes, key_hash)
) WHERE n <= $per
"""


def _named_or_none(con: duckdb.DuckDBPyConnection, hot: pa.Table) -> pa.Table | None:
    """:func:`named_hot_keys`, or None when the messages cannot be read (a damaged
    CommitLog: the check against the log, which reads every message, is what reports
    that, in one line); the names are a convenience, the figures stand."""
    import duckdb

    try:
        return named_hot_keys(con, hot)
    except (RmqArrowError, duckdb.Error, OSError) as exc:
        found = statement_error(exc) if isinstance(exc, duckdb.Error) else exc
        if isinstance(found, KeyboardInterrupt):
            raise found from None
        _log.debug("hot keys left unnamed: the messages could not be read (%s)", found)
        return None


def named_hot_keys(con: duckdb.DuckDBPyConnection, hot: pa.Table) -> pa.Table | None:
    """``hot`` with a ``name`` column: the ``TOPIC#KEY`` texts of each hash, read from the
    messages at a few of its offsets by the rule the index is built with
    (:func:`rmqarrow.converters.log_check_sql.expected_key_texts_sql`); several, sorted and
    space-separated, when keys share a hash; null when none is found.  None when ``con``
    has no ``messages`` (no CommitLog): the hashes are all there is."""
    import duckdb

    try:
        con.execute("SELECT 1 FROM messages LIMIT 0")
    except duckdb.Error:
        return None
    hashes = [int(h) for h in hot.column("key_hash").to_pylist()]
    names: dict[int, set[str]] = {h: set() for h in hashes}
    if hashes:
        offsets = _table(con, HOT_KEY_OFFSETS_SQL, hashes=hashes, per=_NAME_OFFSETS)
        sample = _table(
            con,
            "SELECT * FROM messages WHERE list_contains($offsets, physical_offset)",
            offsets=offsets.column("phy_offset").to_pylist(),
        )
        with duckdb.connect() as scratch:
            texts = run_arrow(scratch, EXPECTED_KEY_TEXTS_SQL, inputs={"messages": sample})
        keys = texts.column("key")
        for key, h in zip(keys.to_pylist(), index_key_hashes(keys).tolist(), strict=True):
            if int(h) in names:
                names[int(h)].add(key)
    shown = []
    for h in hashes:
        found = sorted(names[h])
        more = f" (+{len(found) - _NAMES_SHOWN} more)" if len(found) > _NAMES_SHOWN else ""
        shown.append(" ".join(found[:_NAMES_SHOWN]) + more if found else None)
    return hot.append_column("name", pa.array(shown, pa.string()))


def file_coverage(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """Time coverage, fill and out-of-order count of every file."""
    return _table(con, FILES_SQL)


def file_depth(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """``file_name, depth_p50, depth_p99, depth_max`` of every file holding entries."""
    return _table(con, FILE_DEPTH_SQL)


def duplicates(con: duckdb.DuckDBPyConnection, top: int = 10) -> pa.Table:
    """The ``top`` physical offsets with more than one entry."""
    return _table(con, DUPLICATES_SQL, top=top)


def chain_check(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Counts of chain links, slot heads and time diffs a RocketMQ writer never leaves."""
    return _row(con, CHAIN_CHECK_SQL)


def duplicates_summary(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """How many offsets and (key hash, offset) pairs are indexed more than once."""
    return _row(con, DUPLICATES_SUMMARY_SQL)


@dataclass(frozen=True)
class IndexStats:
    """Everything ``rmqarrow stats`` reports."""

    summary: dict[str, Any]
    files: pa.Table
    slot_load: pa.Table
    chain_depth: pa.Table
    hot_keys: pa.Table
    duplicates_summary: dict[str, Any]
    duplicates: pa.Table
    chain_check: dict[str, Any]
    time_range: tuple[int, int] | None = None
    time_range_summary: pa.Table | None = None
    time_range_entries: pa.Table | None = None
    #: per-file chain-depth percentiles (:data:`FILE_DEPTH_SQL`) for the HTML page; None
    #: when the figures were streamed from a dataset, whose pass counts slot loads over
    #: all files at once.  Not in :meth:`to_json`, which is the same whichever way the
    #: figures were computed.
    file_depth: pa.Table | None = None

    @property
    def time_range_note(self) -> str | None:
        """What to say when the ``between`` window holds no entry: where the store's
        entries are (None when the window holds some, or none was asked for)."""
        if self.time_range is None or self.time_range_summary is None:
            return None
        if self.time_range_summary.num_rows:
            return None

        t1, t2 = self.time_range
        first, last = self.summary.get("first_store_ms"), self.summary.get("last_store_ms")
        spans = (
            "the store holds no entries"
            if first is None or last is None
            else f"the store spans {format_time(first)} to {format_time(last)}"
        )
        return f"no entries between {format_time(t1)} and {format_time(t2)} ({spans})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "summary": self.summary,
            "files": self.files.to_pylist(),
            "slot_load": self.slot_load.to_pylist(),
            "chain_depth": self.chain_depth.to_pylist(),
            "hot_keys": self.hot_keys.to_pylist(),
            "duplicates_summary": self.duplicates_summary,
            "duplicates": self.duplicates.to_pylist(),
            "chain_check": self.chain_check,
        }
        if self.time_range is not None:
            assert self.time_range_summary is not None and self.time_range_entries is not None
            out["time_range"] = {
                "t1": self.time_range[0],
                "t2": self.time_range[1],
                "files": self.time_range_summary.to_pylist(),
                "entries": self.time_range_entries.to_pylist(),
            }
        return out

    def _repr_html_(self) -> str:
        """The ``stats --html`` page (without the fsck banner: no check was run), so a
        notebook shows the figures as the report does."""
        return render_html(self, fragment=True)


#: DuckDB's working memory while :func:`collect` runs: its group-bys, distinct counts,
#: windows and sorts over every entry (120 M rows in six default files) spill to a
#: temporary directory beyond it, rather than taking most of the machine's memory (the
#: default limit is 80 % of RAM).  ``RMQARROW_STATS_MEMORY`` overrides it (e.g. ``4GB``).
MEMORY_LIMIT = "1GB"


@contextlib.contextmanager
def bounded_memory(con: duckdb.DuckDBPyConnection, limit: str | None = None) -> Iterator[None]:
    """Within the block, ``con`` works in at most ``limit`` of memory (only ever lowered: a
    smaller limit already set stays), spilling to a new temporary directory removed after;
    the connection's settings are restored (but for a temporary directory DuckDB has
    spilled to, which it will not switch away from)."""
    import duckdb

    limit = limit or os.environ.get("RMQARROW_STATS_MEMORY") or MEMORY_LIMIT
    wanted = _size(limit)
    names = ("memory_limit", "temp_directory", "preserve_insertion_order")
    old = {n: str(con.execute(f"SELECT current_setting('{n}')").fetchall()[0][0]) for n in names}
    with tempfile.TemporaryDirectory(prefix="rmqarrow-stats-") as spill:
        try:
            con.execute(f"SET temp_directory = '{_quote(spill)}'")
            if wanted < _size(old["memory_limit"]):
                con.execute(f"SET memory_limit = '{wanted}B'")
            con.execute("SET preserve_insertion_order = false")
            yield
        finally:
            for name, value in old.items():
                try:
                    con.execute(f"SET {name} = '{_quote(value)}'")
                except duckdb.NotImplementedException:
                    # DuckDB keeps a temporary directory it has spilled to for the life of
                    # the connection ("cannot switch ... after the current one has been
                    # used"): the setting stays; the directory goes when this block ends.
                    if name != "temp_directory":
                        raise


def _quote(text: str) -> str:
    return text.replace("'", "''")


_UNITS = {
    "": 1,
    "B": 1,
    "BYTES": 1,
    "KB": 10**3,
    "KIB": 2**10,
    "MB": 10**6,
    "MIB": 2**20,
    "GB": 10**9,
    "GIB": 2**30,
    "TB": 10**12,
    "TIB": 2**40,
}


def _size(text: str) -> int:
    """Bytes of a size such as ``1GB``, ``1.5 GiB`` or ``1000000B``."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", text)
    if m is None or m.group(2).upper() not in _UNITS:
        raise InvalidValueError(f"not a memory size: {text!r}; expected e.g. 1GB or 512MiB")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def collect(
    con: duckdb.DuckDBPyConnection,
    *,
    top: int = 10,
    between: tuple[int, int] | None = None,
    limit: int = 100,
    dataset: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> IndexStats:
    """Run every analysis; ``between=(t1, t2)`` adds the key-less time-range scan.

    ``dataset``, the exported dataset ``con`` reads, lets the figures over every entry be
    computed by :mod:`rmqarrow.converters.stats.streamed` in memory that does not grow
    with the store (same figures; the statements above answer where its layout does not
    allow it).  DuckDB works within :data:`MEMORY_LIMIT` meanwhile (see
    :func:`bounded_memory`).
    """
    with bounded_memory(con):  # ``progress`` counts the passes over a dataset's rows
        extra: dict[str, Any] = {}
        if between is not None:
            t1, t2 = between
            extra = {
                "time_range": (t1, t2),
                "time_range_summary": time_range_summary(con, t1, t2),
                "time_range_entries": time_range(con, t1, t2, limit),
            }
        figures = None
        if dataset is not None:
            figures = scan(dataset, top=top, progress=progress)
        if figures is not None:
            result = _from_figures(con, figures, extra)
        else:
            result = _collect_sql(con, top, extra)
        named = _named_or_none(con, result.hot_keys)
    return result if named is None else dataclasses.replace(result, hot_keys=named)


def _collect_sql(con: duckdb.DuckDBPyConnection, top: int, extra: dict[str, Any]) -> IndexStats:
    """Every figure by the statements above (a store loaded in DuckDB)."""
    return IndexStats(
        summary=summary(con),
        files=file_coverage(con),
        slot_load=slot_load(con),
        chain_depth=chain_depth(con),
        hot_keys=hot_keys(con, top),
        duplicates_summary=duplicates_summary(con),
        duplicates=duplicates(con, top),
        chain_check=chain_check(con),
        file_depth=file_depth(con),
        **extra,
    )


def _from_figures(
    con: duckdb.DuckDBPyConnection, figures: Figures, extra: dict[str, Any]
) -> IndexStats:
    """The streamed figures as :class:`IndexStats`: the per-file table and the two
    distributions by the tails of their statements over the registered inputs."""
    inputs = {
        "file_entries": figures.file_entries,
        "file_fill": figures.file_fill,
        "load_slots": figures.load_slots,
    }
    with registered(con, inputs):
        files = _table(con, _FILES_TAIL)
        loads = _table(con, f"WITH {_SLOT_LOAD_TAIL}")
        depths = _table(con, f"WITH {_CHAIN_DEPTH_TAIL}")
    return IndexStats(
        summary={
            "files": figures.files,
            "entries": figures.entries,
            "capacity": figures.capacity,
            "distinct_key_hashes": figures.distinct_key_hashes,
            "distinct_offsets": figures.distinct_offsets,
            "first_store_ms": figures.first_store_ms,
            "last_store_ms": figures.last_store_ms,
        },
        files=files,
        slot_load=loads,
        chain_depth=depths,
        hot_keys=figures.hot_keys,
        duplicates_summary=figures.duplicates_summary,
        duplicates=figures.duplicates,
        chain_check=figures.chain_check,
        **extra,
    )
