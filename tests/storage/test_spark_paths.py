"""On Spark, a dataset at ``g/ds[12]`` is read as itself, never as the
Hadoop glob that matches the sibling ``g/ds1``; a dataset whose parts differ from its
manifest is refused."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from legacy_dataset import legacy_layout
from rmqarrow.converters.parquet.export import export_store
from storage.storage_helpers import GEO, INDEX, SLOTS, cli, records, write_csv

from rmqarrow.errors import DatasetError
from rmqarrow.format.queries import Query
from rmqarrow.index.service import answer_queries

pytestmark = pytest.mark.spark

QUERIES = [Query(f"T#k{k}", 1000) for k in range(7)]


def test_glob_characters_and_part_check_on_spark(spark: Any, tmp_path: Path) -> None:
    from rmqarrow.converters.spark import sql as spark_sql

    stores = {}
    for name, n in (("small", 20), ("big", 120)):
        stores[name] = tmp_path / name
        cli(
            "build", stores[name], "--from", write_csv(tmp_path / f"{name}.csv", records(n)), *GEO
        ).check_returncode()
    g = tmp_path / "g"
    g.mkdir()
    export_store(stores["small"], g / "ds1", hash_slot_num=SLOTS, index_num=INDEX)
    # the older layout: a part copied in beside the others is refused (a Delta table's
    # readers read the files its log lists, whatever else the folder holds)
    export_store(stores["big"], g / "ds[12] {a,b}", hash_slot_num=SLOTS, index_num=INDEX)
    legacy_layout(g / "ds[12] {a,b}")
    want = answer_queries(stores["big"], QUERIES, hash_slot_num=SLOTS, index_num=INDEX)
    assert spark_sql.answer_queries(g / "ds[12] {a,b}", QUERIES) == want
    shutil.copy(
        g / "ds1" / "entries" / "part-00000.parquet",
        g / "ds[12] {a,b}" / "entries" / "part-09999.parquet",
    )
    with pytest.raises(DatasetError, match="not in the manifest"):
        spark_sql.answer_queries(g / "ds[12] {a,b}", QUERIES)
