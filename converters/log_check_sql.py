"""The check of an index against its CommitLog, as SQL both engines run.

DuckDB (:func:`rmqarrow.converters.duckdb.sql.check_against_log`) and Spark
(:func:`rmqarrow.converters.spark.log_check.check_against_log`) run these statements over
their ``entries`` and ``messages`` views, so both give the same figures: *dangling*
entries (an ``entries.phy_offset`` that is no message's ``physical_offset``) and
*missing* keys (a key ``IndexService.buildIndex`` puts for a message, with no entry of
that offset and key hash).  The texts are written in the SQL both dialects accept; the one
difference, the function that turns the ``keys`` list into rows, is a parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "CHECK_DANGLING_SQL",
    "CHECK_MISSING_SQL",
    "EXPECTED_KEYS_VIEW",
    "LOG_FACTS_SQL",
    "expected_key_texts_sql",
    "log_check_figures",
]

#: The view holding the expected keys with their hash (the rows of
#: :func:`expected_key_texts_sql` and a ``key_hash`` column).
EXPECTED_KEYS_VIEW = "_rmq_expected_keys"

_EXPECTED_KEY_TEXTS = """
SELECT physical_offset, topic || '#' || uniq_key AS key
FROM messages
WHERE (sys_flag & 12) <> 12 AND uniq_key IS NOT NULL AND uniq_key <> ''
UNION
SELECT physical_offset, topic || '#' || k AS key
FROM (SELECT physical_offset, topic, {unnest}(keys) AS k
      FROM messages WHERE (sys_flag & 12) <> 12)
"""


def expected_key_texts_sql(unnest: str = "unnest") -> str:
    """The keys ``IndexService.buildIndex`` puts for each message of the ``messages`` view:
    every message that is not a rollback (``(sys_flag & 12) != 12``; prepared and commit
    records are indexed) gives ``topic#uniq_key`` (when UNIQ_KEY is present and non-empty)
    and ``topic#k`` for each token of its KEYS list; one row per distinct
    (physical_offset, key).  ``unnest`` is the dialect's list-to-rows function (DuckDB's
    ``unnest``, Spark's ``explode``)."""
    return _EXPECTED_KEY_TEXTS.format(unnest=unnest)


#: Entries whose ``phy_offset`` is the physical offset of no message (dangling).
CHECK_DANGLING_SQL = """
SELECT e.file_name, e.position, e.key_hash, e.phy_offset, e.store_timestamp
FROM entries e
WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.physical_offset = e.phy_offset)
ORDER BY e.phy_offset, e.file_name, e.position
"""

#: Expected keys (the rows of :data:`EXPECTED_KEYS_VIEW`) with no entry of that
#: ``phy_offset`` and ``key_hash`` (missing from the index).
CHECK_MISSING_SQL = f"""
SELECT x.physical_offset, x.key, x.key_hash
FROM {EXPECTED_KEYS_VIEW} x
WHERE NOT EXISTS (
  SELECT 1 FROM entries e WHERE e.phy_offset = x.physical_offset AND e.key_hash = x.key_hash
)
ORDER BY x.physical_offset, x.key
"""

#: What the log holds: messages, indexable messages, first offset, end offset.
LOG_FACTS_SQL = """
SELECT count(*), count(*) FILTER (WHERE (sys_flag & 12) <> 12),
       min(physical_offset), max(physical_offset + total_size) FROM messages
"""


def log_check_figures(
    facts: Sequence[Any],
    count: Callable[[str], int],
    first: Callable[[str], list[dict[str, Any]]],
) -> dict[str, Any]:
    """The check's figures, the same keys whichever engine ran the statements.

    ``facts`` is the row of :data:`LOG_FACTS_SQL`; ``count(sql)`` counts a statement's
    rows and ``first(sql)`` returns its first rows as dicts, in the engine at hand.
    """
    return {
        "messages": int(facts[0]),
        "indexable_messages": int(facts[1]),
        "log_begin_offset": facts[2],
        "log_end_offset": facts[3],
        "entries": count("SELECT 1 FROM entries"),
        "expected_keys": count(f"SELECT 1 FROM {EXPECTED_KEYS_VIEW}"),
        "dangling": count(CHECK_DANGLING_SQL),
        "missing": count(CHECK_MISSING_SQL),
        "dangling_examples": first(CHECK_DANGLING_SQL),
        "missing_examples": first(CHECK_MISSING_SQL),
    }
