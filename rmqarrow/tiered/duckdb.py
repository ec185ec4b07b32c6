"""DuckDB lookups on RocketMQ tiered index files (RIP-65), both forms, with RocketMQ's
answers (or exact ones).

:func:`answer_queries` reads a tiered file, a folder of them, or a tiered Parquet dataset
(:mod:`rmqarrow.tiered.parquet.export`), registers the relations of
:mod:`rmqarrow.tiered.arrow.lookup` on an in-memory DuckDB connection and runs
its SQL: local files answer along their ``next`` chains (512 steps, ``maxCount + 1``),
uploaded ones from the first 1,024 items of the slot (``maxCount``).  Answers equal
:func:`rmqarrow.tiered.answer_queries` (tests check every golden query, both forms).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import duckdb
import pyarrow as pa

from rmqarrow._memory import duckdb_settings
from rmqarrow.converters.duckdb.runner import run_arrow
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.tiered import TieredAnswer
from rmqarrow.tiered.arrow.lookup import TIERED_LOOKUP_SQL, assemble, lookup_relations
from rmqarrow.tiered.parquet.importer import tiered_source_tables

__all__ = ["answer_queries", "lookup_rows"]


def lookup_rows(con: duckdb.DuckDBPyConnection, relations: dict[str, pa.Table]) -> pa.Table:
    """Register ``relations`` on ``con`` and run the lookup SQL."""
    return run_arrow(con, TIERED_LOOKUP_SQL, inputs=relations)


def answer_queries(
    source: str | os.PathLike[str],
    queries: Sequence[Sequence[object]],
    *,
    exact: bool = False,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> list[TieredAnswer]:
    """Answer ``(topic, key, max_count, begin, end)`` queries in DuckDB; per query the
    items, or the :class:`~rmqarrow.errors.TieredReadError` RocketMQ's query fails with.
    ``geometry`` or ``hash_slot_num``/``index_num`` (not both forms): as the native engine."""
    tables, store = tiered_source_tables(source, geometry_hint(geometry, hash_slot_num, index_num))
    inp = lookup_relations(tables, queries, exact=exact, store=store)
    with duckdb.connect(config=duckdb_settings()) as con:  # fits ulimit -v
        rows = lookup_rows(con, inp.relations)
    return assemble(inp, rows)
