"""The views have exactly the converters' names and types, over Parquet and native files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from golden_data import golden_set
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.converters.spark.tables import register_tables

from rmqarrow.errors import DatasetError, StoreNotFoundError
from rmqarrow.format.detect import require_index_source

pytestmark = pytest.mark.spark

_SPARK = {"string": "string", "int32": "int", "int64": "bigint"}


def _expected(table: str) -> list[tuple[str, str]]:
    return [(f.name, _SPARK[str(f.type)]) for f in SCHEMAS[table]]


@pytest.mark.parametrize("kind", ["dataset", "store"])
def test_views_have_the_schema(spark: Any, make_dataset: Callable[..., Path], kind: str) -> None:
    g = golden_set("basic")
    target = (
        make_dataset(g.store_dir, g.hash_slot_num, g.index_num)
        if kind == "dataset"
        else g.store_dir
    )
    assert (
        register_tables(spark, target, hash_slot_num=g.hash_slot_num, index_num=g.index_num) == kind
    )
    for table in SCHEMAS:
        got = [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema.fields]
        assert got == _expected(table)


def test_index_source_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        require_index_source(tmp_path / "missing")
    with pytest.raises(DatasetError, match="empty"):
        require_index_source(tmp_path)
    (tmp_path / "files").mkdir()
    with pytest.raises(DatasetError, match="missing entries, slots"):
        require_index_source(tmp_path)
