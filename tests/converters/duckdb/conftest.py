"""Fixtures for the DuckDB tests: Parquet datasets written from stores."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rmqarrow.converters.arrow.tables import IndexTables, store_tables

DatasetMaker = Callable[..., Path]


def write_dataset(tables: IndexTables, out: Path, parts: int = 2) -> Path:
    """A dataset in the exporter's layout (files/, slots/, entries/), several files a table."""
    for name in ("files", "slots", "entries"):
        table: pa.Table = getattr(tables, name)
        directory = out / name
        directory.mkdir(parents=True)
        step = max(1, -(-table.num_rows // parts))
        for i, start in enumerate(range(0, max(table.num_rows, 1), step)):
            pq.write_table(table.slice(start, step), directory / f"part-{i:03d}.parquet")
    return out


@pytest.fixture(params=["export", "mixed"])
def make_dataset(request: pytest.FixtureRequest, tmp_path: Path) -> DatasetMaker:
    """``make_dataset(store_dir, hash_slot_num, index_num)`` -> a dataset directory.

    ``export``: written by :func:`rmqarrow.converters.parquet.export.export_store` (one Parquet
    file per
    index file: DuckDB reads file ranks as constants); ``mixed``: parts that each hold
    rows of several index files (the generic path, joining names to ranks).
    """
    counter = iter(range(1_000_000))

    def make(
        store_dir: Path, hash_slot_num: int | None = None, index_num: int | None = None
    ) -> Path:
        out = tmp_path / f"dataset{next(counter)}"
        if request.param == "export":
            from rmqarrow.converters.parquet.export import export_store

            export_store(store_dir, out, hash_slot_num=hash_slot_num, index_num=index_num)
            return out
        return write_dataset(store_tables(store_dir, hash_slot_num, index_num), out)

    return make


_SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name the artifacts a test of this run left for a human (the browser screenshot)."""
    folder = Path(__file__).resolve().parents[3] / "build" / "test-artifacts"
    fresh = sorted(
        p for p in folder.glob("*") if p.is_file() and p.stat().st_mtime >= _SESSION_START
    )
    if fresh:
        terminalreporter.write_sep("-", "test artifacts")
        for p in fresh:
            terminalreporter.write_line(str(p))
