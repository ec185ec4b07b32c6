"""The tiered index byte layout, public: the dtypes and sizes of
:mod:`rmqarrow.format.tiered_layout`.

Converters (Arrow tables, Parquet import) build and read both file forms with these.
"""

from __future__ import annotations

from rmqarrow.format.tiered_layout import (
    BEGIN_MAGIC,
    COMPACT_ITEM_DTYPE,
    COMPACT_ITEM_SIZE,
    COMPACT_SLOT_DTYPE,
    END_MAGIC,
    HEADER_DTYPE,
    HEADER_SIZE,
    ITEM_DTYPE,
    ITEM_SIZE,
    SLOT_DTYPE,
    SLOT_SIZE,
    items_position,
    unsealed_size,
)

__all__ = [
    "BEGIN_MAGIC",
    "COMPACT_ITEM_DTYPE",
    "COMPACT_ITEM_SIZE",
    "COMPACT_SLOT_DTYPE",
    "END_MAGIC",
    "HEADER_DTYPE",
    "HEADER_SIZE",
    "ITEM_DTYPE",
    "ITEM_SIZE",
    "SLOT_DTYPE",
    "SLOT_SIZE",
    "items_position",
    "unsealed_size",
]
