"""Tiered index files as Arrow tables (:mod:`.tables`: the header, slots and items of
each file, byte for byte) and the lookup over them both SQL engines run
(:mod:`.lookup`: RocketMQ's walk as relations, answers assembled as the native store
merges them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.tiered.arrow.lookup import (
        TIERED_LOOKUP_SQL,
        LookupInput,
        assemble,
        lookup_relations,
    )
    from rmqarrow.tiered.arrow.tables import TieredTables, file_bytes, tiered_tables

__all__ = [
    "TIERED_LOOKUP_SQL",
    "LookupInput",
    "TieredTables",
    "assemble",
    "file_bytes",
    "lookup_relations",
    "tiered_tables",
]

# names load when first used, as pyarrow does
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "TIERED_LOOKUP_SQL": "lookup",
        "LookupInput": "lookup",
        "TieredTables": "tables",
        "assemble": "lookup",
        "file_bytes": "tables",
        "lookup_relations": "lookup",
        "tiered_tables": "tables",
    },
)
