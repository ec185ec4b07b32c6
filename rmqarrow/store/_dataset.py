"""Exported Parquet datasets opened by :func:`rmqarrow.open` (of index files or tiered ones).

A dataset has no native files to walk, so lookups run in SQL (DuckDB unless Spark is asked
for) and answer exactly as the native lookup over the exported files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow._progress import ProgressCallback
from rmqarrow.errors import DatasetError, UsageError
from rmqarrow.format.queries import note_spaced_keys
from rmqarrow.store._queries import ItemQueries, OffsetQueries, as_queries

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyspark.sql import SparkSession

__all__ = ["DatasetCheck", "DatasetStore", "TieredDatasetStore"]


@dataclass(frozen=True)
class DatasetCheck:
    """The result of :meth:`DatasetStore.check`: the parts against the manifest."""

    dataset: Path
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": str(self.dataset), "ok": self.ok, "problems": list(self.problems)}


def _sql_engine(engine: str | None) -> str:
    name = engine or "duckdb"
    if name == "native":
        raise UsageError(
            "a dataset holds no index files for the native engine: use engine="
            "'duckdb' or 'spark', or import_files() and open the files"
        )
    return name


class DatasetStore(OffsetQueries):
    """An exported dataset of ``IndexFile`` s (``files``, ``slots``, ``entries``)."""

    format = "index"
    tables = ("files", "slots", "entries", "messages")

    def answers(
        self, queries: Sequence[Any], *, engine: str | None = None, master: str | None = None
    ) -> list[list[int]]:
        from rmqarrow.engines import answer_with_engine

        self._check_open()
        qs = as_queries(queries)
        answers = answer_with_engine(_sql_engine(engine), self.path, qs, master=master)
        note_spaced_keys(qs, answers)
        return answers

    def scan(
        self,
        table: str,
        *,
        columns: list[str] | None = None,
        filter: pads.Expression | None = None,
    ) -> pa.RecordBatchReader:
        from rmqarrow.converters.parquet.dataset import open_dataset

        self._check_open()
        self._check_table(table, columns)
        return open_dataset(self.path, table).scanner(columns=columns, filter=filter).to_reader()

    def to_duckdb(self, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
        from rmqarrow.converters.duckdb.sql import connect

        self._check_open()
        return connect(self.path, con=con)

    def to_spark(self, spark: SparkSession | None = None) -> SparkSession:
        from rmqarrow.converters.spark.session import get_spark
        from rmqarrow.converters.spark.tables import register_tables

        self._check_open()
        session = spark if spark is not None else get_spark()
        register_tables(session, self.path)
        return session

    def import_files(
        self,
        out_dir: str | os.PathLike[str],
        *,
        trust: bool = False,
        progress: ProgressCallback | None = None,
        wait: bool | float = False,
        force: bool = False,
        **options: Any,
    ) -> list[Path]:
        """Byte-identical index files under ``out_dir`` (never replacing one); a store a
        RocketMQ broker is running on is refused (``force``: see :func:`rmqarrow.build`)."""
        from rmqarrow.converters.parquet.importer import import_dataset

        self._check_open()
        if options:
            raise UsageError(f"unknown import options {sorted(options)}")
        return import_dataset(
            self.path, out_dir, progress=progress, trust=trust, wait=wait, force=force
        )

    def convert_to_delta(self, *, wait: bool | float = False) -> bool:
        """Make this dataset's tables Delta tables in place (the parts committed as they
        are, the manifest's record pinned, ``_rmqarrow.json`` deleted last; killed, the
        next call finishes it); False when they already are
        (:func:`rmqarrow.converters.parquet.to_delta.convert_to_delta`)."""
        from rmqarrow.converters.parquet.to_delta import convert_to_delta

        self._check_open()
        return convert_to_delta(self.path, wait=wait)

    def vacuum(
        self,
        retention_hours: int | None = None,
        *,
        dry_run: bool = False,
        wait: bool | float = False,
    ) -> dict[str, list[str]]:
        """Delete the parts of this dataset of Delta tables that no run within
        ``retention_hours`` (None: a week) reads; returns them by table
        (:func:`rmqarrow.converters.parquet.to_delta.vacuum_dataset`)."""
        from rmqarrow.converters.parquet.to_delta import vacuum_dataset

        self._check_open()
        return vacuum_dataset(self.path, retention_hours, dry_run=dry_run, wait=wait)

    def check(self, *, full: bool = False) -> DatasetCheck:
        """The parts against the manifest (names, sizes, footers; ``full``: checksums)."""
        from rmqarrow.converters.parquet.manifest import check_parts, read_manifest

        self._check_open()
        try:
            check_parts(self.path, read_manifest(self.path), full=full)
        except DatasetError as exc:
            return DatasetCheck(self.path, [str(exc)])
        return DatasetCheck(self.path)

    def info(self) -> dict[str, Any]:
        """The dataset's manifest (source, geometry, row counts, parts)."""
        from rmqarrow.converters.parquet.manifest import read_manifest

        self._check_open()
        return read_manifest(self.path)


class TieredDatasetStore(ItemQueries):
    """An exported dataset of tiered files (``tiered_files``, ``tiered_slots``,
    ``tiered_items``)."""

    format = "tiered"
    tables = ("tiered_files", "tiered_slots", "tiered_items")

    def answers(
        self,
        queries: Sequence[tuple[Any, ...]],
        *,
        engine: str | None = None,
        exact: bool = False,
        master: str | None = None,
    ) -> list[Any]:
        from rmqarrow.engines import answer_with_engine

        self._check_open()
        return answer_with_engine(
            _sql_engine(engine), self.path, list(queries), fmt="tiered", exact=exact, master=master
        )

    def scan(
        self,
        table: str,
        *,
        columns: list[str] | None = None,
        filter: pads.Expression | None = None,
    ) -> pa.RecordBatchReader:
        import pyarrow.dataset as pads

        from rmqarrow.converters.parquet.tiered_import import read_tiered_dataset

        self._check_open()
        self._check_table(table, columns)
        tables = dict(zip(self.tables, read_tiered_dataset(self.path), strict=True))
        return pads.dataset(tables[table]).scanner(columns=columns, filter=filter).to_reader()

    def import_files(
        self,
        out_dir: str | os.PathLike[str],
        *,
        wait: bool | float = False,
        force: bool = False,
        **options: Any,
    ) -> list[Path]:
        """Byte-identical tiered files under ``out_dir`` (``force``: see
        :meth:`DatasetStore.import_files`)."""
        from rmqarrow.converters.parquet.tiered_import import import_tiered

        self._check_open()
        if options:
            raise UsageError(f"unknown import options {sorted(options)}")
        return import_tiered(self.path, out_dir, wait=wait, force=force)

    def info(self) -> dict[str, Any]:
        from rmqarrow.converters.parquet.tiered_import import read_tiered_manifest

        self._check_open()
        return read_tiered_manifest(self.path)
