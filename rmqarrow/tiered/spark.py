"""Spark SQL lookups on RocketMQ tiered index files (RIP-65), both forms.

The same relations and SQL as the DuckDB engine
(:mod:`rmqarrow.tiered.arrow.lookup`), registered as temporary views of the
session: a tiered file, folder or tiered Parquet dataset answers with RocketMQ's rules of
each form (or exactly), equal to :func:`rmqarrow.tiered.answer_queries`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rmqarrow.converters.spark.runner import run_arrow
from rmqarrow.converters.spark.session import get_spark
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.tiered import TieredAnswer
from rmqarrow.tiered.arrow.lookup import TIERED_LOOKUP_SQL, assemble, lookup_relations
from rmqarrow.tiered.parquet.importer import tiered_source_tables

__all__ = ["answer_queries"]


def answer_queries(
    source: str | os.PathLike[str],
    queries: Sequence[Sequence[object]],
    *,
    exact: bool = False,
    master: str | None = None,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> list[TieredAnswer]:
    """Answer ``(topic, key, max_count, begin, end)`` queries with Spark SQL (``geometry``
    or ``hash_slot_num``/``index_num``, not both forms: as the native engine)."""
    tables, store = tiered_source_tables(
        Path(source), geometry_hint(geometry, hash_slot_num, index_num)
    )
    inp = lookup_relations(tables, queries, exact=exact, store=store)
    rows = run_arrow(get_spark(master), TIERED_LOOKUP_SQL, inputs=inp.relations)
    return assemble(inp, rows)
