"""A dataset of tiered index files: :mod:`.export` writes the Arrow tables of
:mod:`rmqarrow.tiered.arrow` as Parquet (or Delta) with a manifest, and :mod:`.importer`
rebuilds every file from it byte for byte."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.tiered.parquet.export import (
        TIERED_FORMAT,
        TIERED_TABLES,
        export_tiered,
        write_tiered_dataset,
    )
    from rmqarrow.tiered.parquet.importer import (
        import_tiered,
        read_tiered_dataset,
        read_tiered_manifest,
        tiered_source_tables,
    )

__all__ = [
    "TIERED_FORMAT",
    "TIERED_TABLES",
    "export_tiered",
    "import_tiered",
    "read_tiered_dataset",
    "read_tiered_manifest",
    "tiered_source_tables",
    "write_tiered_dataset",
]

# names load when first used, as pyarrow.parquet does
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "TIERED_FORMAT": "export",
        "TIERED_TABLES": "export",
        "export_tiered": "export",
        "import_tiered": "importer",
        "read_tiered_dataset": "importer",
        "read_tiered_manifest": "importer",
        "tiered_source_tables": "importer",
        "write_tiered_dataset": "export",
    },
)
