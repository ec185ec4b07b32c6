"""The tiered index layout, public: the dtypes and sizes of
:mod:`rmqarrow.tiered.layout.binary` and the folder and file names of
:mod:`rmqarrow.tiered.layout.naming` (numpy only, below :mod:`rmqarrow.format.detect`).

Converters (Arrow tables, Parquet import) build and read both file forms with these.
"""

from __future__ import annotations

from rmqarrow.tiered.layout.binary import (
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
from rmqarrow.tiered.layout.naming import (
    COMPACTING_DIR_NAME,
    INDEX_TOPIC,
    LOCAL_DIR_NAME,
    parse_segment_name,
    segment_dir,
    segment_file_name,
)

__all__ = [
    "BEGIN_MAGIC",
    "COMPACTING_DIR_NAME",
    "COMPACT_ITEM_DTYPE",
    "COMPACT_ITEM_SIZE",
    "COMPACT_SLOT_DTYPE",
    "END_MAGIC",
    "HEADER_DTYPE",
    "HEADER_SIZE",
    "INDEX_TOPIC",
    "ITEM_DTYPE",
    "ITEM_SIZE",
    "LOCAL_DIR_NAME",
    "SLOT_DTYPE",
    "SLOT_SIZE",
    "items_position",
    "parse_segment_name",
    "segment_dir",
    "segment_file_name",
    "unsealed_size",
]
