"""Delta Lake tables for exported datasets, committed through delta-rs (``deltalake``).

rmqarrow writes every Parquet part itself (its sort order, encodings and bloom filters
are the point of the layout), so nothing here writes data: it commits files that exist.

- :mod:`.layout`: whether a dataset is a Delta one (its folders alone);
- :mod:`.actions`: the add action of a part, its statistics read from the Parquet footer;
- :mod:`.commit`: one table's commit (create, append, replace), on exactly the version it
  was planned against, or refused;
- :mod:`.run`: a run across the tables of a dataset, pinned by the commit that finishes
  it, and the snapshot every reader opens through that pin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.converters.delta.actions import add_action, file_stats
    from rmqarrow.converters.delta.commit import commit_table, table_version
    from rmqarrow.converters.delta.layout import is_delta_dataset
    from rmqarrow.converters.delta.run import (
        Snapshot,
        TableChange,
        already_committed,
        commit_run,
        converge,
        open_snapshot,
        vacuum,
    )

__all__ = [
    "Snapshot",
    "TableChange",
    "add_action",
    "already_committed",
    "commit_run",
    "commit_table",
    "converge",
    "file_stats",
    "is_delta_dataset",
    "open_snapshot",
    "table_version",
    "vacuum",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "Snapshot": "run",
        "TableChange": "run",
        "add_action": "actions",
        "already_committed": "run",
        "commit_run": "run",
        "commit_table": "commit",
        "converge": "run",
        "file_stats": "actions",
        "is_delta_dataset": "layout",
        "open_snapshot": "run",
        "table_version": "commit",
        "vacuum": "run",
    },
)
