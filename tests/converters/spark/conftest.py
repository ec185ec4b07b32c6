"""Spark test helpers; the shared ``spark`` session fixture is in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def make_dataset(tmp_path: Path) -> Callable[..., Path]:
    """Write a store's three tables as a Parquet dataset (files/, slots/, entries/)."""

    def write(store_dir: Path, hash_slot_num: int, index_num: int) -> Path:
        import pyarrow.parquet as pq
        from rmqarrow.converters.arrow.tables import store_tables

        out = tmp_path / f"dataset-{store_dir.name}"
        tables = store_tables(store_dir, hash_slot_num, index_num)
        for name in ("files", "slots", "entries"):
            (out / name).mkdir(parents=True)
            pq.write_table(getattr(tables, name), out / name / "part-0.parquet")
        return out

    return write
